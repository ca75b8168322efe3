// SPDX-License-Identifier: GPL-2.0
/*
 * utt - unsigned tracepoint test
 *
 * An out-of-tree module with one trace event, utt:utt_fire. Writing an
 * integer to /sys/module/utt/parameters/fire emits the event, so a test
 * can see whether the kernel kept the module's trace events after the
 * load tainted it (signed, unsigned or forced).
 *
 * The module has neither init nor exit function on purpose: a module
 * with an init but no exit cannot be unloaded, and one with neither can,
 * which is all the test needs between its load modes.
 */
#include <linux/kernel.h>
#include <linux/module.h>
#include <linux/moduleparam.h>

#define CREATE_TRACE_POINTS
#include "utt_trace.h"

static int utt_fire_set(const char *val, const struct kernel_param *kp)
{
	int value;
	int ret;

	ret = kstrtoint(val, 0, &value);
	if (ret)
		return ret;

	trace_utt_fire(value);
	return 0;
}

/*
 * Only .set: the parameter is an action, not a value, so there is
 * nothing to read back (sysfs answers a read with -EPERM).
 */
static const struct kernel_param_ops utt_fire_ops = {
	.set = utt_fire_set,
};

module_param_cb(fire, &utt_fire_ops, NULL, 0200);
MODULE_PARM_DESC(fire, "write an integer to emit the utt_fire trace event");

MODULE_DESCRIPTION("unsigned tracepoint test: one trace event fired from a parameter");
MODULE_LICENSE("GPL");
