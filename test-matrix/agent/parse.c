// SPDX-License-Identifier: GPL-2.0
/*
 * Read the text the kernel shows the agent.
 *
 * Each function takes the kernel's text as it appears in the guest
 * (/proc/cmdline, /proc/sys/kernel/tainted, /sys/module/<m>/taint,
 * /dev/kmsg records, tracefs "trace" lines) and answers one question.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "parse.h"

#define CMDLINE_SPACE " \t\n"

/*
 * The value of the last "key=value" token, as the kernel lets a later
 * parameter override an earlier one. Tokens after "--" belong to init,
 * not to the kernel, so they are not parameters. Quoted values are not
 * understood: the harness never quotes its parameters.
 */
bool cmdline_value(const char *cmdline, const char *key,
		   char *value, size_t size)
{
	size_t key_len = strlen(key);
	bool found = false;
	const char *p = cmdline;

	for (;;) {
		const char *token;
		size_t len;

		p += strspn(p, CMDLINE_SPACE);
		token = p;
		len = strcspn(p, CMDLINE_SPACE);
		p += len;
		if (!len || (len == 2 && !strncmp(token, "--", 2)))
			break;
		if (len <= key_len || token[key_len] != '=' ||
		    strncmp(token, key, key_len))
			continue;

		len -= key_len + 1;
		/* a value that does not fit must not pass as a shorter one */
		found = len < size;
		if (found) {
			memcpy(value, token + key_len + 1, len);
			value[len] = '\0';
		}
	}
	return found;
}

enum fault cmdline_fault(const char *cmdline)
{
	char value[16];

	if (!cmdline_value(cmdline, "taintport.fault", value, sizeof(value)))
		return FAULT_NONE;
	if (!strcmp(value, "hang"))
		return FAULT_HANG;
	if (!strcmp(value, "panic"))
		return FAULT_PANIC;
	if (!strcmp(value, "truncate"))
		return FAULT_TRUNCATE;
	return FAULT_UNKNOWN;
}

/*
 * The letter the tree under test prints for a taint: fallback unless
 * key= names another, 0 when that is not a single upper-case letter (the
 * kernel's taint letters all are).
 */
char cmdline_letter(const char *cmdline, const char *key, char fallback)
{
	char value[4];

	if (!cmdline_value(cmdline, key, value, sizeof(value)))
		return fallback;
	if (value[0] < 'A' || value[0] > 'Z' || value[1])
		return 0;
	return value[0];
}

/*
 * The module named by taintport.signed=, a module the distribution signed
 * that stands in for a signed load on the distribution's own binary
 * kernel: true with name empty when there is none, false when the value
 * is not a module name (lower case, digits, '_'), which would otherwise
 * become part of a path.
 */
bool cmdline_signed_module(const char *cmdline, char *name, size_t size)
{
	/* any value of the command line fits: a long one is refused below */
	static char value[CMDLINE_SIZE];
	const char *c;

	name[0] = '\0';
	if (!cmdline_value(cmdline, "taintport.signed", value, sizeof(value)))
		return !strstr(cmdline, "taintport.signed=");
	if (!value[0] || strlen(value) >= size)
		return false;
	for (c = value; *c; c++)
		if (!((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') ||
		      *c == '_'))
			return false;
	strcpy(name, value);
	return true;
}

/* /proc/sys/kernel/tainted: one unsigned decimal number and a newline */
bool tainted_parse(const char *text, unsigned long *tainted)
{
	char *end;

	if (*text < '0' || *text > '9')
		return false;
	errno = 0;
	*tainted = strtoul(text, &end, 10);
	if (errno)
		return false;
	return end[strspn(end, CMDLINE_SPACE)] == '\0';
}

bool tainted_has_bit(unsigned long tainted, unsigned int bit)
{
	return bit < sizeof(tainted) * CHAR_BIT && (tainted >> bit) & 1;
}

/* /sys/module/<m>/taint: the module's letters in bit order, e.g. "FOE" */
bool taint_has_letter(const char *taint, char letter)
{
	return letter >= 'A' && letter <= 'Z' && strchr(taint, letter);
}

/*
 * A /dev/kmsg record is "prio,seq,usec,flags[,...];message\n" followed
 * by optional " KEY=value\n" dictionary lines
 * (Documentation/ABI/testing/dev-kmsg). Returns the message and its
 * length without the newline, or NULL for anything else.
 */
const char *kmsg_message(const char *record, size_t len, size_t *msg_len)
{
	const char *msg = memchr(record, ';', len);
	const char *eol;

	if (!msg || msg == record)
		return NULL;
	msg++;
	eol = memchr(msg, '\n', len - (msg - record));
	*msg_len = eol ? (size_t)(eol - msg) : len - (msg - record);
	return msg;
}

/*
 * A tracefs "trace" line is
 *	"<comm>-<pid> [<cpu>] <irq flags> <seconds>: <event>: <payload>"
 * with as many irq-flag characters as the kernel version prints. The
 * event name is the word that follows a space and precedes ": ".
 * Returns the payload of event's line, NULL for other lines.
 */
const char *trace_event_payload(const char *line, const char *event)
{
	size_t len = strlen(event);
	const char *p = line;

	while ((p = strstr(p, event))) {
		if (p > line && p[-1] == ' ' && !strncmp(p + len, ": ", 2))
			return p + len + 2;
		p += len;
	}
	return NULL;
}

/*
 * module:module_load prints "%s %s", the module's name and its taint
 * letters in show_module_flags() order (include/trace/events/module.h),
 * e.g. "<module> OFE", or "<module> " for an untainted one.
 */
bool module_load_flags(const char *payload, const char *module,
		       char *flags, size_t size)
{
	size_t name_len = strlen(module);
	const char *p = payload + name_len;
	size_t len;

	if (strncmp(payload, module, name_len) || (*p && *p != ' '))
		return false;
	p += strspn(p, " ");
	len = strcspn(p, CMDLINE_SPACE);
	if (len >= size)
		return false;
	memcpy(flags, p, len);
	flags[len] = '\0';
	return true;
}

/*
 * The integer of "<field>=%d", the whole payload of a test module's
 * event: one of the test modules' events, "value=%d" or "calls=%d"
 * (module/<module>_trace.h).
 */
bool trace_int_field(const char *payload, const char *field, int *value)
{
	size_t len = strlen(field);
	const char *digits = payload + len + 1;
	char *end;
	long v;

	if (strncmp(payload, field, len) || payload[len] != '=')
		return false;
	/* strtol() would also take leading blanks and a '+' */
	if (*digits != '-' && (*digits < '0' || *digits > '9'))
		return false;
	errno = 0;
	v = strtol(digits, &end, 10);
	if (errno || v < INT_MIN || v > INT_MAX)
		return false;
	if (end[strspn(end, CMDLINE_SPACE)] != '\0')
		return false;
	*value = v;
	return true;
}
