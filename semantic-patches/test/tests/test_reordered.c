/* A vendor's mask, terms in another order and one of its own. */
bool trace_module_has_bad_taint(struct module *mod)
{
	return mod->taints & ~((1 << TAINT_CRAP) | (1 << TAINT_OOT_MODULE) |
			       (1 << TAINT_AUX) |
			       (1 << TAINT_UNSIGNED_MODULE));
}
