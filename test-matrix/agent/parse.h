/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Read the text the kernel shows the agent.
 *
 * Pure functions, no I/O: the agent links them for the guest and
 * parse-test links them for `make check` on the host.
 */
#ifndef TAINTPORT_PARSE_H
#define TAINTPORT_PARSE_H

#include <stdbool.h>
#include <stddef.h>

/* room for /proc/cmdline (COMMAND_LINE_SIZE is 2048 on x86) */
#define CMDLINE_SIZE	4096

/* taintport.fault=, the harness's self-test of broken runs */
enum fault {
	FAULT_NONE,
	FAULT_HANG,
	FAULT_PANIC,
	FAULT_TRUNCATE,
	FAULT_UNKNOWN,
};

bool cmdline_value(const char *cmdline, const char *key,
		   char *value, size_t size);
enum fault cmdline_fault(const char *cmdline);
char cmdline_letter(const char *cmdline, const char *key, char fallback);
bool cmdline_signed_module(const char *cmdline, char *name, size_t size);

bool tainted_parse(const char *text, unsigned long *tainted);
bool tainted_has_bit(unsigned long tainted, unsigned int bit);
bool taint_has_letter(const char *taint, char letter);

const char *kmsg_message(const char *record, size_t len, size_t *msg_len);

const char *trace_event_payload(const char *line, const char *event);
bool module_load_flags(const char *payload, const char *module,
		       char *flags, size_t size);
bool trace_int_field(const char *payload, const char *field, int *value);

#endif /* TAINTPORT_PARSE_H */
