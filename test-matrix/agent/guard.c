// SPDX-License-Identifier: GPL-2.0
/*
 * The guard: the agent refuses to run anywhere but the test guest, and
 * says why before it opens any module (test-matrix/README.md, "Guard").
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "agent.h"
#include "parse.h"

#ifndef KRELEASE
#error "KRELEASE must name the kernel release the agent is built for"
#endif

#define TOKEN_PATH	"/taintport/token"

/* Returns NULL when the agent may run, else why not. */
const char *guard(const char *cmdline)
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
