/* Negative: a sig_ok test whose notice is not the verification failure. */
static int load_module(struct load_info *info)
{
	if (!mod->sig_ok) {
		pr_notice_once("%s: something else entirely\n", mod->name);
		add_taint_module(mod, TAINT_FORCED_MODULE, LOCKDEP_STILL_OK);
	}
	return 0;
}
