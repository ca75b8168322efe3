/* kernel/tracepoint.c v3.10 without 45ab2813: the mask inline (a shape the
 * semantic patch knows; no tree of this age has TAINT_LIVEPATCH). */
static int tracepoint_module_coming(struct module *mod)
{
	int ret = 0;

	/*
	 * We skip modules that taint the kernel, especially those with different
	 * module headers (for forced load), to make sure we don't cause a crash.
	 * Staging and out-of-tree GPL modules are fine.
	 */
	if (mod->taints & ~((1 << TAINT_OOT_MODULE) | (1 << TAINT_CRAP)))
		return 0;
	return ret;
}
