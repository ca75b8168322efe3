/* A vendor's pre-3.15 mask with its terms in another order. */
bool trace_module_has_bad_taint(struct module *mod)
{
	return mod->taints & ~((1 << TAINT_CRAP) | (1 << TAINT_OOT_MODULE));
}
