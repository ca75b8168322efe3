/* A vendor's mask with each continuation line starting with '|'. */
bool trace_module_has_bad_taint(struct module *mod)
{
	return mod->taints & ~((1 << TAINT_OOT_MODULE)
			       | (1 << TAINT_CRAP)
			       | (1 << TAINT_UNSIGNED_MODULE)
			       | (1 << TAINT_TEST));
}
