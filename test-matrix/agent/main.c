// SPDX-License-Identifier: GPL-2.0
/*
 * taintport-agent - load the test modules in the test guest, print KTAP
 *
 * Runs from the initramfs (dracut module 50taintport) of a throw-away
 * QEMU guest. After the guard, one KTAP subtest per row of subtests[]
 * (checks.c, generated from the fixes' data): each loads its module as
 * its data says and runs its tests in their order; the last one turns
 * signature enforcement on and repeats some of the loads. Then it ends
 * the VM. test-matrix/README.md is the contract.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/klog.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "agent.h"
#include "parse.h"

/* include/linux/syslog.h, not exported to user space */
#define SYSLOG_ACTION_CONSOLE_LEVEL	8

/* the most subtests the data may give */
#define MAX_SUBTESTS	16

static struct mode modes[MAX_SUBTESTS];

/* whether the tests from first on about the same load expect it refused */
static bool refused_load(const struct subtest *sub, size_t first)
{
	size_t i;

	for (i = first; i < sub->nr_tests &&
	     sub->tests[i].load == sub->tests[first].load; i++)
		if (refusal_kind(sub->tests[i].kind))
			return true;
	return false;
}

/* a refused load is only tried while enforcement is on */
static void begin_load(struct load *l, const struct subtest *sub, size_t first,
		       int mode, int value, bool enforcing)
{
	bool refused = refused_load(sub, first);

	memset(l, 0, sizeof(*l));
	l->subtest = sub->name;
	l->mode = &modes[mode];
	l->value = value;
	if (refused && !enforcing)
		return;
	if (refused)
		l->tainted_before_known = kernel_tainted(&l->tainted_before);
	load(l);
}

/* nothing of a load outlives its tests, refused or not */
static void end_load(struct load *l, const struct subtest *sub, size_t first)
{
	if (l->loaded && refused_load(sub, first) && !unload(l))
		agent_error("%s: delete_module(%s): %s", l->subtest,
			    l->mode->module->name, strerror(errno));
}

static void run_subtest(size_t index, bool *enforcing)
{
	const struct subtest *sub = &subtests[index];
	static struct load l;
	size_t first = 0;
	int current = -1;
	size_t i;

	report_subtest_start(sub->name, sub->nr_tests);
	for (i = 0; i < sub->nr_tests; i++) {
		const struct test *t = &sub->tests[i];
		int mode = t->load >= 0 ? t->load : (int)index;

		if (t->kind == KIND_SIG_ENFORCE) {
			*enforcing = enforce_signatures();
		} else if (mode != current) {
			if (current >= 0)
				end_load(&l, sub, first);
			first = i;
			current = mode;
			begin_load(&l, sub, first, mode, 1000 + (int)index, *enforcing);
		}
		run_test(&l, t, *enforcing);
	}
	if (current >= 0)
		end_load(&l, sub, first);
	report_subtest_end();
}

/* the harness's self-test of broken runs; returns unless it ends the run */
static void inject_fault(enum fault fault, unsigned int tests)
{
	switch (fault) {
	case FAULT_HANG:
		for (;;)
			pause();
	case FAULT_PANIC:
		fflush(stdout);
		if (write_text("/proc/sysrq-trigger", "c"))
			agent_error("sysrq-trigger: %s", strerror(errno));
		printf("# taintport-agent: end status=%d\n", status);
		vm_end(status);
	case FAULT_TRUNCATE:
		report_truncate_after(tests / 2);
		break;
	case FAULT_UNKNOWN:
		agent_error("unknown taintport.fault=");
		break;
	case FAULT_NONE:
		break;
	}
}

/* taintport.signed=<name>, "" when none; the distribution's binary */
static void signed_module(const char *cmdline, char *name, size_t size)
{
	if (!cmdline_signed_module(cmdline, name, size)) {
		agent_error("taintport.signed= is not a module name, using our signed modules");
		name[0] = '\0';
	} else if (name[0]) {
		report_msg("taintport-agent: signed loads use /taintport/%s.ko, signed by the distribution",
			   name);
	}
}

/* the letter the tree prints for the taint the command line may rename */
static void cmdline_taint_letter(const char *cmdline)
{
	size_t i;

	for (i = 0; i < nr_taints; i++) {
		if (!taints[i].cmdline)
			continue;
		unsigned_letter = cmdline_letter(cmdline, taints[i].cmdline,
						 taints[i].letter);
		if (!unsigned_letter) {
			agent_error("%s= is not one letter A-Z, using %c",
				    taints[i].cmdline, taints[i].letter);
			unsigned_letter = taints[i].letter;
		}
	}
}

/*
 * uname -v: whose build of the release this is (Debian's says "Debian
 * 6.1.176-1"), which the harness records with the cell
 */
static void print_kernel(void)
{
	struct utsname uts;

	report_msg("taintport-agent: kernel %s, unsigned letter %c", KRELEASE,
		   unsigned_letter);
	if (uname(&uts))
		agent_error("uname: %s", strerror(errno));
	else
		report_msg("taintport-agent: uname -v: %s", uts.version);
}

int main(void)
{
	static char cmdline[CMDLINE_SIZE];
	char signed_name[MODULE_NAME_SIZE];
	unsigned int tests = 0;
	bool enforcing = false;
	const char *why;
	size_t i;

	if (read_text("/proc/cmdline", cmdline, sizeof(cmdline)) < 0)
		why = "cannot read /proc/cmdline";
	else
		why = guard(cmdline);
	if (why) {
		fprintf(stderr, "taintport-agent: refusing to run: %s\n", why);
		return 3;
	}

	/* stdout is the serial console: every line out as soon as written */
	setvbuf(stdout, NULL, _IOLBF, 0);
	report_plan(nr_subtests);
	for (i = 0; i < nr_subtests; i++)
		tests += subtests[i].nr_tests;
	/*
	 * Keep kernel messages off the console so they cannot split a KTAP
	 * line; the agent reads them from /dev/kmsg instead. A panic still
	 * prints: panic() turns the console verbose again.
	 */
	if (klogctl(SYSLOG_ACTION_CONSOLE_LEVEL, NULL, 1))
		agent_error("console loglevel: %s", strerror(errno));
	inject_fault(cmdline_fault(cmdline), tests);
	if (nr_subtests > MAX_SUBTESTS) {
		agent_error("%zu subtests, room for %d", nr_subtests, MAX_SUBTESTS);
		vm_end(status);
	}

	signed_module(cmdline, signed_name, sizeof(signed_name));
	cmdline_taint_letter(cmdline);
	print_kernel();
	tracefs_setup();

	for (i = 0; i < nr_subtests; i++)
		mode_of(&modes[i], &subtests[i], signed_name);
	for (i = 0; i < nr_subtests; i++)
		run_subtest(i, &enforcing);

	if (report_count() != tests)
		agent_error("printed %u test results, planned %u", report_count(),
			    tests);
	printf("# taintport-agent: end status=%d\n", status);
	vm_end(status);
}
