/* A vendor's comment inside the mask, above its last term. */
bool trace_module_has_bad_taint(struct module *mod)
{
	return mod->taints & ~((1 << TAINT_OOT_MODULE) | (1 << TAINT_CRAP) |
			       (1 << TAINT_UNSIGNED_MODULE) |
			       /* vendor: kunit modules are fine */
			       (1 << TAINT_TEST));
}
