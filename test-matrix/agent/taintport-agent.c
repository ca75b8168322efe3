// SPDX-License-Identifier: GPL-2.0
/*
 * taintport-agent - load utt three ways in the test guest, print KTAP
 *
 * Runs from the initramfs (dracut module 50taintport) of a throw-away
 * QEMU guest: loads /taintport/utt-signed.ko, then /taintport/utt.ko,
 * then utt.ko again with the vermagic check off, and reports after each
 * load what the kernel did to the module's taint, the kernel's taint,
 * the module's trace events and the kernel log. Then it ends the VM.
 *
 * test-matrix/README.md is the contract: the guard, the checks and
 * their order, the output. Whether a fact is wanted is not decided here.
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
#include <unistd.h>
#include <linux/module.h>

#include "ktap.h"
#include "parse.h"

#ifndef KRELEASE
#error "KRELEASE must name the kernel release the agent is built for"
#endif

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

#define TOKEN_PATH		"/taintport/token"
#define MODULE_NAME		"utt"
#define MODULE_SYSFS		"/sys/module/" MODULE_NAME

/* bit numbers of include/linux/panic.h (kernel.h before 6.0) */
#define TAINT_FORCED_MODULE	1
#define TAINT_OOT_MODULE	12
#define TAINT_UNSIGNED_MODULE	13

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

/* results per load mode: the rows of the README's table */
#define CHECKS_PER_MODE		16

struct mode {
	const char *name;
	const char *path;
	int flags;
};

/* in this order: taint bits are sticky, so a later load sees earlier ones */
static const struct mode modes[] = {
	{ "signed", "/taintport/utt-signed.ko", 0 },
	{ "unsigned", "/taintport/utt.ko", 0 },
	{ "forced", "/taintport/utt.ko", MODULE_INIT_IGNORE_VERMAGIC },
};

/* what one load did, gathered before its results are printed */
struct load {
	const struct mode *mode;
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
	if (fault == FAULT_TRUNCATE &&
	    ktap_test_num() == ARRAY_SIZE(modes) * CHECKS_PER_MODE / 2)
		vm_end(0);
}

static void report(const struct load *l, const char *check, bool holds)
{
	ktap_test_result(holds, "%s_%s", l->mode->name, check);
	result_counted();
}

/* a fact the agent could not observe is not a fact that does not hold */
static void report_unobserved(const struct load *l, const char *check,
			      const char *why)
{
	ktap_test_result_skip(why, "%s_%s", l->mode->name, check);
	result_counted();
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
	const char *name = l->mode->name;
	char taint[32] = "";

	if (l->loaded &&
	    read_text(MODULE_SYSFS "/taint", taint, sizeof(taint)) < 0) {
		agent_error("%s: read %s/taint: %s", name, MODULE_SYSFS,
			    strerror(errno));
		report_unobserved(l, "module_taint_O", "taint unreadable");
		report_unobserved(l, "module_taint_F", "taint unreadable");
		report_unobserved(l, "module_taint_E", "taint unreadable");
		return;
	}
	taint[strcspn(taint, "\n")] = '\0';

	if (l->loaded)
		ktap_print_msg("%s: %s/taint = %s", name, MODULE_SYSFS, taint);
	else
		ktap_print_msg("%s: %s/taint: module not loaded", name,
			       MODULE_SYSFS);
	if (unsigned_letter != 'E')
		ktap_print_msg("%s: module_taint_E looks for '%c' (taintport.letter)",
			       name, unsigned_letter);
	report(l, "module_taint_O", taint_has_letter(taint, 'O'));
	report(l, "module_taint_F", taint_has_letter(taint, 'F'));
	report(l, "module_taint_E", taint_has_letter(taint, unsigned_letter));
}

