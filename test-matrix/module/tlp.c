// SPDX-License-Identifier: GPL-2.0
/*
 * tlp - taintport livepatch test
 *
 * A real livepatch: it replaces cmdline_proc_show() (fs/proc/cmdline.c),
 * so that reading /proc/cmdline shows TLP_MARKER instead of the command
 * line, and fires this module's own trace event, tlp:tlp_fire, on every
 * such read. MODULE_INFO(livepatch, "Y") makes the loader taint the
 * kernel with TAINT_LIVEPATCH ('K'), and a kernel without upstream
 * e7bb66f79a7b refuses the trace events of a module so tainted. The test
 * can then tell the two apart: with the fix the read puts a tlp_fire line
 * in the trace, without it events/tlp/ never appears.
 *
 * cmdline_proc_show() is the function the kernel's own livepatch sample
 * patches: a static seq_file show routine that user space calls with a
 * plain read and that no kernel thread ever sleeps in, so the patch
 * transition finishes at once.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/atomic.h>
#include <linux/kernel.h>
#include <linux/livepatch.h>
#include <linux/module.h>
#include <linux/seq_file.h>

#define CREATE_TRACE_POINTS
#include "tlp_trace.h"

/* test-matrix/README.md: the agent compares /proc/cmdline with this line */
#define TLP_MARKER	"taintport-livepatch"

/* counts the reads, so that each tlp_fire line is told from the last */
static atomic_t tlp_calls = ATOMIC_INIT(0);

/* same prototype as cmdline_proc_show(): ftrace jumps here in its place */
static int tlp_cmdline_proc_show(struct seq_file *m, void *v)
{
	trace_tlp_fire(atomic_inc_return(&tlp_calls));
	seq_puts(m, TLP_MARKER "\n");
	return 0;
}

static struct klp_func tlp_funcs[] = {
	{
		.old_name = "cmdline_proc_show",
		.new_func = tlp_cmdline_proc_show,
	},
	{ }
};

static struct klp_object tlp_objs[] = {
	{
		/* no .name: the function lives in vmlinux, not in a module */
		.funcs = tlp_funcs,
	},
	{ }
};

static struct klp_patch tlp_patch = {
	.mod = THIS_MODULE,
	.objs = tlp_objs,
};

static int __init tlp_init(void)
{
	return klp_enable_patch(&tlp_patch);
}

/*
 * Nothing to undo here: user space disables the patch through
 * /sys/kernel/livepatch/tlp/enabled, and the livepatch core holds a
 * reference on this module until that transition has finished. The
 * function must exist all the same, or the module could never unload.
 */
static void __exit tlp_exit(void)
{
}

module_init(tlp_init);
module_exit(tlp_exit);
MODULE_DESCRIPTION("taintport livepatch test: /proc/cmdline shows a marker and fires tlp:tlp_fire");
MODULE_LICENSE("GPL");
MODULE_INFO(livepatch, "Y");
