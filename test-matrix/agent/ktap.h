/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Print KTAP version 1 (Documentation/dev-tools/ktap.rst), with one level
 * of subtests nested the way kunit nests a suite's cases.
 *
 * The same small API shape as the kernel's
 * tools/testing/selftests/kselftest.h, reduced to what taintport needs:
 *
 *	ktap_print_header();
 *	ktap_set_plan(number_of_results);
 *	ktap_print_msg(fmt, ...);		"# ..." diagnostic
 *	ktap_test_result(holds, fmt, ...);	"ok N name" / "not ok N name"
 *	ktap_test_result_skip(reason, fmt, ...);	"ok N name # SKIP reason"
 *	ktap_subtest_start(name, plan);		"    KTAP version 1",
 *						"    # Subtest: name", "    1..plan"
 *	ktap_subtest_end();			"ok N name" / "not ok N name"
 *	ktap_exit();				totals, exit 0 only if all passed
 *
 * Inside a subtest every line is indented by four spaces, as kunit
 * prints it; the subtest's own result is "not ok" when one of its tests
 * is, and "# SKIP" when all of them were skipped, the status
 * tools/testing/kunit/kunit_parser.py gives a suite.
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

/* the top level and, while one runs, a subtest */
struct ktap_level {
	struct ktap_count cnt;
	unsigned int plan;
	const char *name;
};

static struct ktap_level ktap_levels[2];
static unsigned int ktap_depth;
static unsigned int ktap_cases;	/* results printed inside subtests */

#define ktap_cnt	(ktap_levels[ktap_depth].cnt)
#define ktap_plan	(ktap_levels[ktap_depth].plan)

static inline const char *ktap_indent(void)
{
	return ktap_depth ? "    " : "";
}

/* the number of the last result printed at the current level */
static inline unsigned int ktap_test_num(void)
{
	return ktap_cnt.pass + ktap_cnt.fail + ktap_cnt.skip;
}

/* results printed so far inside subtests, over all of them */
static inline unsigned int ktap_case_count(void)
{
	return ktap_cases;
}

static inline void ktap_print_header(void)
{
	printf("KTAP version 1\n");
}

static inline void ktap_set_plan(unsigned int plan)
{
	ktap_plan = plan;
	printf("%s1..%u\n", ktap_indent(), plan);
}

static inline __printf(1, 2) void ktap_print_msg(const char *fmt, ...)
{
	va_list args;

	va_start(args, fmt);
	printf("%s# ", ktap_indent());
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
	ktap_cases += ktap_depth;

	va_start(args, fmt);
	printf("%s%s %u ", ktap_indent(), holds ? "ok" : "not ok",
	       ktap_test_num());
	vprintf(fmt, args);
	printf("\n");
	va_end(args);
}

static inline __printf(2, 3)
void ktap_test_result_skip(const char *reason, const char *fmt, ...)
{
	va_list args;

	ktap_cnt.skip++;
	ktap_cases += ktap_depth;

	va_start(args, fmt);
	printf("%sok %u ", ktap_indent(), ktap_test_num());
	vprintf(fmt, args);
	printf(" # SKIP %s\n", reason);
	va_end(args);
}

/* one level down: a subtest of plan tests, named name */
static inline void ktap_subtest_start(const char *name, unsigned int plan)
{
	ktap_depth = 1;
	ktap_levels[1] = (struct ktap_level){ .name = name };
	printf("%sKTAP version 1\n", ktap_indent());
	printf("%s# Subtest: %s\n", ktap_indent(), name);
	ktap_set_plan(plan);
}

/* back to the top level, with the subtest's result */
static inline void ktap_subtest_end(void)
{
	struct ktap_level sub = ktap_levels[1];
	const char *name = sub.name;

	ktap_depth = 0;
	if (sub.plan != sub.cnt.pass + sub.cnt.fail + sub.cnt.skip)
		ktap_print_msg("%s: planned tests != run tests (%u != %u)",
			       name, sub.plan,
			       sub.cnt.pass + sub.cnt.fail + sub.cnt.skip);
	ktap_print_msg("%s: pass:%u fail:%u skip:%u total:%u", name,
		       sub.cnt.pass, sub.cnt.fail, sub.cnt.skip, sub.plan);
	if (sub.cnt.pass + sub.cnt.fail == 0 && sub.cnt.skip)
		ktap_test_result_skip("all tests skipped", "%s", name);
	else
		ktap_test_result(!sub.cnt.fail, "%s", name);
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
