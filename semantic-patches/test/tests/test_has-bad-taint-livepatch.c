/* v6.3 (Debian's 6.12, 7.2, 7.3) with TAINT_TEST taken out: the new term goes last. */
bool trace_module_has_bad_taint(struct module *mod)
{
	return mod->taints & ~((1 << TAINT_OOT_MODULE) | (1 << TAINT_CRAP) |
				(1 << TAINT_UNSIGNED_MODULE) |
				(1 << TAINT_LIVEPATCH));
}
