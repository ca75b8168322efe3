/* trace_module_has_bad_taint() v3.15-v5.19 (Debian's 5.10): OOT | CRAP | UNSIGNED. */
#ifdef CONFIG_MODULES
bool trace_module_has_bad_taint(struct module *mod)
{
	return mod->taints & ~((1 << TAINT_OOT_MODULE) | (1 << TAINT_CRAP) |
			       (1 << TAINT_UNSIGNED_MODULE));
}
#endif
