/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Print KTAP version 1 (Documentation/dev-tools/ktap.rst).
 *
 * The same small API shape as the kernel's
 * tools/testing/selftests/kselftest.h, reduced to what taintport needs:
 *
 *	ktap_print_header();
 *	ktap_set_plan(number_of_results);
 *	ktap_print_msg(fmt, ...);		"# ..." diagnostic
 *	ktap_test_result(holds, fmt, ...);	"ok N name" / "not ok N name"
 *	ktap_test_result_skip(reason, fmt, ...);	"ok N name # SKIP reason"
 *	ktap_exit();				totals, exit 0 only if all passed
 *
 * Unlike ksft_print_msg(), ktap_print_msg() ends the line itself, so a
 * diagnostic can never run into the next result line. Output goes to
 * stdout; the caller decides its buffering.
 */
#ifndef TAINTPORT_KTAP_H
#define TAINTPORT_KTAP_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

struct ktap_count {
	unsigned int pass;
	unsigned int fail;
	unsigned int skip;
};

/* the kernel's attribute shorthands, as tools/include/linux/compiler.h has them */
#ifndef __printf
#define __printf(a, b) __attribute__((format(printf, a, b)))
#endif
#ifndef __noreturn
#define __noreturn __attribute__((noreturn))
#endif

static struct ktap_count ktap_cnt;
static unsigned int ktap_plan;

static inline unsigned int ktap_test_num(void)
{
	return ktap_cnt.pass + ktap_cnt.fail + ktap_cnt.skip;
}

static inline void ktap_print_header(void)
{
	printf("KTAP version 1\n");
}

static inline void ktap_set_plan(unsigned int plan)
{
	ktap_plan = plan;
	printf("1..%u\n", plan);
}

static inline __printf(1, 2) void ktap_print_msg(const char *fmt, ...)
{
	va_list args;

	va_start(args, fmt);
	printf("# ");
	vprintf(fmt, args);
	printf("\n");
	va_end(args);
}

static inline __printf(2, 3)
void ktap_test_result(bool holds, const char *fmt, ...)
{
	va_list args;

	if (holds)
		ktap_cnt.pass++;
	else
		ktap_cnt.fail++;

	va_start(args, fmt);
	printf("%s %u ", holds ? "ok" : "not ok", ktap_test_num());
	vprintf(fmt, args);
	printf("\n");
	va_end(args);
}

static inline __printf(2, 3)
void ktap_test_result_skip(const char *reason, const char *fmt, ...)
{
	va_list args;

	ktap_cnt.skip++;

	va_start(args, fmt);
	printf("ok %u ", ktap_test_num());
	vprintf(fmt, args);
	printf(" # SKIP %s\n", reason);
	va_end(args);
}

static inline __noreturn void ktap_exit(void)
{
	if (ktap_plan != ktap_test_num())
		ktap_print_msg("Planned tests != run tests (%u != %u)",
			       ktap_plan, ktap_test_num());
	ktap_print_msg("Totals: pass:%u fail:%u skip:%u",
		       ktap_cnt.pass, ktap_cnt.fail, ktap_cnt.skip);
	exit(ktap_cnt.fail || ktap_plan != ktap_test_num() ?
	     EXIT_FAILURE : EXIT_SUCCESS);
}

#endif /* TAINTPORT_KTAP_H */
