/* The new term in a comment only: no code, so the fix is missing. */
bool trace_module_has_bad_taint(struct module *mod)
{
	return mod->taints & ~((1 << TAINT_OOT_MODULE) | (1 << TAINT_CRAP) |
			       (1 << TAINT_UNSIGNED_MODULE) |
			       (1 << TAINT_TEST)); /* | (1 << TAINT_LIVEPATCH): not yet */
}
