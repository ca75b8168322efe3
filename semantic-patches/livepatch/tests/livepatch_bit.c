/* A vendor's mask written with BIT(). */
bool trace_module_has_bad_taint(struct module *mod)
{
	return mod->taints & ~(BIT(TAINT_OOT_MODULE) | BIT(TAINT_CRAP) |
			       BIT(TAINT_UNSIGNED_MODULE) |
			       BIT(TAINT_TEST));
}
