// SPDX-License-Identifier: GPL-2.0
/*
 * taintport-agent - load the test modules in the test guest, print KTAP
 *
 * Runs from the initramfs (dracut module 50taintport) of a throw-away
 * QEMU guest: loads /taintport/utt-signed.ko, then /taintport/utt.ko,
 * then utt.ko again with the vermagic check off, then the livepatch
 * /taintport/tlp-signed.ko, and tests after each load that the kernel
 * did to the module's taint, the kernel's taint, the module's trace
 * events and the kernel log what a kernel with every fix of the family
 * does. Last it turns signature enforcement on and tests that unsigned
 * and forced loads are refused and signed ones still trace. Then it ends
 * the VM. On a distribution's own binary (taintport.signed=<name>) a
 * module the distribution signed takes the signed loads, and what such a
 * load cannot show is reported as a SKIP with the reason.
 *
 * test-matrix/README.md is the contract: the guard, the tests and
 * their order, the output. "ok" is always the behaviour of a fixed
 * kernel; which tests a kernel without a fix fails is not decided here
 * but in test-matrix/expectations.toml.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/io.h>
#include <sys/klog.h>
#include <sys/mount.h>
#include <sys/reboot.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>
#include <linux/module.h>

#include "ktap.h"
#include "parse.h"

#ifndef KRELEASE
#error "KRELEASE must name the kernel release the agent is built for"
#endif

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* as tools/include/linux/compiler.h spells it */
#ifndef __always_unused
#define __always_unused __attribute__((__unused__))
#endif

#define TOKEN_PATH		"/taintport/token"
#define KLP_SYSFS		"/sys/kernel/livepatch"
#define SIG_ENFORCE		"/sys/module/module/parameters/sig_enforce"

/* bit numbers of include/linux/panic.h (kernel.h before 6.0) */
#define TAINT_FORCED_MODULE	1
#define TAINT_OOT_MODULE	12
#define TAINT_UNSIGNED_MODULE	13
#define TAINT_LIVEPATCH		15

#define BIT(n)			(1UL << (n))

/* include/linux/syslog.h, not exported to user space */
#define SYSLOG_ACTION_CONSOLE_LEVEL	8

/*
 * QEMU's isa-debug-exit as the host configures it (iobase=0xf4,
 * iosize=0x04): a write of n makes QEMU exit with (n << 1) | 1
 * (hw/misc/debugexit.c).
 */
#define DEBUG_EXIT_PORT		0xf4
#define DEBUG_EXIT_SIZE		4

/* room for any tracefs or sysfs path the agent builds */
#define PATH_SIZE		128

/* MODULE_NAME_LEN of include/linux/module.h */
#define MODULE_NAME_SIZE	56

/*
 * How long a livepatch transition may take before the agent gives up
 * waiting. With reliable stack traces it finishes at once; the livepatch
 * core retries a blocked one every second, so this allows several tries.
 */
#define KLP_WAIT_MS		10000

struct load;

/* a livepatch replaces a function behind file: reading it shows marker */
struct klp_test {
	const char *file;
	const char *marker;
};

/*
 * log_<name> holds when the load logged needle, log_no_<name> when it
 * did not
 */
struct log_check {
	const char *name;
	const char *needle;
};

/*
 * What the agent looks at about one test module: the rows of the README's
 * table that apply to it, in that order. A 'E' among the letters stands
 * for taintport.letter.
 */
struct test_module {
	const char *name;		/* also its trace system */
	/*
	 * signed by the distribution, built with its kernel: no O, and no
	 * trace event of ours (the signed loads on a distribution's binary)
	 */
	bool in_tree;
	const struct klp_test *klp;	/* NULL unless the module is a livepatch */
	const char *taint_letters;	/* module_[not_]tainted_<letter> */
	const unsigned int *kernel_bits;	/* kernel_[not_]tainted_<letter> */
	size_t nr_kernel_bits;
	const char *event;		/* the module's one trace event, or NULL */
	/* makes the module fire its event; false when the agent failed */
	bool (*fire)(const struct load *l, int value);
	/* whether an event payload is the one fire() caused */
	bool (*fired)(const char *payload, int value);
	const char *load_letters;	/* module_load_[not_]tainted_<letter> */
	const struct log_check *logs;	/* log_[no_]<name> */
	size_t nr_logs;
};

/*
 * One load of a module, a KTAP subtest of its own, and what a kernel with
 * every fix of the family does on it: that is what each test asserts.
 */
struct mode {
	const char *name;
	const struct test_module *module;
	const char *path;
	int flags;
	const char *taint_want;		/* of taint_letters, those it shows */
	unsigned long kernel_want;	/* of kernel_bits, BIT() of those set */
	bool events_want;		/* events created (and the event fires) */
	const char *load_want;		/* of load_letters, those shown */
	unsigned long log_want;		/* of logs, BIT(i) of those logged */
	/* when set, the module is loaded unsigned where a signed load was meant */
	const char *unsigned_why;
};

/* what one load did, gathered before its results are printed */
struct load {
	const struct mode *mode;
	const char *prefix;	/* of every test name: "" or "<what>_" */
	bool loaded;
	int load_errno;
	char kmsg[8192];	/* messages logged during the load, one a line */
	bool kmsg_read;
	char trace[32768];	/* tracefs "trace" after the load and the fire */
	bool trace_read;
};

static int status;		/* 0 every check made, 1 internal error */
static enum fault fault;
static char unsigned_letter;
static char tracefs[32];	/* "" when no tracefs could be found */
static bool module_load_enabled;
/* taintport.signed=: the distribution's signed module, "" when none */
static char vendor_name[MODULE_NAME_SIZE];
static char vendor_path[PATH_SIZE];
static unsigned int plan;	/* test cases to print, over all subtests */

