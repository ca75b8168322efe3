/* A pre-3.15 tree as a maintainer may have it: comments and a blank line
 * inside the signature-check block, around the notice and the taint. */
static int load_module(struct load_info *info, const char __user *uargs,
		       int flags)
{
	struct module *mod;

#ifdef CONFIG_MODULE_SIG
	mod->sig_ok = info->sig_ok;
	if (!mod->sig_ok) {
		/* local: log once per boot */

		printk_once(KERN_NOTICE
			    "%s: module verification failed: signature and/or"
			    " required key missing - tainting kernel\n",
			    mod->name);
		/*
		 * Same taint as a forced load.
		 */

		add_taint_module(mod, TAINT_FORCED_MODULE, LOCKDEP_STILL_OK);
	}
#endif

	return do_init_module(mod);
}