static void check_kernel_taint(const struct load *l)
{
	unsigned long tainted;
	char text[32];

	if (read_text("/proc/sys/kernel/tainted", text, sizeof(text)) < 0 ||
	    !tainted_parse(text, &tainted)) {
		agent_error("%s: cannot read /proc/sys/kernel/tainted",
			    l->mode->name);
		report_unobserved(l, "kernel_taint_bit12", "tainted unreadable");
		report_unobserved(l, "kernel_taint_bit1", "tainted unreadable");
		report_unobserved(l, "kernel_taint_bit13", "tainted unreadable");
		return;
	}
	ktap_print_msg("%s: tainted = %lu", l->mode->name, tainted);
	report(l, "kernel_taint_bit12",
	       tainted_has_bit(tainted, TAINT_OOT_MODULE));
	report(l, "kernel_taint_bit1",
	       tainted_has_bit(tainted, TAINT_FORCED_MODULE));
	report(l, "kernel_taint_bit13",
	       tainted_has_bit(tainted, TAINT_UNSIGNED_MODULE));
}

static bool events_present(void)
{
	char path[PATH_SIZE];
	struct stat st;

	tracefs_path(path, sizeof(path), "events/" MODULE_NAME);
	return !stat(path, &st) && S_ISDIR(st.st_mode);
}

/*
 * Enables utt:utt_fire where the kernel created it, writes value to the
 * module's fire parameter, and reads the trace. Without the event the
 * parameter is still written: a line must not appear then, whatever the
 * tracepoint does. Returns false when the agent itself failed.
 */
