// SPDX-License-Identifier: GPL-2.0
/*
 * stg - a staging module, as drivers/staging/ builds them
 *
 * MODULE_INFO(staging, "Y") (modpost adds it to every module under
 * drivers/staging) makes the loader taint the kernel with TAINT_CRAP
 * ('C'), which tracing has allowed since trace_module_has_bad_taint()
 * exists: its one trace event, stg:stg_fire, emitted by writing an integer
 * to /sys/module/stg/parameters/fire, exists on every kernel. The test
 * shows the allow-list's oldest entries hold while it checks the new ones.
 */
#include <linux/kernel.h>
#include <linux/module.h>
#include <linux/moduleparam.h>

#define CREATE_TRACE_POINTS
#include "stg_trace.h"

static int stg_fire_set(const char *val, const struct kernel_param *kp)
{
	int value;
	int ret;

	ret = kstrtoint(val, 0, &value);
	if (ret)
		return ret;

	trace_stg_fire(value);
	return 0;
}

/* an action, not a value: nothing to read back */
static const struct kernel_param_ops stg_fire_ops = {
	.set = stg_fire_set,
};

module_param_cb(fire, &stg_fire_ops, NULL, 0200);
MODULE_PARM_DESC(fire, "write an integer to emit the stg_fire trace event");

MODULE_DESCRIPTION("taintport staging module: tainted C, one trace event fired from a parameter");
MODULE_LICENSE("GPL");
MODULE_INFO(staging, "Y");
