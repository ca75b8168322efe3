/* trace_module_has_bad_taint() v6.3: TAINT_TEST and TAINT_LIVEPATCH. */
bool trace_module_has_bad_taint(struct module *mod)
{
	return mod->taints & ~((1 << TAINT_OOT_MODULE) | (1 << TAINT_CRAP) |
				(1 << TAINT_TEST) |
				(1 << TAINT_LIVEPATCH));
}
