/* A vendor's v6.1 mask that also allows a bit of its own, in the middle. */
bool trace_module_has_bad_taint(struct module *mod)
{
	return mod->taints & ~((1 << TAINT_OOT_MODULE) | (1 << TAINT_CRAP) |
			       (1 << TAINT_UNSIGNED_MODULE) |
			       (1 << TAINT_AUX) |
			       (1 << TAINT_TEST));
}
