/* kernel/tracepoint.c with 45ab2813 (v3.14, 3.10 stable): the mask in a function. */
#ifdef CONFIG_MODULES
bool trace_module_has_bad_taint(struct module *mod)
{
	return mod->taints & ~((1 << TAINT_OOT_MODULE) | (1 << TAINT_CRAP));
}

static int tracepoint_module_coming(struct module *mod)
{
	/*
	 * We skip modules that taint the kernel, especially those with different
	 * module headers (for forced load), to make sure we don't cause a crash.
	 * Staging and out-of-tree GPL modules are fine.
	 */
	if (trace_module_has_bad_taint(mod))
		return 0;
	return 0;
}
#endif
