/* A vendor's comment inside the mask; the term only in a comment is no term. */
bool trace_module_has_bad_taint(struct module *mod)
{
	return mod->taints & ~((1 << TAINT_OOT_MODULE) | (1 << TAINT_CRAP) |
			       /* vendor: signed or not, all the same */
			       (1 << TAINT_UNSIGNED_MODULE)); /* | (1 << TAINT_TEST): not yet */
}