static bool fire_event(struct load *l, bool present, int value)
{
	char enable[PATH_SIZE];
	char text[16];
	bool ok = true;

	tracefs_path(enable, sizeof(enable),
		     "events/" MODULE_NAME "/utt_fire/enable");
	if (present && write_text(enable, "1")) {
		agent_error("%s: enable utt:utt_fire: %s", l->mode->name,
			    strerror(errno));
		return false;
	}
	if (l->loaded) {
		snprintf(text, sizeof(text), "%d", value);
		if (write_text(MODULE_SYSFS "/parameters/fire", text)) {
			agent_error("%s: write %s/parameters/fire: %s",
				    l->mode->name, MODULE_SYSFS,
				    strerror(errno));
			ok = false;
		}
	}
	trace_read(l);
	/* an enabled event has no business outliving this mode */
	if (present && write_text(enable, "0")) {
		agent_error("%s: disable utt:utt_fire: %s", l->mode->name,
			    strerror(errno));
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

static bool fire_line_found(const char *payload, void *arg)
{
	int value;

	return utt_fire_value(payload, &value) && value == *(int *)arg;
}

static void check_events(struct load *l, int value)
{
	const char *name = l->mode->name;
	bool present;

	if (!tracefs[0]) {
		report_unobserved(l, "events_present", "no tracefs");
		report_unobserved(l, "event_fires", "no tracefs");
		return;
	}

	present = events_present();
	ktap_print_msg("%s: %s/events/%s/ %s", name, tracefs, MODULE_NAME,
		       present ? "exists" : "does not exist");
	report(l, "events_present", present);

	if (!fire_event(l, present, value)) {
		report_unobserved(l, "event_fires", "agent error");
		return;
	}
	if (trace_find(l, "utt_fire", fire_line_found, &value)) {
		ktap_print_msg("%s: utt_fire: value=%d", name, value);
		report(l, "event_fires", true);
	} else {
		ktap_print_msg("%s: no utt_fire line with value=%d in trace",
			       name, value);
		report(l, "event_fires", false);
	}
}

/* room for show_module_flags()'s five letters and more */
#define MODULE_FLAGS_SIZE	16

static bool module_load_found(const char *payload, void *arg)
{
	return module_load_flags(payload, MODULE_NAME, arg, MODULE_FLAGS_SIZE);
}

static void check_module_load(const struct load *l)
{
	const char *why = NULL;
	char flags[MODULE_FLAGS_SIZE] = "";

	if (!module_load_enabled)
		why = "module:module_load not enabled";
	else if (!l->trace_read)
		why = "trace unreadable";
	if (why) {
		report_unobserved(l, "module_load_O", why);
		report_unobserved(l, "module_load_F", why);
		report_unobserved(l, "module_load_E", why);
		return;
	}

	if (trace_find(l, "module_load", module_load_found, flags))
		ktap_print_msg("%s: module_load: %s %s", l->mode->name,
			       MODULE_NAME, flags);
	else
		ktap_print_msg("%s: no module_load line for %s in trace",
			       l->mode->name, MODULE_NAME);
	/* show_module_flags() letters, same alphabet as the taint file */
	report(l, "module_load_O", taint_has_letter(flags, 'O'));
	report(l, "module_load_F", taint_has_letter(flags, 'F'));
	report(l, "module_load_E", taint_has_letter(flags, unsigned_letter));
}

static void check_log(const struct load *l)
{
	const char *line = l->kmsg;

	if (!l->kmsg_read) {
		report_unobserved(l, "log_verification_failed", "no kernel log");
		report_unobserved(l, "log_bad_vermagic", "no kernel log");
		report_unobserved(l, "log_bad_taint", "no kernel log");
		return;
	}

	if (!*line)
		ktap_print_msg("%s: dmesg: nothing logged", l->mode->name);
	while (*line) {
		int len = strcspn(line, "\n");

		ktap_print_msg("%s: dmesg: %.*s", l->mode->name, len, line);
		line += len;
		line += *line == '\n';
	}
	report(l, "log_verification_failed",
	       strstr(l->kmsg, "module verification failed"));
	report(l, "log_bad_vermagic", strstr(l->kmsg, "bad vermagic"));
	report(l, "log_bad_taint",
	       strstr(l->kmsg, "module has bad taint, not creating trace events"));
}

static void check_unloads(const struct load *l)
{
	bool unloaded = !sys_delete_module(MODULE_NAME, O_NONBLOCK);

	ktap_print_msg("%s: delete_module(%s) = %s", l->mode->name,
		       MODULE_NAME, unloaded ? "0" : strerror(errno));
	report(l, "unloads", unloaded);
}

/* the CHECKS_PER_MODE results of one mode, in the README's order */
static void run_mode(const struct mode *mode, int value)
{
	static struct load l;

	memset(&l, 0, sizeof(l));
	l.mode = mode;

	load(&l);
	check_loads(&l);
	check_module_taint(&l);
	check_kernel_taint(&l);
	check_events(&l, value);
	check_module_load(&l);
	check_log(&l);
	check_unloads(&l);
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
	static char cmdline[4096];
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
	ktap_print_header();
	/*
	 * Keep kernel messages off the console so they cannot split a KTAP
	 * line; the agent reads them from /dev/kmsg instead. A panic still
	 * prints: panic() turns the console verbose again.
	 */
	if (klogctl(SYSLOG_ACTION_CONSOLE_LEVEL, NULL, 1))
		agent_error("console loglevel: %s", strerror(errno));
	fault = cmdline_fault(cmdline);
	inject_fault();
	ktap_set_plan(ARRAY_SIZE(modes) * CHECKS_PER_MODE);

	unsigned_letter = cmdline_letter(cmdline);
	if (!unsigned_letter) {
		agent_error("taintport.letter= is not one letter A-Z, using E");
		unsigned_letter = 'E';
	}
	ktap_print_msg("taintport-agent: kernel %s, unsigned letter %c",
		       KRELEASE, unsigned_letter);
	tracefs_setup();

	for (i = 0; i < ARRAY_SIZE(modes); i++)
		run_mode(&modes[i], 1000 + i);

	if (ktap_test_num() != ARRAY_SIZE(modes) * CHECKS_PER_MODE)
		agent_error("printed %u results, planned %zu", ktap_test_num(),
			    ARRAY_SIZE(modes) * CHECKS_PER_MODE);
	printf("# taintport-agent: end status=%d\n", status);
	vm_end(status);
	return status;
}
