// SPDX-License-Identifier: GPL-2.0
/*
 * Checking events: tracefs, whether the kernel created the module's
 * events, whether its event reaches the trace when the module fires it,
 * and the module:module_load line of the load.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent.h"
#include "parse.h"

char tracefs[32];		/* "" when no tracefs could be found */
static bool module_load_enabled;

static void tracefs_path(char *buf, size_t size, const char *file)
{
	snprintf(buf, size, "%s/%s", tracefs, file);
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
void tracefs_setup(void)
{
	char path[PATH_SIZE];

	if (!tracefs_mount("tracefs", "/sys/kernel/tracing",
			   "/sys/kernel/tracing") &&
	    !tracefs_mount("debugfs", "/sys/kernel/debug",
			   "/sys/kernel/debug/tracing")) {
		agent_error("no tracefs at /sys/kernel/tracing or /sys/kernel/debug/tracing");
		return;
	}
	report_msg("tracefs: %s", tracefs);

	tracefs_path(path, sizeof(path), "events/module/module_load/enable");
	if (write_text(path, "1"))
		agent_error("enable module:module_load: %s", strerror(errno));
	else
		module_load_enabled = true;
}

/* opening "trace" with O_TRUNC empties the ring buffer */
void trace_clear(void)
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
		agent_error("%s: %s longer than %zu bytes", l->subtest, path,
			    sizeof(l->trace) - 1);
	l->trace_read = true;
}

bool events_present(const struct test_module *m)
{
	char path[PATH_SIZE];
	struct stat st;

	snprintf(path, sizeof(path), "%s/events/%s", tracefs, m->name);
	return !stat(path, &st) && S_ISDIR(st.st_mode);
}

/* 1 when events/<module>/ exists, -1 when not */
int events_state(struct load *l)
{
	if (!l->events_state) {
		l->events_state = events_present(l->mode->module) ? 1 : -1;
		diag(l, "%s/events/%s/ %s", tracefs, l->mode->module->name,
		     l->events_state > 0 ? "exists" : "does not exist");
	}
	return l->events_state;
}

/* the module fires its event; false when the agent failed */
static bool fire(const struct load *l)
{
	const struct test_module *m = l->mode->module;
	char path[PATH_SIZE];
	char text[512];

	if (m->fire == FIRE_READ) {
		if (read_text(m->patches, text, sizeof(text)) >= 0)
			return true;
		agent_error("%s: read %s: %s", l->subtest, m->patches,
			    strerror(errno));
		return false;
	}
	snprintf(path, sizeof(path), "/sys/module/%s/parameters/fire", m->name);
	snprintf(text, sizeof(text), "%d", l->value);
	if (!write_text(path, text))
		return true;
	agent_error("%s: write %s: %s", l->subtest, path, strerror(errno));
	return false;
}

/*
 * Calls found(payload, arg) on each line of the trace that is event's,
 * stops at the first that returns true and reports whether one did.
 */
static bool trace_find(const struct load *l, const char *event,
		       bool (*found)(const char *payload, void *arg), void *arg)
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

/*
 * The payload is this firing's: a module fired by a parameter shows the
 * value written, one fired by a read counts the reads (any will do).
 */
static bool fired_line(const char *payload, void *arg)
{
	const struct load *l = arg;
	const struct test_module *m = l->mode->module;
	int value;

	if (!trace_int_field(payload, m->field, &value))
		return false;
	if (m->fire == FIRE_PARAMETER ? value != l->value : value <= 0)
		return false;
	diag(l, "%s: %s", m->event, payload);
	return true;
}

/*
 * Enables the module's event where the kernel created it, has the module
 * fire it, and reads the trace: 1 when this firing's line is there, -1
 * when not, -2 when the agent failed. Without the event the module still
 * fires: a line must not appear then, whatever the tracepoint does.
 */
int fired_state(struct load *l)
{
	const struct test_module *m = l->mode->module;
	bool present = events_state(l) > 0;
	char enable[PATH_SIZE];
	bool ok;

	if (l->fired_state)
		return l->fired_state;
	snprintf(enable, sizeof(enable), "%s/events/%s/%s/enable", tracefs,
		 m->name, m->event);
	if (present && write_text(enable, "1")) {
		agent_error("%s: enable %s:%s: %s", l->subtest, m->name, m->event,
			    strerror(errno));
		return l->fired_state = -2;
	}
	ok = fire(l);
	trace_read(l);
	/* an enabled event has no business outliving this load */
	if (present && write_text(enable, "0")) {
		agent_error("%s: disable %s:%s: %s", l->subtest, m->name,
			    m->event, strerror(errno));
		ok = false;
	}
	if (!ok || !l->trace_read)
		return l->fired_state = -2;
	l->fired_state = trace_find(l, m->event, fired_line, l) ? 1 : -1;
	if (l->fired_state < 0)
		diag(l, "no %s line of this load in trace", m->event);
	return l->fired_state;
}

/* what module_load_flags_of() looks for, and the letters it found */
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

/*
 * The letters of the load's module:module_load line (show_module_flags(),
 * the taint file's alphabet) in l->load_flags, "" when there is none:
 * 1 then, -1 when the trace cannot tell.
 */
int module_load_state(struct load *l)
{
	struct load_match match = { .module = l->mode->module->name };

	if (l->load_flags_state)
		return l->load_flags_state;
	if (!l->trace_read)
		trace_read(l);
	if (!l->trace_read)
		return l->load_flags_state = -1;
	if (trace_find(l, "module_load", module_load_found, &match))
		diag(l, "module_load: %s %s", match.module, match.flags);
	else
		diag(l, "no module_load line for %s in trace", match.module);
	snprintf(l->load_flags, sizeof(l->load_flags), "%s", match.flags);
	return l->load_flags_state = 1;
}

bool module_load_traced(void)
{
	return module_load_enabled;
}
