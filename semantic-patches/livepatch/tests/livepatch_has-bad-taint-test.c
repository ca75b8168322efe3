/* trace_module_has_bad_taint() v6.0-v6.2 (Debian's 6.1): TAINT_TEST added. */
bool trace_module_has_bad_taint(struct module *mod)
{
	return mod->taints & ~((1 << TAINT_OOT_MODULE) | (1 << TAINT_CRAP) |
			       (1 << TAINT_UNSIGNED_MODULE) |
			       (1 << TAINT_TEST));
}
