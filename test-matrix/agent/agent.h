/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The agent's shared types and steps, in the shape of the kernel's
 * tools/testing/selftests/livepatch/functions.sh: the steps (load a module,
 * read its taint, check its events, read the log) live here once, and what
 * each fix checks is data, the tables of checks.c, which gen-checks.py
 * writes from test-matrix/guest.toml and test-matrix/fixes/<fix>.toml.
 *
 * test-matrix/README.md is the contract: the guard, the tests and their
 * order, the output. "ok" is always the behaviour of a kernel with every
 * fix of the family.
 */
#ifndef TAINTPORT_AGENT_H
#define TAINTPORT_AGENT_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* the kernel's attribute shorthands, as tools/include/linux/compiler.h has them */
#ifndef __printf
#define __printf(a, b) __attribute__((format(printf, a, b)))
#endif

/* room for any tracefs or sysfs path the agent builds */
#define PATH_SIZE		128
/* room for show_module_flags()'s five letters and more */
#define MODULE_FLAGS_SIZE	16
/* MODULE_NAME_LEN of include/linux/module.h */
#define MODULE_NAME_SIZE	56

/* what a test looks at: test-matrix/README.md has a row for each */
enum kind {
	KIND_LOADS,
	KIND_MODULE_TAINT,
	KIND_KERNEL_TAINT,
	KIND_PATCH_ENABLED,
	KIND_PATCH_APPLIES,
	KIND_EVENTS,
	KIND_EVENT_FIRES,
	KIND_MODULE_LOAD,
	KIND_LOG,
	KIND_UNLOADS,
	KIND_SIG_ENFORCE,
	/* what a refused load leaves: last, refusal_kind() relies on it */
	KIND_REFUSED,
	KIND_NOT_LOADED,
	KIND_NO_EVENTS,
	KIND_NO_NEW_TAINT,
	KIND_LOG_REJECTED,
};

/* how a module is made to fire its event */
enum fire {
	FIRE_PARAMETER,	/* write the value to /sys/module/<m>/parameters/fire */
	FIRE_READ,	/* read the file its livepatch replaced a function of */
};

/* how a subtest loads on the distribution's binary (taintport.signed=) */
enum distribution {
	DIST_AS_IS,
	DIST_STAND_IN,	/* a module the distribution signed takes its place */
	DIST_UNSIGNED,	/* <module>.ko, unsigned */
};

struct taint {
	char letter;
	unsigned int bit;
	const char *cmdline;	/* a parameter that says the tree's letter, or NULL */
};

struct test_module {
	const char *name;	/* also its trace system */
	const char *event;	/* NULL: a module with no event of ours */
	enum fire fire;
	const char *field;	/* the event's integer field */
	const char *patches;	/* a livepatch: the file it patches, else NULL */
	const char *marker;	/* what reading that file shows while patched */
	const char *sysfs;	/* where the livepatch core shows the patch */
	bool in_tree;		/* the distribution's own: shows no O */
};

struct test {
	const char *name;
	enum kind kind;
	bool want;		/* what a kernel with every fix does */
	char letter;		/* MODULE_TAINT, KERNEL_TAINT, MODULE_LOAD */
	const char *needle;	/* LOG: the line the kernel logs */
	int load;		/* enforced: the subtest whose load it repeats */
};

struct subtest {
	const char *name;
	const struct test_module *module;
	const char *file;	/* under /taintport/ */
	bool force;		/* MODULE_INIT_IGNORE_VERMAGIC, as insmod -f */
	enum distribution distribution;
	const struct test *tests;
	size_t nr_tests;
};

/* checks.c, generated */
extern const struct taint taints[];
extern const size_t nr_taints;
extern const struct test_module modules[];
extern const struct subtest subtests[];
extern const size_t nr_subtests;

/* one load of a module as this boot makes it (load.c) */
struct mode {
	const struct test_module *module;
	char path[PATH_SIZE];
	int flags;
	/* set when the module is loaded unsigned where a signed load was meant */
	const char *unsigned_why;
	char why[96];
};

/* what one load did and showed, read when a test first asks */
struct load {
	const char *subtest;	/* whose diagnostics these are */
	const struct mode *mode;
	int value;		/* what the module is made to fire with */
	bool tried;		/* a refused load not tried: sig_enforce is off */
	bool loaded;
	int load_errno;
	unsigned long tainted_before;
	bool tainted_before_known;
	char kmsg[8192];	/* messages logged during the load, one a line */
	bool kmsg_read;
	bool kmsg_printed;
	char taint[32];		/* /sys/module/<m>/taint */
	int taint_state;	/* 0 not read, 1 read, -1 unreadable */
	unsigned long tainted;	/* /proc/sys/kernel/tainted after the load */
	int tainted_state;
	int events_state;	/* 0 not looked, 1 present, -1 absent */
	int fired_state;	/* 0 not fired, 1 line found, -1 none, -2 agent error */
	char trace[32768];	/* tracefs "trace" after the load and the fire */
	bool trace_read;
	char load_flags[MODULE_FLAGS_SIZE];	/* of the module_load line */
	int load_flags_state;
	int klp_state;		/* 0 not read, 1 enabled, -1 not */
};

/* report.c: KTAP out, and the agent's own errors */
extern int status;
__printf(1, 2) void agent_error(const char *fmt, ...);
__printf(2, 3) void diag(const struct load *l, const char *fmt, ...);
void report(const struct test *t, bool holds);
void report_skip(const struct test *t, const char *why);
void report_plan(unsigned int subtests);
void report_truncate_after(unsigned int results);
void report_subtest_start(const char *name, unsigned int tests);
void report_subtest_end(void);
unsigned int report_count(void);
__printf(1, 2) void report_msg(const char *fmt, ...);
void vm_end(int n) __attribute__((noreturn));

/* text.c: small files of sysfs, procfs and tracefs */
ssize_t read_text(const char *path, char *buf, size_t size);
int write_text(const char *path, const char *text);

/* guard.c */
const char *guard(const char *cmdline);

/* load.c: loading and unloading a module in each mode */
void mode_of(struct mode *mode, const struct subtest *sub, const char *signed_name);
void load(struct load *l);
bool unload(struct load *l);

/* taint.c: reading taints */
extern char unsigned_letter;
const char *letter_unobservable(const struct load *l, char letter);
char letter_of(char letter);
const struct taint *taint_of(char letter);
bool kernel_tainted(unsigned long *tainted);
int module_taint(struct load *l);
int kernel_taint(struct load *l);

/* events.c: tracefs, the module's events and the module_load line */
extern char tracefs[32];
void tracefs_setup(void);
bool events_present(const struct test_module *m);
int events_state(struct load *l);
int fired_state(struct load *l);
int module_load_state(struct load *l);
bool module_load_traced(void);
void trace_clear(void);

/* log.c: the kernel log of a load */
int kmsg_open_at_end(void);
void kmsg_drain(int fd, struct load *l);
void print_dmesg(struct load *l);

/* klp.c: the livepatch steps */
int klp_enabled(struct load *l);
int klp_applies(struct load *l);
void klp_disable(const struct load *l);

/* enforce.c: signature enforcement */
bool enforce_signatures(void);

/* tests.c: one function per kind of test */
bool refusal_kind(enum kind kind);
void run_test(struct load *l, const struct test *t, bool enforcing);

#endif /* TAINTPORT_AGENT_H */