static __printf(1, 2) void agent_error(const char *fmt, ...)
{
	char msg[256];
	va_list args;

	va_start(args, fmt);
	vsnprintf(msg, sizeof(msg), fmt, args);
	va_end(args);
	ktap_print_msg("error: %s", msg);
	status = 1;
}

/* the whole of a small file, NUL-terminated; -1 with errno on failure */
static ssize_t read_text(const char *path, char *buf, size_t size)
{
	ssize_t len = 0;
	ssize_t n = 0;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	while ((size_t)len < size - 1) {
		n = read(fd, buf + len, size - 1 - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += n;
	}
	buf[len] = '\0';
	if (n < 0) {
		int saved = errno;

		close(fd);
		errno = saved;
		return -1;
	}
	close(fd);
	return len;
}

/* sysfs and tracefs take a value in one write(); 0 or -1 with errno */
static int write_text(const char *path, const char *text)
{
	size_t len = strlen(text);
	ssize_t n;
	int saved;
	int fd;

	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = write(fd, text, len);
	saved = errno;
	close(fd);
	if (n == (ssize_t)len)
		return 0;
	errno = n < 0 ? saved : EIO;
	return -1;
}

static void tracefs_path(char *buf, size_t size, const char *file)
{
	snprintf(buf, size, "%s/%s", tracefs, file);
}

/*
 * Ends the VM: isa-debug-exit when QEMU has it, otherwise reboot(2),
 * which QEMU's -no-reboot turns into an exit. Never returns on success.
 */
static void vm_end(int n)
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
	if (fault == FAULT_TRUNCATE && ktap_case_count() == plan / 2)
		vm_end(0);
}

static void report(const struct load *l, const char *test, bool holds)
{
	ktap_test_result(holds, "%s%s", l->prefix, test);
	result_counted();
}

/* a fact the agent could not observe is not a fact that does not hold */
static void report_unobserved(const struct load *l, const char *test,
			      const char *why)
{
	ktap_test_result_skip(why, "%s%s", l->prefix, test);
	result_counted();
}

/* the letter the kernel under test shows for a letter of the tables */
static char letter_of(char letter)
{
	return letter == 'E' ? unsigned_letter : letter;
}

/*
 * Why a letter of the tables cannot be seen on this load by design, or
 * NULL: a module the distribution signed is in-tree (no O), and a module
 * loaded unsigned where a signed load was meant is E for that reason.
 */
static const char *letter_unobservable(const struct load *l, char letter)
{
	if (letter == 'O' && l->mode->module->in_tree)
		return "the distribution's signed module is in-tree: no O";
	if (letter == 'E')
		return l->mode->unsigned_why;
	return NULL;
}

/*
 * One test <what>_tainted_<c> or <what>_not_tainted_<c> for each c of
 * letters, as want has c or not: whether have agrees, or, when have is
 * NULL, that the agent could not see (why).
 */
static void report_letters(const struct load *l, const char *what,
			   const char *letters, const char *want,
			   const char *have, const char *why)
{
	char test[40];

	for (; *letters; letters++) {
		bool wanted = strchr(want, *letters);

		snprintf(test, sizeof(test), "%s_%stainted_%c", what,
			 wanted ? "" : "not_", *letters);
		if (letter_unobservable(l, *letters))
			report_unobserved(l, test, letter_unobservable(l, *letters));
		else if (have)
			report(l, test, taint_has_letter(have, letter_of(*letters)) ==
				       wanted);
		else
			report_unobserved(l, test, why);
	}
}

/*
 * Refuses to run anywhere but the test guest, before anything else.
 * Returns NULL when it may run, else why not.
 */
static const char *guard(const char *cmdline)
{
	static char why[160];
	char want[128];
	char have[128];
	struct utsname uts;

	if (!cmdline_value(cmdline, "taintport.token", want, sizeof(want)) ||
	    !want[0])
		return "no taintport.token= on the kernel command line";
	if (read_text(TOKEN_PATH, have, sizeof(have)) < 0) {
		snprintf(why, sizeof(why), "cannot read %s: %s",
			 TOKEN_PATH, strerror(errno));
		return why;
	}
	have[strcspn(have, "\n")] = '\0';
	if (strcmp(want, have))
		return "taintport.token= does not match " TOKEN_PATH;
	if (uname(&uts))
		return "uname() failed";
	if (strcmp(uts.release, KRELEASE)) {
		snprintf(why, sizeof(why), "kernel is %s, agent is built for %s",
			 uts.release, KRELEASE);
		return why;
	}
	if (access("/etc/initrd-release", F_OK))
		return "not in an initramfs (no /etc/initrd-release)";
	return NULL;
}

/*
 * uname -v: whose build of the release this is (Debian's says "Debian
 * 6.1.176-1"), which the harness records with the cell
 */
static void print_kernel_version(void)
{
	struct utsname uts;

	if (uname(&uts))
		agent_error("uname: %s", strerror(errno));
	else
		ktap_print_msg("taintport-agent: uname -v: %s", uts.version);
}

static bool tracefs_at(const char *dir)
{
	char path[PATH_SIZE];

	snprintf(path, sizeof(path), "%s/trace", dir);
	if (access(path, F_OK))
		return false;
	snprintf(tracefs, sizeof(tracefs), "%s", dir);
	return true;
}

/* dir is tracefs, as found or after mounting fs at mount_point */
static bool tracefs_mount(const char *fs, const char *mount_point,
			  const char *dir)
{
	return tracefs_at(dir) ||
	       (!mount(fs, mount_point, fs, 0, NULL) && tracefs_at(dir));
}

/*
 * tracefs has its own mount point since 4.1; older setups reach it
 * through debugfs, which mounts it at tracing/ on first access.
 */
