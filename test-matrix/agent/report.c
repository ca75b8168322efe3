// SPDX-License-Identifier: GPL-2.0
/*
 * KTAP out (ktap.h, kept to this file: it holds the counters), the
 * agent's own errors, and the end of the VM.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/io.h>
#include <sys/reboot.h>
#include <unistd.h>

#include "agent.h"
#include "ktap.h"

/*
 * QEMU's isa-debug-exit as the host configures it (iobase=0xf4,
 * iosize=0x04): a write of n makes QEMU exit with (n << 1) | 1
 * (hw/misc/debugexit.c).
 */
#define DEBUG_EXIT_PORT		0xf4
#define DEBUG_EXIT_SIZE		4

int status;			/* 0 every check made, 1 internal error */
static unsigned int cut_at;	/* taintport.fault=truncate: results before the end */

/* one formatter for the three kinds of "# ..." line below */
static void print_msg(const char *head, const char *fmt, va_list args)
{
	char msg[1024];

	vsnprintf(msg, sizeof(msg), fmt, args);
	if (head)
		ktap_print_msg("%s: %s", head, msg);
	else
		ktap_print_msg("%s", msg);
}

void agent_error(const char *fmt, ...)
{
	va_list args;

	va_start(args, fmt);
	print_msg("error", fmt, args);
	va_end(args);
	status = 1;
}

/* "# <subtest>: ..." before the results that rest on what it says */
void diag(const struct load *l, const char *fmt, ...)
{
	va_list args;

	va_start(args, fmt);
	print_msg(l->subtest, fmt, args);
	va_end(args);
}

void report_msg(const char *fmt, ...)
{
	va_list args;

	va_start(args, fmt);
	print_msg(NULL, fmt, args);
	va_end(args);
}

/*
 * Ends the VM: isa-debug-exit when QEMU has it, otherwise reboot(2),
 * which QEMU's -no-reboot turns into an exit. Never returns on success.
 */
void vm_end(int n)
{
	fflush(stdout);
	if (!ioperm(DEBUG_EXIT_PORT, DEBUG_EXIT_SIZE, 1))
		outl(n, DEBUG_EXIT_PORT);
	reboot(RB_AUTOBOOT);
	ktap_print_msg("error: reboot: %s", strerror(errno));
	exit(EXIT_FAILURE);
}

/*
 * Every result goes through here, so the truncate fault can cut the
 * output after exactly half of the plan, as a crashed guest would.
 */
static void result_counted(void)
{
	if (cut_at && ktap_case_count() == cut_at)
		vm_end(0);
}

void report(const struct test *t, bool holds)
{
	ktap_test_result(holds, "%s", t->name);
	result_counted();
}

/* a fact the agent could not observe is not a fact that does not hold */
void report_skip(const struct test *t, const char *why)
{
	ktap_test_result_skip(why, "%s", t->name);
	result_counted();
}

unsigned int report_count(void)
{
	return ktap_case_count();
}

/* the plan follows the version line at once, as kunit_parser wants */
void report_plan(unsigned int nr_subtests)
{
	ktap_print_header();
	ktap_set_plan(nr_subtests);
}

void report_truncate_after(unsigned int results)
{
	cut_at = results;
}

void report_subtest_start(const char *name, unsigned int tests)
{
	ktap_subtest_start(name, tests);
}

void report_subtest_end(void)
{
	unsigned int printed = ktap_test_num();
	unsigned int planned = ktap_levels[1].plan;

	if (printed != planned)
		agent_error("%s: printed %u results, planned %u",
			    ktap_levels[1].name, printed, planned);
	ktap_subtest_end();
}
