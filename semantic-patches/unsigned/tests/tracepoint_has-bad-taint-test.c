/* trace_module_has_bad_taint() v6.0: TAINT_TEST on a line of its own. */
bool trace_module_has_bad_taint(struct module *mod)
{
	return mod->taints & ~((1 << TAINT_OOT_MODULE) | (1 << TAINT_CRAP) |
			       (1 << TAINT_TEST));
}