static void tracefs_setup(void)
{
	char path[PATH_SIZE];

	if (!tracefs_mount("tracefs", "/sys/kernel/tracing",
			   "/sys/kernel/tracing") &&
	    !tracefs_mount("debugfs", "/sys/kernel/debug",
			   "/sys/kernel/debug/tracing")) {
		agent_error("no tracefs at /sys/kernel/tracing or /sys/kernel/debug/tracing");
		return;
	}
	ktap_print_msg("tracefs: %s", tracefs);

	tracefs_path(path, sizeof(path), "events/module/module_load/enable");
	if (write_text(path, "1"))
		agent_error("enable module:module_load: %s", strerror(errno));
	else
		module_load_enabled = true;
}

/* -1 when the kernel log cannot be read; the load is then reported as such */
static int kmsg_open_at_end(void)
{
	int fd;

	fd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		agent_error("open /dev/kmsg: %s", strerror(errno));
		return -1;
	}
	if (lseek(fd, 0, SEEK_END) < 0) {
		agent_error("seek /dev/kmsg: %s", strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

/* the messages logged since kmsg_open_at_end(), one a line, into l->kmsg */
static void kmsg_drain(int fd, struct load *l)
{
	char record[8192];	/* a whole record, or read() fails with EINVAL */
	size_t used = 0;
	ssize_t n;

	for (;;) {
		const char *msg;
		size_t len;

		n = read(fd, record, sizeof(record) - 1);
		if (n < 0 && (errno == EINTR || errno == EPIPE))
			continue;	/* EPIPE: older records were overwritten */
		if (n < 0 && errno == EAGAIN)
			break;
		if (n <= 0) {
			agent_error("read /dev/kmsg: %s",
				    n ? strerror(errno) : "end of file");
			return;
		}
		msg = kmsg_message(record, n, &len);
		if (!msg)
			continue;
		if (used + len + 2 > sizeof(l->kmsg)) {
			agent_error("%s: kernel log too long, kept %zu bytes",
				    l->mode->name, used);
			break;
		}
		memcpy(l->kmsg + used, msg, len);
		used += len;
		l->kmsg[used++] = '\n';
	}
	l->kmsg[used] = '\0';
	l->kmsg_read = true;
}

/* opening "trace" with O_TRUNC empties the ring buffer */
static void trace_clear(void)
{
	char path[PATH_SIZE];
	int fd;

	tracefs_path(path, sizeof(path), "trace");
	fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
	if (fd < 0) {
		agent_error("clear %s: %s", path, strerror(errno));
		return;
	}
	close(fd);
}

static void trace_read(struct load *l)
{
	char path[PATH_SIZE];
	ssize_t len;

	tracefs_path(path, sizeof(path), "trace");
	len = read_text(path, l->trace, sizeof(l->trace));
	if (len < 0) {
		agent_error("read %s: %s", path, strerror(errno));
		return;
	}
	if ((size_t)len == sizeof(l->trace) - 1)
		agent_error("%s: %s longer than %zu bytes", l->mode->name,
			    path, sizeof(l->trace) - 1);
	l->trace_read = true;
}

/* glibc has no wrappers for these two */
static int sys_finit_module(int fd, const char *params, int flags)
{
	return syscall(SYS_finit_module, fd, params, flags);
}

static int sys_delete_module(const char *name, unsigned int flags)
{
	return syscall(SYS_delete_module, name, flags);
}

static void load(struct load *l)
{
	int kmsg;
	int fd;

	if (tracefs[0])
		trace_clear();
	kmsg = kmsg_open_at_end();

	fd = open(l->mode->path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		l->load_errno = errno;
		agent_error("open %s: %s", l->mode->path, strerror(errno));
	} else {
		l->loaded = !sys_finit_module(fd, "", l->mode->flags);
		l->load_errno = l->loaded ? 0 : errno;
		close(fd);
	}

	if (kmsg >= 0) {
		kmsg_drain(kmsg, l);
		close(kmsg);
	}
}

static void check_loads(const struct load *l)
{
	ktap_print_msg("%s: finit_module(%s, flags=%d) = %s", l->mode->name,
		       l->mode->path, l->mode->flags,
		       l->loaded ? "0" : strerror(l->load_errno));
	report(l, "loads", l->loaded);
}

static void check_module_taint(const struct load *l)
{
	const struct test_module *m = l->mode->module;
	const char *name = l->mode->name;
	char path[PATH_SIZE];
	char taint[32] = "";

	snprintf(path, sizeof(path), "/sys/module/%s/taint", m->name);
	if (!l->loaded) {
		ktap_print_msg("%s: %s: module not loaded", name, path);
		report_letters(l, "module", m->taint_letters, l->mode->taint_want,
			       NULL, "module not loaded");
		return;
	}
	if (read_text(path, taint, sizeof(taint)) < 0) {
		agent_error("%s: read %s: %s", name, path, strerror(errno));
		report_letters(l, "module", m->taint_letters, l->mode->taint_want,
			       NULL, "taint unreadable");
		return;
	}
	taint[strcspn(taint, "\n")] = '\0';

	ktap_print_msg("%s: %s = %s", name, path, taint);
	if (unsigned_letter != 'E' && strchr(m->taint_letters, 'E'))
		ktap_print_msg("%s: the letter E stands for '%c' (taintport.letter)",
			       name, unsigned_letter);
	report_letters(l, "module", m->taint_letters, l->mode->taint_want,
		       taint, NULL);
}

/* the letter of a taint bit the agent tests, as the taint tables print it */
static char bit_letter(unsigned int bit)
{
	switch (bit) {
	case TAINT_FORCED_MODULE:
		return 'F';
	case TAINT_OOT_MODULE:
		return 'O';
	case TAINT_UNSIGNED_MODULE:
		return 'E';
	case TAINT_LIVEPATCH:
		return 'K';
	}
	return '?';
}

/* /proc/sys/kernel/tainted; false when it cannot be read */
static bool kernel_tainted(unsigned long *tainted)
{
	char text[32];

	return read_text("/proc/sys/kernel/tainted", text, sizeof(text)) >= 0 &&
	       tainted_parse(text, tainted);
}

static void check_kernel_taint(const struct load *l)
{
	const struct test_module *m = l->mode->module;
	unsigned long tainted;
	bool readable;
	char test[40];
	size_t i;

	readable = kernel_tainted(&tainted);
	if (readable)
		ktap_print_msg("%s: tainted = %lu", l->mode->name, tainted);
	else
		agent_error("%s: cannot read /proc/sys/kernel/tainted",
			    l->mode->name);
	for (i = 0; i < m->nr_kernel_bits; i++) {
		unsigned int bit = m->kernel_bits[i];
		bool wanted = l->mode->kernel_want & BIT(bit);

		snprintf(test, sizeof(test), "kernel_%stainted_%c",
			 wanted ? "" : "not_", bit_letter(bit));
		if (letter_unobservable(l, bit_letter(bit)))
			report_unobserved(l, test,
					  letter_unobservable(l, bit_letter(bit)));
		else if (readable)
			report(l, test, tainted_has_bit(tainted, bit) == wanted);
		else
			report_unobserved(l, test, "tainted unreadable");
	}
}

/* KLP_SYSFS/<module>/<file>, or KLP_SYSFS/<module> when file is NULL */
static void klp_path(const struct load *l, const char *file, char *buf,
		     size_t size)
{
	snprintf(buf, size, "%s/%s%s%s", KLP_SYSFS, l->mode->module->name,
		 file ? "/" : "", file ? file : "");
}

static bool klp_transition_done(const struct load *l)
{
	char path[PATH_SIZE];
	char text[8];

	klp_path(l, "transition", path, sizeof(path));
	return read_text(path, text, sizeof(text)) >= 0 && text[0] == '0';
}

/* the patch's kobject is released: its sysfs folder is gone */
static bool klp_gone(const struct load *l)
{
	char path[PATH_SIZE];

	klp_path(l, NULL, path, sizeof(path));
	return access(path, F_OK) && errno == ENOENT;
}

/*
 * klp_free_patch_finish() drops the patch's reference on its module only
 * after the kobject (the sysfs folder) is gone, from a work item: until
 * then delete_module() says EWOULDBLOCK (seen on Debian's 6.12.118 binary).
 */
static bool klp_module_released(const struct load *l)
{
	char path[PATH_SIZE];
	char text[16];

	snprintf(path, sizeof(path), "/sys/module/%s/refcnt",
		 l->mode->module->name);
	return read_text(path, text, sizeof(text)) >= 0 &&
	       strtol(text, NULL, 10) == 0;
}

/* polls done() every 10 ms; about how long it took, or -1 past KLP_WAIT_MS */
static int klp_wait(const struct load *l, bool (*done)(const struct load *l))
{
	const struct timespec step = { .tv_nsec = 10 * 1000 * 1000 };
	int waited;

	for (waited = 0; !done(l); waited += 10) {
		if (waited >= KLP_WAIT_MS)
			return -1;
		nanosleep(&step, NULL);
	}
	return waited;
}

/*
 * patch_enabled: the livepatch core registered the patch and enabled it.
 * Then the agent waits for the transition to finish, so that what it
 * reads next goes through the new function whichever task reads it.
 */
static void check_klp_enabled(const struct load *l)
{
	const char *name = l->mode->name;
	char path[PATH_SIZE];
	char enabled[8];
	int waited;

	if (!l->loaded) {
		report_unobserved(l, "patch_enabled", "module not loaded");
		return;
	}
	klp_path(l, "enabled", path, sizeof(path));
	if (read_text(path, enabled, sizeof(enabled)) < 0) {
		ktap_print_msg("%s: %s: %s", name, path, strerror(errno));
		report(l, "patch_enabled", false);
		return;
	}
	enabled[strcspn(enabled, "\n")] = '\0';
	ktap_print_msg("%s: %s = %s", name, path, enabled);

	waited = klp_wait(l, klp_transition_done);
	if (waited < 0)
		ktap_print_msg("%s: transition not finished after %d ms", name,
			       KLP_WAIT_MS);
	else
		ktap_print_msg("%s: transition finished after %d ms", name,
			       waited);
	report(l, "patch_enabled", !strcmp(enabled, "1"));
}

/* patch_applies: the patched file shows the replacement's marker */
static void check_klp_applies(const struct load *l)
{
	const struct klp_test *klp = l->mode->module->klp;
	const char *name = l->mode->name;
	char text[512];

	if (!l->loaded) {
		report_unobserved(l, "patch_applies", "module not loaded");
		return;
	}
	if (read_text(klp->file, text, sizeof(text)) < 0) {
		agent_error("%s: read %s: %s", name, klp->file, strerror(errno));
		report_unobserved(l, "patch_applies", "file unreadable");
		return;
	}
	ktap_print_msg("%s: %s = %.*s", name, klp->file,
		       (int)strcspn(text, "\n"), text);
	report(l, "patch_applies", !strcmp(text, klp->marker));
}

static bool events_present(const struct test_module *m)
{
	char path[PATH_SIZE];
	struct stat st;

	snprintf(path, sizeof(path), "%s/events/%s", tracefs, m->name);
	return !stat(path, &st) && S_ISDIR(st.st_mode);
}

/*
 * Enables the module's event where the kernel created it, has the module
 * fire it, and reads the trace. Without the event the module still
 * fires: a line must not appear then, whatever the tracepoint does.
 * Returns false when the agent itself failed.
 */
static bool fire_event(struct load *l, bool present, int value)
{
	const struct test_module *m = l->mode->module;
	char enable[PATH_SIZE];
	bool ok = true;

	snprintf(enable, sizeof(enable), "%s/events/%s/%s/enable", tracefs,
		 m->name, m->event);
	if (present && write_text(enable, "1")) {
		agent_error("%s: enable %s:%s: %s", l->mode->name, m->name,
			    m->event, strerror(errno));
		return false;
	}
	if (l->loaded)
		ok = m->fire(l, value);
	trace_read(l);
	/* an enabled event has no business outliving this mode */
	if (present && write_text(enable, "0")) {
		agent_error("%s: disable %s:%s: %s", l->mode->name, m->name,
			    m->event, strerror(errno));
		ok = false;
	}
	return ok && l->trace_read;
}

/*
 * Calls found(payload, arg) on each line of the trace that is event's,
 * stops at the first that returns true and reports whether one did.
 */
static bool trace_find(const struct load *l, const char *event,
		       bool (*found)(const char *payload, void *arg),
		       void *arg)
{
	const char *line = l->trace;

	while (*line) {
		size_t len = strcspn(line, "\n");
		char copy[512];
		const char *payload;

		if (len < sizeof(copy)) {
			memcpy(copy, line, len);
			copy[len] = '\0';
			payload = trace_event_payload(copy, event);
			if (payload && found(payload, arg))
				return true;
		}
		line += len;
		line += *line == '\n';
	}
	return false;
}

/* what check_events() looks for, and the payload it found */
struct fire_match {
	const struct test_module *module;
	int value;
	char payload[64];
};

static bool fire_line_found(const char *payload, void *arg)
{
	struct fire_match *match = arg;

	if (!match->module->fired(payload, match->value))
		return false;
	snprintf(match->payload, sizeof(match->payload), "%s", payload);
	return true;
}

/*
 * events_present and event_fires where a fixed kernel creates the
 * module's events, events_refused and event_silent where it refuses them
 */
static void check_events(struct load *l, int value)
{
	struct fire_match match = { .module = l->mode->module, .value = value };
	const struct test_module *m = l->mode->module;
	const char *name = l->mode->name;
	bool want = l->mode->events_want;
	const char *events = want ? "events_present" : "events_refused";
	const char *fires = want ? "event_fires" : "event_silent";
	bool present;
	bool fired;

	if (!m->event) {
		const char *why = "the distribution's signed module has no trace event of ours";

		/* the module_load line is still there to read */
		if (tracefs[0] && l->loaded)
			trace_read(l);
		report_unobserved(l, events, why);
		report_unobserved(l, fires, why);
		return;
	}
	if (!tracefs[0] || !l->loaded) {
		const char *why = tracefs[0] ? "module not loaded" : "no tracefs";

		report_unobserved(l, events, why);
		report_unobserved(l, fires, why);
		return;
	}

	present = events_present(m);
	ktap_print_msg("%s: %s/events/%s/ %s", name, tracefs, m->name,
		       present ? "exists" : "does not exist");
	report(l, events, present == want);

	if (!fire_event(l, present, value)) {
		report_unobserved(l, fires, "agent error");
		return;
	}
	fired = trace_find(l, m->event, fire_line_found, &match);
	if (fired)
		ktap_print_msg("%s: %s: %s", name, m->event, match.payload);
	else
		ktap_print_msg("%s: no %s line of this load in trace", name,
			       m->event);
	report(l, fires, fired == want);
}

/* room for show_module_flags()'s five letters and more */
#define MODULE_FLAGS_SIZE	16

/* what check_module_load() looks for, and the letters it found */
struct load_match {
	const char *module;
	char flags[MODULE_FLAGS_SIZE];
};

static bool module_load_found(const char *payload, void *arg)
{
	struct load_match *match = arg;

	return module_load_flags(payload, match->module, match->flags,
				 sizeof(match->flags));
}

static void check_module_load(const struct load *l)
{
	const struct test_module *m = l->mode->module;
	struct load_match match = { .module = m->name };
	const char *why = NULL;

	if (!l->loaded)
		why = "module not loaded";
	else if (!module_load_enabled)
		why = "module:module_load not enabled";
	else if (!l->trace_read)
		why = "trace unreadable";
	if (why) {
		report_letters(l, "module_load", m->load_letters,
			       l->mode->load_want, NULL, why);
		return;
	}

	if (trace_find(l, "module_load", module_load_found, &match))
		ktap_print_msg("%s: module_load: %s %s", l->mode->name,
			       m->name, match.flags);
	else
		ktap_print_msg("%s: no module_load line for %s in trace",
			       l->mode->name, m->name);
	/* show_module_flags() letters, same alphabet as the taint file */
	report_letters(l, "module_load", m->load_letters, l->mode->load_want,
		       match.flags, NULL);
}

/* what the load logged, one diagnostic a message */
static void check_dmesg(const struct load *l)
{
	const char *line = l->kmsg;

	if (!*line)
		ktap_print_msg("%s: dmesg: nothing logged", l->mode->name);
	while (*line) {
		int len = strcspn(line, "\n");

		ktap_print_msg("%s: dmesg: %.*s", l->mode->name, len, line);
		line += len;
		line += *line == '\n';
	}
}

static void check_log(const struct load *l)
{
	const struct test_module *m = l->mode->module;
	char test[40];
	size_t i;

	if (l->kmsg_read)
		check_dmesg(l);
	for (i = 0; i < m->nr_logs; i++) {
		bool wanted = l->mode->log_want & BIT(i);

		snprintf(test, sizeof(test), "log_%s%s", wanted ? "" : "no_",
			 m->logs[i].name);
		if (l->kmsg_read)
			report(l, test, !!strstr(l->kmsg, m->logs[i].needle) ==
				       wanted);
		else
			report_unobserved(l, test, "no kernel log");
	}
}

/*
 * A livepatch module stays referenced until its patch is disabled and
 * the transition back has finished; only then can it be deleted.
 */
static void klp_disable(const struct load *l)
{
	const char *name = l->mode->name;
	char path[PATH_SIZE];
	int waited;

	klp_path(l, "enabled", path, sizeof(path));
	if (write_text(path, "0")) {
		ktap_print_msg("%s: write 0 to %s: %s", name, path,
			       strerror(errno));
		return;
	}
	klp_path(l, NULL, path, sizeof(path));
	waited = klp_wait(l, klp_gone);
	if (waited < 0) {
		ktap_print_msg("%s: %s still there after %d ms", name, path,
			       KLP_WAIT_MS);
		return;
	}
	ktap_print_msg("%s: %s gone after %d ms", name, path, waited);
	waited = klp_wait(l, klp_module_released);
	if (waited < 0)
		ktap_print_msg("%s: %s still referenced after %d ms", name,
			       l->mode->module->name, KLP_WAIT_MS);
	else
		ktap_print_msg("%s: %s released after %d ms", name,
			       l->mode->module->name, waited);
}

static void check_unloads(const struct load *l)
{
	const struct test_module *m = l->mode->module;
	bool unloaded;

	if (!l->loaded) {
		report_unobserved(l, "unloads", "module not loaded");
		return;
	}
	if (m->klp)
		klp_disable(l);
	unloaded = !sys_delete_module(m->name, O_NONBLOCK);
	ktap_print_msg("%s: delete_module(%s) = %s", l->mode->name, m->name,
		       unloaded ? "0" : strerror(errno));
	report(l, "unloads", unloaded);
}

/* utt fires utt:utt_fire with the value written to its parameter */
static bool fire_by_parameter(const struct load *l, int value)
{
	char path[PATH_SIZE];
	char text[16];

	snprintf(path, sizeof(path), "/sys/module/%s/parameters/fire",
		 l->mode->module->name);
	snprintf(text, sizeof(text), "%d", value);
	if (!write_text(path, text))
		return true;
	agent_error("%s: write %s: %s", l->mode->name, path, strerror(errno));
	return false;
}

static bool utt_fired(const char *payload, int value)
{
	int fired;

	return trace_int_field(payload, "value", &fired) && fired == value;
}

/* tlp fires tlp:tlp_fire from the function it patched in */
static bool fire_by_reading(const struct load *l, int value __always_unused)
{
	const char *file = l->mode->module->klp->file;
	char text[512];

	if (read_text(file, text, sizeof(text)) >= 0)
		return true;
	agent_error("%s: read %s: %s", l->mode->name, file, strerror(errno));
	return false;
}

/* tlp counts the reads it served; which read this was does not matter */
static bool tlp_fired(const char *payload, int value __always_unused)
{
	int calls;

	return trace_int_field(payload, "calls", &calls) && calls > 0;
}

static const unsigned int utt_kernel_bits[] = {
	TAINT_OOT_MODULE, TAINT_FORCED_MODULE, TAINT_UNSIGNED_MODULE,
};

enum {
	UTT_LOG_VERIFICATION_FAILED,
	UTT_LOG_BAD_VERMAGIC,
	UTT_LOG_BAD_TAINT,
};

static const struct log_check utt_logs[] = {
	[UTT_LOG_VERIFICATION_FAILED] = {
		"verification_failed", "module verification failed" },
	[UTT_LOG_BAD_VERMAGIC] = { "bad_vermagic", "bad vermagic" },
	[UTT_LOG_BAD_TAINT] = {
		"bad_taint", "module has bad taint, not creating trace events" },
};

static const struct test_module utt = {
	.name = "utt",
	.taint_letters = "OFE",
	.kernel_bits = utt_kernel_bits,
	.nr_kernel_bits = ARRAY_SIZE(utt_kernel_bits),
	.event = "utt_fire",
	.fire = fire_by_parameter,
	.fired = utt_fired,
	.load_letters = "OFE",
	.logs = utt_logs,
	.nr_logs = ARRAY_SIZE(utt_logs),
};

/*
 * taintport.signed=<name>: on the distribution's own binary no module can
 * be signed with its key here, so one it signed stands in for the signed
 * utt (/taintport/<name>.ko). The same tests, but those about O and about
 * utt's event, which that module cannot show, are skipped and say why.
 */
static struct test_module vendor = {
	.name = vendor_name,
	.in_tree = true,
	.taint_letters = "OFE",
	.kernel_bits = utt_kernel_bits,
	.nr_kernel_bits = ARRAY_SIZE(utt_kernel_bits),
	.load_letters = "OFE",
	.logs = utt_logs,
	.nr_logs = ARRAY_SIZE(utt_logs),
};

/* module/tlp.c replaces cmdline_proc_show() */
static const struct klp_test tlp_klp = {
	.file = "/proc/cmdline",
	.marker = "taintport-livepatch\n",
};

static const unsigned int tlp_kernel_bits[] = { TAINT_LIVEPATCH };

enum {
	TLP_LOG_LIVEPATCH_TAINT,
	TLP_LOG_BAD_TAINT,
};

/* check_modinfo_livepatch() says so only once a boot: tlp loads once */
static const struct log_check tlp_logs[] = {
	[TLP_LOG_LIVEPATCH_TAINT] = {
		"livepatch_taint", "tainting kernel with TAINT_LIVEPATCH" },
	[TLP_LOG_BAD_TAINT] = {
		"bad_taint", "module has bad taint, not creating trace events" },
};

/* show_module_flags() has no K: the module_load line shows O alone */
static const struct test_module tlp = {
	.name = "tlp",
	.klp = &tlp_klp,
	.taint_letters = "OKE",
	.kernel_bits = tlp_kernel_bits,
	.nr_kernel_bits = ARRAY_SIZE(tlp_kernel_bits),
	.event = "tlp_fire",
	.fire = fire_by_reading,
	.fired = tlp_fired,
	.load_letters = "O",
	.logs = tlp_logs,
	.nr_logs = ARRAY_SIZE(tlp_logs),
};

/*
 * In this order: taint bits are sticky, so a later load sees earlier
 * ones, and the forced load must come after the unsigned one. The
 * livepatch comes after them: it is signed, so it adds only K (and O,
 * already set), and it patches /proc/cmdline, which the guard has read
 * already.
 *
 * What a kernel with the family's fixes does (the "ok" of every test):
 * the signature check taints an unsigned module E, not F
 * (TAINT_UNSIGNED_MODULE, 66cc69e34e86); tracing creates the events of
 * an E or K module and refuses those of an F one
 * (trace_module_has_bad_taint(), 57673c2b0baa and e7bb66f79a7b);
 * "module verification failed" is printed once a boot, "bad vermagic"
 * only while F is clear (kernel/module/main.c, kernel/module.c before
 * 5.19), and show_module_flags() prints O, F and E but no K.
 */
enum { MODE_SIGNED, MODE_UNSIGNED, MODE_FORCED, MODE_LIVEPATCH, NR_MODES };

static struct mode modes[NR_MODES] = {
	[MODE_SIGNED] = {
		.name = "signed", .module = &utt,
		.path = "/taintport/utt-signed.ko", .flags = 0,
		.taint_want = "O",
		.kernel_want = BIT(TAINT_OOT_MODULE),
		.events_want = true,
		.load_want = "O",
		.log_want = 0,
	},
	[MODE_UNSIGNED] = {
		.name = "unsigned", .module = &utt,
		.path = "/taintport/utt.ko", .flags = 0,
		.taint_want = "OE",
		.kernel_want = BIT(TAINT_OOT_MODULE) | BIT(TAINT_UNSIGNED_MODULE),
		.events_want = true,
		.load_want = "OE",
		.log_want = BIT(UTT_LOG_VERIFICATION_FAILED),
	},
	[MODE_FORCED] = {
		.name = "forced", .module = &utt,
		.path = "/taintport/utt.ko", .flags = MODULE_INIT_IGNORE_VERMAGIC,
		.taint_want = "OFE",
		.kernel_want = BIT(TAINT_FORCED_MODULE) | BIT(TAINT_OOT_MODULE) |
			       BIT(TAINT_UNSIGNED_MODULE),
		.events_want = false,
		.load_want = "OFE",
		.log_want = BIT(UTT_LOG_BAD_VERMAGIC) | BIT(UTT_LOG_BAD_TAINT),
	},
	[MODE_LIVEPATCH] = {
		.name = "livepatch", .module = &tlp,
		.path = "/taintport/tlp-signed.ko", .flags = 0,
		.taint_want = "OK",
		.kernel_want = BIT(TAINT_LIVEPATCH),
		.events_want = true,
		.load_want = "O",
		.log_want = BIT(TLP_LOG_LIVEPATCH_TAINT),
	},
};

/* the rows of the README's table that run_mode() reports for mode */
static unsigned int mode_tests(const struct mode *mode)
{
	const struct test_module *m = mode->module;

	/* loads, events_*, event_*, unloads */
	return 4 + strlen(m->taint_letters) + m->nr_kernel_bits +
	       (m->klp ? 2 : 0) + strlen(m->load_letters) + m->nr_logs;
}

/* mode's subtest: mode_tests() results, in the README's order */
static void run_mode(const struct mode *mode, int value)
{
	static struct load l;

	memset(&l, 0, sizeof(l));
	l.mode = mode;
	l.prefix = "";

	ktap_subtest_start(mode->name, mode_tests(mode));
	load(&l);
	check_loads(&l);
	check_module_taint(&l);
	check_kernel_taint(&l);
	if (mode->module->klp) {
		check_klp_enabled(&l);
		check_klp_applies(&l);
	}
	check_events(&l, value);
	check_module_load(&l);
	check_log(&l);
	check_unloads(&l);

	if (ktap_test_num() != mode_tests(mode))
		agent_error("%s: printed %u results, planned %u", mode->name,
			    ktap_test_num(), mode_tests(mode));
	ktap_subtest_end();
}

/*
 * The loads of the enforced subtest. Only the path and the flags matter
 * for the refused ones; the signed one is tested as the signed mode is.
 */
static const struct mode enforced_unsigned = {
	.name = "enforced", .module = &utt,
	.path = "/taintport/utt.ko", .flags = 0,
};

static const struct mode enforced_forced = {
	.name = "enforced", .module = &utt,
	.path = "/taintport/utt.ko", .flags = MODULE_INIT_IGNORE_VERMAGIC,
};

static struct mode enforced_signed = {
	.name = "enforced", .module = &utt,
	.path = "/taintport/utt-signed.ko", .flags = 0,
	.taint_want = "O",
	.events_want = true,
};

/*
 * sig_enforce is enable-only (bool_enable_only, 0644, in
 * kernel/module/signing.c, kernel/module.c before 5.19): once on, it
 * stays on for the rest of the boot, so this subtest comes last.
 */
static bool enforce_signatures(void)
{
	char text[8] = "";

	if (write_text(SIG_ENFORCE, "1"))
		ktap_print_msg("enforced: write 1 to %s: %s", SIG_ENFORCE,
			       strerror(errno));
	if (read_text(SIG_ENFORCE, text, sizeof(text)) < 0) {
		ktap_print_msg("enforced: read %s: %s", SIG_ENFORCE,
			       strerror(errno));
		return false;
	}
	text[strcspn(text, "\n")] = '\0';
	ktap_print_msg("enforced: %s = %s", SIG_ENFORCE, text);
	return !strcmp(text, "Y");
}

/* the tests a refused load has: 5 for each of the two */
#define REFUSED_TESTS	5

/*
 * <prefix>refused: finit_module() failed with EKEYREJECTED, which
 * module_sig_check() returns for a module without a valid signature once
 * enforcement is on (a forced load counts as one: its signature is not
 * even looked at); <prefix>not_loaded, <prefix>no_events: nothing of it
 * is left; <prefix>no_new_taint: the kernel's taint is unchanged;
 * <prefix>log_rejected: the kernel said why.
 */
static void check_refused(const struct mode *mode, const char *prefix,
			  bool enforcing)
{
	unsigned long before = 0;
	unsigned long after = 0;
	struct load l = { .mode = mode, .prefix = prefix };
	char path[PATH_SIZE];
	bool tainted_known;
	bool present;

	if (!enforcing) {
		/* a load now would test nothing and taint the boot */
		static const char *const tests[] = {
			"refused", "not_loaded", "no_events", "no_new_taint",
			"log_rejected",
		};
		size_t i;

		for (i = 0; i < ARRAY_SIZE(tests); i++)
			report_unobserved(&l, tests[i], "sig_enforce not on");
		return;
	}

	tainted_known = kernel_tainted(&before);
	load(&l);
	tainted_known = tainted_known && kernel_tainted(&after);
	ktap_print_msg("enforced: finit_module(%s, flags=%d) = %s", mode->path,
		       mode->flags, l.loaded ? "0" : strerror(l.load_errno));
	report(&l, "refused", !l.loaded && l.load_errno == EKEYREJECTED);

	snprintf(path, sizeof(path), "/sys/module/%s", mode->module->name);
	present = !access(path, F_OK);
	report(&l, "not_loaded", !present);
	if (l.loaded && sys_delete_module(mode->module->name, O_NONBLOCK))
		agent_error("enforced: delete_module(%s): %s",
			    mode->module->name, strerror(errno));

	if (tracefs[0])
		report(&l, "no_events", !events_present(mode->module));
	else
		report_unobserved(&l, "no_events", "no tracefs");

	if (tainted_known) {
		ktap_print_msg("enforced: tainted = %lu, then %lu", before, after);
		report(&l, "no_new_taint", before == after);
	} else {
		agent_error("enforced: cannot read /proc/sys/kernel/tainted");
		report_unobserved(&l, "no_new_taint", "tainted unreadable");
	}

	if (l.kmsg_read) {
		check_dmesg(&l);
		report(&l, "log_rejected",
		       strstr(l.kmsg, "Loading of unsigned module is rejected"));
	} else {
		report_unobserved(&l, "log_rejected", "no kernel log");
	}
}

/* sig_enforce_enabled, two refused loads, and the signed load's tests */
static unsigned int enforced_tests(void)
{
	return 1 + 2 * REFUSED_TESTS + 4 + strlen(utt.taint_letters);
}

/*
 * The fix must not weaken signature enforcement: with sig_enforce on, an
 * unsigned module is refused, forced or not, and leaves nothing behind,
 * while a signed one still loads and traces.
 */
static void run_enforced(int value)
{
	struct load l = { .mode = &enforced_signed, .prefix = "signed_" };
	bool enforcing;

	ktap_subtest_start("enforced", enforced_tests());
	enforcing = enforce_signatures();
	ktap_test_result(enforcing, "sig_enforce_enabled");
	result_counted();

	check_refused(&enforced_unsigned, "unsigned_", enforcing);
	check_refused(&enforced_forced, "forced_", enforcing);

	load(&l);
	check_loads(&l);
	check_module_taint(&l);
	check_events(&l, value);
	check_unloads(&l);

	if (ktap_test_num() != enforced_tests())
		agent_error("enforced: printed %u results, planned %u",
			    ktap_test_num(), enforced_tests());
	ktap_subtest_end();
}

/*
 * The signed loads take the distribution's module, and the livepatch,
 * which cannot carry the distribution's signature either, loads unsigned.
 */
static void use_vendor_module(void)
{
	snprintf(vendor_path, sizeof(vendor_path), "/taintport/%s.ko",
		 vendor_name);
	modes[MODE_SIGNED].module = &vendor;
	modes[MODE_SIGNED].path = vendor_path;
	modes[MODE_LIVEPATCH].path = "/taintport/tlp.ko";
	modes[MODE_LIVEPATCH].unsigned_why =
		"tlp cannot carry the distribution's signature: loaded unsigned";
	enforced_signed.module = &vendor;
	enforced_signed.path = vendor_path;
	ktap_print_msg("taintport-agent: signed loads use %s, signed by the distribution",
		       vendor_path);
}

/* the harness's self-test of broken runs; returns unless it ends the run */
static void inject_fault(void)
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
		break;
	case FAULT_UNKNOWN:
		agent_error("unknown taintport.fault=");
		break;
	case FAULT_NONE:
	case FAULT_TRUNCATE:
		break;
	}
}

