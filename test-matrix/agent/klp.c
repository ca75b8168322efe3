// SPDX-License-Identifier: GPL-2.0
/*
 * The livepatch steps, as tools/testing/selftests/livepatch/functions.sh
 * takes them: the patch is enabled and its transition waited for before
 * anything is read through it, and disabled (the transition back waited
 * for, and the module's reference) before its module can be deleted.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agent.h"

/*
 * How long a livepatch transition may take before the agent gives up
 * waiting. With reliable stack traces it finishes at once; the livepatch
 * core retries a blocked one every second, so this allows several tries.
 */
#define KLP_WAIT_MS	10000

/* the patch's sysfs folder's file, or the folder when file is NULL */
static void klp_path(const struct load *l, const char *file, char *buf,
		     size_t size)
{
	snprintf(buf, size, "%s%s%s", l->mode->module->sysfs,
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
 * 1 when the livepatch core registered the patch and enabled it, -1 when
 * not. Then waits for the transition to finish, so that what is read next
 * goes through the new function whichever task reads it.
 */
int klp_enabled(struct load *l)
{
	char path[PATH_SIZE];
	char enabled[8];
	int waited;

	if (l->klp_state)
		return l->klp_state;
	klp_path(l, "enabled", path, sizeof(path));
	if (read_text(path, enabled, sizeof(enabled)) < 0) {
		diag(l, "%s: %s", path, strerror(errno));
		return l->klp_state = -1;
	}
	enabled[strcspn(enabled, "\n")] = '\0';
	diag(l, "%s = %s", path, enabled);

	waited = klp_wait(l, klp_transition_done);
	if (waited < 0)
		diag(l, "transition not finished after %d ms", KLP_WAIT_MS);
	else
		diag(l, "transition finished after %d ms", waited);
	return l->klp_state = strcmp(enabled, "1") ? -1 : 1;
}

/* 1 when the patched file shows the replacement's marker, 0 when not, -1 unreadable */
int klp_applies(struct load *l)
{
	const struct test_module *m = l->mode->module;
	char text[512];

	if (read_text(m->patches, text, sizeof(text)) < 0) {
		agent_error("%s: read %s: %s", l->subtest, m->patches,
			    strerror(errno));
		return -1;
	}
	diag(l, "%s = %.*s", m->patches, (int)strcspn(text, "\n"), text);
	return !strcmp(text, m->marker);
}

void klp_disable(const struct load *l)
{
	char path[PATH_SIZE];
	int waited;

	klp_path(l, "enabled", path, sizeof(path));
	if (write_text(path, "0")) {
		diag(l, "write 0 to %s: %s", path, strerror(errno));
		return;
	}
	klp_path(l, NULL, path, sizeof(path));
	waited = klp_wait(l, klp_gone);
	if (waited < 0) {
		diag(l, "%s still there after %d ms", path, KLP_WAIT_MS);
		return;
	}
	diag(l, "%s gone after %d ms", path, waited);
	waited = klp_wait(l, klp_module_released);
	if (waited < 0)
		diag(l, "%s still referenced after %d ms", l->mode->module->name,
		     KLP_WAIT_MS);
	else
		diag(l, "%s released after %d ms", l->mode->module->name, waited);
}
