// SPDX-License-Identifier: GPL-2.0
/*
 * Loading a module in each mode: the file and flags a subtest's data
 * give, or on the distribution's own binary (taintport.signed=<name>) a
 * module it signed in place of a signed load, or the module's unsigned
 * file where no stand-in can serve.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/module.h>

#include "agent.h"

/* glibc has no wrappers for these two */
static int sys_finit_module(int fd, const char *params, int flags)
{
	return syscall(SYS_finit_module, fd, params, flags);
}

static int sys_delete_module(const char *name, unsigned int flags)
{
	return syscall(SYS_delete_module, name, flags);
}

/*
 * The distribution's signed module, standing in for a signed load: the
 * same tests, but those about O and about our event, which it cannot
 * show, are skipped and say why.
 */
static struct test_module stand_in = { .in_tree = true };
static char stand_in_name[MODULE_NAME_SIZE];

/* how sub loads on this boot; signed_name is taintport.signed=, "" when none */
void mode_of(struct mode *mode, const struct subtest *sub, const char *signed_name)
{
	enum distribution dist = signed_name[0] ? sub->distribution : DIST_AS_IS;

	mode->module = sub->module;
	mode->flags = sub->force ? MODULE_INIT_IGNORE_VERMAGIC : 0;
	mode->unsigned_why = NULL;
	snprintf(mode->path, sizeof(mode->path), "/taintport/%s", sub->file);
	if (dist == DIST_STAND_IN) {
		snprintf(stand_in_name, sizeof(stand_in_name), "%s", signed_name);
		stand_in.name = stand_in_name;
		mode->module = &stand_in;
		snprintf(mode->path, sizeof(mode->path), "/taintport/%s.ko",
			 signed_name);
	} else if (dist == DIST_UNSIGNED) {
		snprintf(mode->path, sizeof(mode->path), "/taintport/%s.ko",
			 sub->module->name);
		snprintf(mode->why, sizeof(mode->why),
			 "%s cannot carry the distribution's signature: loaded unsigned",
			 sub->module->name);
		mode->unsigned_why = mode->why;
	}
}

/* the load, and what the kernel logged while it ran */
void load(struct load *l)
{
	int kmsg;
	int fd;

	l->tried = true;
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
	diag(l, "finit_module(%s, flags=%d) = %s", l->mode->path, l->mode->flags,
	     l->loaded ? "0" : strerror(l->load_errno));

	if (kmsg >= 0) {
		kmsg_drain(kmsg, l);
		close(kmsg);
	}
}

/* a livepatch is disabled first: until then its module stays referenced */
bool unload(struct load *l)
{
	const char *name = l->mode->module->name;
	bool unloaded;

	if (l->mode->module->patches)
		klp_disable(l);
	unloaded = !sys_delete_module(name, O_NONBLOCK);
	diag(l, "delete_module(%s) = %s", name, unloaded ? "0" : strerror(errno));
	l->loaded = !unloaded;
	return unloaded;
}
