/* Negative: TAINT_FORCED_MODULE only in try_to_force_load() and at a
 * sig_ok test without the verification notice. Nothing is the signature
 * check site the layer knows, so it must refuse rather than guess. */
static int try_to_force_load(struct module *mod, const char *reason)
{
	if (!test_taint(TAINT_FORCED_MODULE))
		pr_warn("%s: %s: kernel tainted.\n", mod->name, reason);
	add_taint_module(mod, TAINT_FORCED_MODULE, LOCKDEP_NOW_UNRELIABLE);
	return 0;
}

static int load_module(struct load_info *info, const char __user *uargs,
		       int flags)
{
	if (!mod->sig_ok)
		add_taint_module(mod, TAINT_FORCED_MODULE, LOCKDEP_STILL_OK);
	return 0;
}
