// SPDX-License-Identifier: GPL-2.0
/*
 * Signature enforcement, turned on for the last subtest: the fixes must
 * not weaken it.
 */
#include <errno.h>
#include <string.h>

#include "agent.h"

#define SIG_ENFORCE	"/sys/module/module/parameters/sig_enforce"

/*
 * sig_enforce is enable-only (bool_enable_only, 0644, in
 * kernel/module/signing.c, kernel/module.c before 5.19): once on, it
 * stays on for the rest of the boot, so its subtest comes last.
 */
bool enforce_signatures(void)
{
	char text[8] = "";

	if (write_text(SIG_ENFORCE, "1"))
		report_msg("enforced: write 1 to %s: %s", SIG_ENFORCE,
			   strerror(errno));
	if (read_text(SIG_ENFORCE, text, sizeof(text)) < 0) {
		report_msg("enforced: read %s: %s", SIG_ENFORCE, strerror(errno));
		return false;
	}
	text[strcspn(text, "\n")] = '\0';
	report_msg("enforced: %s = %s", SIG_ENFORCE, text);
	return !strcmp(text, "Y");
}
