/* A comment and a blank line inside the function before the mask. */
bool trace_module_has_bad_taint(struct module *mod)
{
	/* taints tracing can live with */

	return mod->taints & ~((1 << TAINT_OOT_MODULE) | (1 << TAINT_CRAP) |
			       (1 << TAINT_UNSIGNED_MODULE) |
			       (1 << TAINT_TEST));
}
