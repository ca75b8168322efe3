// SPDX-License-Identifier: GPL-2.0
/*
 * One function per kind of test, each one assertion about what the load
 * showed (read when a test first asks, see struct load). Which tests a
 * subtest has, and what each wants, is data (checks.c).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "agent.h"
#include "parse.h"

/* enforcement's own words when it refuses an unsigned module */
#define REJECTED	"Loading of unsigned module is rejected"

typedef void (*test_fn)(struct load *l, const struct test *t);

static const char *no_event = "the distribution's signed module has no trace event of ours";

static void loads(struct load *l, const struct test *t)
{
	report(t, l->loaded);
}

static void module_tainted(struct load *l, const struct test *t)
{
	const char *why = letter_unobservable(l, t->letter);

	if (why)
		report_skip(t, why);
	else if (!l->loaded)
		report_skip(t, "module not loaded");
	else if (module_taint(l) < 0)
		report_skip(t, "taint unreadable");
	else
		report(t, taint_has_letter(l->taint, letter_of(t->letter)) == t->want);
}

static void kernel_tainted_bit(struct load *l, const struct test *t)
{
	const char *why = letter_unobservable(l, t->letter);

	if (why)
		report_skip(t, why);
	else if (kernel_taint(l) < 0)
		report_skip(t, "tainted unreadable");
	else
		report(t, tainted_has_bit(l->tainted, taint_of(t->letter)->bit) == t->want);
}

static void patch_enabled(struct load *l, const struct test *t)
{
	if (!l->loaded)
		report_skip(t, "module not loaded");
	else
		report(t, klp_enabled(l) > 0);
}

static void patch_applies(struct load *l, const struct test *t)
{
	int applies = l->loaded ? klp_applies(l) : -1;

	if (!l->loaded)
		report_skip(t, "module not loaded");
	else if (applies < 0)
		report_skip(t, "file unreadable");
	else
		report(t, applies);
}

/* why the module's events cannot be looked at, or NULL */
static const char *events_unobservable(const struct load *l)
{
	if (!l->mode->module->event)
		return no_event;
	if (!tracefs[0])
		return "no tracefs";
	if (!l->loaded)
		return "module not loaded";
	return NULL;
}

static void events(struct load *l, const struct test *t)
{
	const char *why = events_unobservable(l);

	if (why)
		report_skip(t, why);
	else
		report(t, (events_state(l) > 0) == t->want);
}

static void event_fires(struct load *l, const struct test *t)
{
	const char *why = events_unobservable(l);
	int fired = why ? 0 : fired_state(l);

	if (why)
		report_skip(t, why);
	else if (fired == -2)
		report_skip(t, "agent error");
	else
		report(t, (fired > 0) == t->want);
}

static void module_load(struct load *l, const struct test *t)
{
	const char *why = letter_unobservable(l, t->letter);

	if (!why && !l->loaded)
		why = "module not loaded";
	if (!why && !module_load_traced())
		why = "module:module_load not enabled";
	if (!why && module_load_state(l) < 0)
		why = "trace unreadable";
	if (why)
		report_skip(t, why);
	else
		report(t, taint_has_letter(l->load_flags, letter_of(t->letter)) == t->want);
}

static void logged(struct load *l, const struct test *t)
{
	if (!l->kmsg_read) {
		report_skip(t, "no kernel log");
		return;
	}
	print_dmesg(l);
	report(t, !!strstr(l->kmsg, t->needle) == t->want);
}

static void unloads(struct load *l, const struct test *t)
{
	if (!l->loaded)
		report_skip(t, "module not loaded");
	else
		report(t, unload(l));
}

/*
 * finit_module() failed with EKEYREJECTED, which module_sig_check()
 * returns for a module without a valid signature once enforcement is on
 * (a forced load counts as one: its signature is not even looked at)
 */
static void refused(struct load *l, const struct test *t)
{
	report(t, !l->loaded && l->load_errno == EKEYREJECTED);
}

static void not_loaded(struct load *l, const struct test *t)
{
	char path[PATH_SIZE];

	snprintf(path, sizeof(path), "/sys/module/%s", l->mode->module->name);
	report(t, access(path, F_OK) != 0);
}

static void no_events(struct load *l, const struct test *t)
{
	if (!tracefs[0])
		report_skip(t, "no tracefs");
	else
		report(t, !events_present(l->mode->module));
}

static void no_new_taint(struct load *l, const struct test *t)
{
	if (!l->tainted_before_known || kernel_taint(l) < 0) {
		agent_error("%s: cannot read /proc/sys/kernel/tainted", l->subtest);
		report_skip(t, "tainted unreadable");
		return;
	}
	diag(l, "tainted = %lu, then %lu", l->tainted_before, l->tainted);
	report(t, l->tainted_before == l->tainted);
}

static void log_rejected(struct load *l, const struct test *t)
{
	if (!l->kmsg_read) {
		report_skip(t, "no kernel log");
		return;
	}
	print_dmesg(l);
	report(t, strstr(l->kmsg, REJECTED));
}

static const test_fn tests[] = {
	[KIND_LOADS] = loads,
	[KIND_MODULE_TAINT] = module_tainted,
	[KIND_KERNEL_TAINT] = kernel_tainted_bit,
	[KIND_PATCH_ENABLED] = patch_enabled,
	[KIND_PATCH_APPLIES] = patch_applies,
	[KIND_EVENTS] = events,
	[KIND_EVENT_FIRES] = event_fires,
	[KIND_MODULE_LOAD] = module_load,
	[KIND_LOG] = logged,
	[KIND_UNLOADS] = unloads,
	[KIND_REFUSED] = refused,
	[KIND_NOT_LOADED] = not_loaded,
	[KIND_NO_EVENTS] = no_events,
	[KIND_NO_NEW_TAINT] = no_new_taint,
	[KIND_LOG_REJECTED] = log_rejected,
};

bool refusal_kind(enum kind kind)
{
	return kind >= KIND_REFUSED;
}

/*
 * A test of l's load; enforcing says whether sig_enforce is on, without
 * which a refused load is not tried (it would test nothing and taint the
 * boot).
 */
void run_test(struct load *l, const struct test *t, bool enforcing)
{
	if (t->kind == KIND_SIG_ENFORCE)
		report(t, enforcing);
	else if (refusal_kind(t->kind) && !l->tried)
		report_skip(t, "sig_enforce not on");
	else
		tests[t->kind](l, t);
}
