// SPDX-License-Identifier: GPL-2.0
/*
 * tst - a test module, as a kunit suite built as a module is one
 *
 * MODULE_INFO(test, "Y") makes the loader taint the kernel with
 * TAINT_TEST ('N', 2852ca7fba9f, v6.0), and a kernel that has TAINT_TEST
 * without upstream 54be5509422e refuses the trace events of a module so
 * tainted. Like utt, it has one trace event, tst:tst_fire, emitted by
 * writing an integer to /sys/module/tst/parameters/fire, so the test can
 * tell the two apart: with the fix the write puts a tst_fire line in the
 * trace, without it events/tst/ never appears. A kernel without
 * TAINT_TEST (before v6.0) ignores the tag: no N, and its events stay.
 */
#include <linux/kernel.h>
#include <linux/module.h>
#include <linux/moduleparam.h>

#define CREATE_TRACE_POINTS
#include "tst_trace.h"

static int tst_fire_set(const char *val, const struct kernel_param *kp)
{
	int value;
	int ret;

	ret = kstrtoint(val, 0, &value);
	if (ret)
		return ret;

	trace_tst_fire(value);
	return 0;
}

/* an action, not a value: nothing to read back */
static const struct kernel_param_ops tst_fire_ops = {
	.set = tst_fire_set,
};

module_param_cb(fire, &tst_fire_ops, NULL, 0200);
MODULE_PARM_DESC(fire, "write an integer to emit the tst_fire trace event");

MODULE_DESCRIPTION("taintport test module: tainted N, one trace event fired from a parameter");
MODULE_LICENSE("GPL");
MODULE_INFO(test, "Y");
