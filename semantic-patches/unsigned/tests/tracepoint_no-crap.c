/* Negative: a mask without TAINT_CRAP is no shape the layer knows. */
bool trace_module_has_bad_taint(struct module *mod)
{
	return mod->taints & ~(1 << TAINT_OOT_MODULE);
}
