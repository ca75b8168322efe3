/* trace_module_has_bad_taint() v5.19: Debian's 6.1 with TAINT_TEST taken out. */
#ifdef CONFIG_MODULES
bool trace_module_has_bad_taint(struct module *mod)
{
	return mod->taints & ~((1 << TAINT_OOT_MODULE) | (1 << TAINT_CRAP) |
			       (1 << TAINT_UNSIGNED_MODULE));
}
#endif