int main(void)
{
	static char cmdline[CMDLINE_SIZE];
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
	/* the plan follows the version line at once, as kunit_parser wants */
	ktap_print_header();
	ktap_set_plan(ARRAY_SIZE(modes) + 1);
	for (i = 0; i < ARRAY_SIZE(modes); i++)
		plan += mode_tests(&modes[i]);
	plan += enforced_tests();
	/*
	 * Keep kernel messages off the console so they cannot split a KTAP
	 * line; the agent reads them from /dev/kmsg instead. A panic still
	 * prints: panic() turns the console verbose again.
	 */
	if (klogctl(SYSLOG_ACTION_CONSOLE_LEVEL, NULL, 1))
		agent_error("console loglevel: %s", strerror(errno));
	fault = cmdline_fault(cmdline);
	inject_fault();

	if (!cmdline_signed_module(cmdline, vendor_name, sizeof(vendor_name)))
		agent_error("taintport.signed= is not a module name, using utt-signed.ko");
	else if (vendor_name[0])
		use_vendor_module();

	unsigned_letter = cmdline_letter(cmdline);
	if (!unsigned_letter) {
		agent_error("taintport.letter= is not one letter A-Z, using E");
		unsigned_letter = 'E';
	}
	ktap_print_msg("taintport-agent: kernel %s, unsigned letter %c",
		       KRELEASE, unsigned_letter);
	print_kernel_version();
	tracefs_setup();

	for (i = 0; i < ARRAY_SIZE(modes); i++)
		run_mode(&modes[i], 1000 + i);
	run_enforced(1000 + i);

	if (ktap_case_count() != plan)
		agent_error("printed %u test results, planned %u",
			    ktap_case_count(), plan);
	printf("# taintport-agent: end status=%d\n", status);
	vm_end(status);
	return status;
}
