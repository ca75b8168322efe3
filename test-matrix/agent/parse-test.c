// SPDX-License-Identifier: GPL-2.0
/*
 * Host unit tests of the agent's parsers, printed as KTAP.
 *
 * The inputs have the shapes the guest kernels print; the trace lines
 * cover the 4- and 5-character irq-flag columns of 5.10 and 6.x.
 */
#include <string.h>

#include "ktap.h"
#include "parse.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

#define CMDLINE "console=ttyS0 panic=-1 taintport.token=3f9a taintport.letter=X"

static bool value_is(const char *cmdline, const char *key, const char *want)
{
	char value[16];

	return cmdline_value(cmdline, key, value, sizeof(value)) &&
	       !strcmp(value, want);
}

static void cmdline_finds_the_token(void)
{
	ktap_test_result(value_is(CMDLINE, "taintport.token", "3f9a"),
			 "cmdline_finds_the_token");
}

static void cmdline_takes_the_last_of_repeated_keys(void)
{
	ktap_test_result(value_is("a.b=1 a.b=2\n", "a.b", "2"),
			 "cmdline_takes_the_last_of_repeated_keys");
}

static void cmdline_ignores_a_longer_key(void)
{
	char value[16];

	ktap_test_result(!cmdline_value("taintport.tokenx=1", "taintport.token",
					value, sizeof(value)),
			 "cmdline_ignores_a_longer_key");
}

static void cmdline_ignores_a_key_inside_a_token(void)
{
	char value[16];

	ktap_test_result(!cmdline_value("x.taintport.token=1", "taintport.token",
					value, sizeof(value)),
			 "cmdline_ignores_a_key_inside_a_token");
}

static void cmdline_ignores_init_arguments_after_dashes(void)
{
	char value[16];

	ktap_test_result(!cmdline_value("quiet -- taintport.token=1",
					"taintport.token",
					value, sizeof(value)),
			 "cmdline_ignores_init_arguments_after_dashes");
}

static void cmdline_refuses_a_value_too_long(void)
{
	char value[4];

	ktap_test_result(!cmdline_value("k=12345", "k", value, sizeof(value)),
			 "cmdline_refuses_a_value_too_long");
}

static void cmdline_keeps_an_empty_value_empty(void)
{
	ktap_test_result(value_is("k= x=1", "k", ""),
			 "cmdline_keeps_an_empty_value_empty");
}

static void cmdline_without_fault_is_no_fault(void)
{
	ktap_test_result(cmdline_fault(CMDLINE) == FAULT_NONE,
			 "cmdline_without_fault_is_no_fault");
}

static void cmdline_names_each_fault(void)
{
	ktap_test_result(cmdline_fault("taintport.fault=hang") == FAULT_HANG &&
			 cmdline_fault("taintport.fault=panic") == FAULT_PANIC &&
			 cmdline_fault("taintport.fault=truncate") ==
			 FAULT_TRUNCATE,
			 "cmdline_names_each_fault");
}

static void cmdline_flags_an_unknown_fault(void)
{
	ktap_test_result(cmdline_fault("taintport.fault=oops") == FAULT_UNKNOWN,
			 "cmdline_flags_an_unknown_fault");
}

static void cmdline_letter_defaults_to_e(void)
{
	ktap_test_result(cmdline_letter("console=ttyS0", "taintport.letter", 'E') == 'E',
			 "cmdline_letter_defaults_to_e");
}

static void cmdline_letter_takes_the_given_letter(void)
{
	ktap_test_result(cmdline_letter(CMDLINE, "taintport.letter", 'E') == 'X',
			 "cmdline_letter_takes_the_given_letter");
}

static void cmdline_letter_refuses_more_than_a_letter(void)
{
	ktap_test_result(!cmdline_letter("taintport.letter=EX", "taintport.letter", 'E') &&
			 !cmdline_letter("taintport.letter=e", "taintport.letter", 'E'),
			 "cmdline_letter_refuses_more_than_a_letter");
}

static void cmdline_signed_module_is_optional(void)
{
	char name[16] = "x";

	ktap_test_result(cmdline_signed_module("console=ttyS0", name, sizeof(name)) &&
			 !name[0], "cmdline_signed_module_is_optional");
}

static void cmdline_signed_module_takes_a_module_name(void)
{
	char name[16];

	ktap_test_result(cmdline_signed_module("taintport.signed=ts_kmp quiet",
					       name, sizeof(name)) &&
			 !strcmp(name, "ts_kmp"),
			 "cmdline_signed_module_takes_a_module_name");
}

static void cmdline_signed_module_refuses_a_path(void)
{
	char name[16];

	ktap_test_result(!cmdline_signed_module("taintport.signed=../etc",
						name, sizeof(name)) &&
			 !cmdline_signed_module("taintport.signed=", name,
						sizeof(name)) &&
			 !cmdline_signed_module("taintport.signed=a_name_far_too_long",
						name, sizeof(name)),
			 "cmdline_signed_module_refuses_a_path");
}

static void tainted_reads_the_proc_file(void)
{
	unsigned long tainted;

	ktap_test_result(tainted_parse("12290\n", &tainted) && tainted == 12290,
			 "tainted_reads_the_proc_file");
}

static void tainted_refuses_garbage(void)
{
	unsigned long tainted;

	ktap_test_result(!tainted_parse("", &tainted) &&
			 !tainted_parse("-1\n", &tainted) &&
			 !tainted_parse("12x\n", &tainted),
			 "tainted_refuses_garbage");
}

static void tainted_bits_of_an_unsigned_load(void)
{
	/* 12288: out-of-tree (12) and unsigned (13), not forced (1) */
	ktap_test_result(tainted_has_bit(12288, 12) &&
			 tainted_has_bit(12288, 13) &&
			 !tainted_has_bit(12288, 1),
			 "tainted_bits_of_an_unsigned_load");
}

static void tainted_bit_out_of_range_is_clear(void)
{
	ktap_test_result(!tainted_has_bit(~0UL, 64),
			 "tainted_bit_out_of_range_is_clear");
}

static void taint_letters_of_a_forced_load(void)
{
	ktap_test_result(taint_has_letter("FOE\n", 'F') &&
			 taint_has_letter("FOE\n", 'O') &&
			 taint_has_letter("FOE\n", 'E') &&
			 !taint_has_letter("FOE\n", 'X'),
			 "taint_letters_of_a_forced_load");
}

static void taint_letter_never_matches_the_terminator(void)
{
	ktap_test_result(!taint_has_letter("O", '\0') &&
			 !taint_has_letter("O\n", '\n'),
			 "taint_letter_never_matches_the_terminator");
}

static bool message_is(const char *record, const char *want)
{
	const char *msg;
	size_t len;

	msg = kmsg_message(record, strlen(record), &len);
	return msg && len == strlen(want) && !memcmp(msg, want, len);
}

#define BAD_TAINT "utt: module has bad taint, not creating trace events"
#define BAD_TAINT_RECORD "3,1021,2513224,-;" BAD_TAINT "\n SUBSYSTEM=module\n"

static void kmsg_message_drops_prefix_and_dictionary(void)
{
	ktap_test_result(message_is(BAD_TAINT_RECORD, BAD_TAINT),
			 "kmsg_message_drops_prefix_and_dictionary");
}

static void kmsg_message_takes_a_record_without_newline(void)
{
	ktap_test_result(message_is("4,7,99,c;utt: bad vermagic: kernel tainted.",
				    "utt: bad vermagic: kernel tainted."),
			 "kmsg_message_takes_a_record_without_newline");
}

static void kmsg_message_keeps_semicolons_in_the_text(void)
{
	ktap_test_result(message_is("6,8,100,-;a; b\n", "a; b"),
			 "kmsg_message_keeps_semicolons_in_the_text");
}

static void kmsg_message_refuses_a_record_without_prefix(void)
{
	size_t len;

	ktap_test_result(!kmsg_message("no prefix\n", 10, &len) &&
			 !kmsg_message(";x\n", 3, &len),
			 "kmsg_message_refuses_a_record_without_prefix");
}

#define LOAD_6X "  taintport-agen-73      [000] .....     2.345678: module_load: utt OFE"
#define LOAD_510 "  taintport-agen-71      [000] ....     1.234567: module_load: utt O"
#define FIRE "  taintport-agen-73      [000] .....     2.400001: utt_fire: value=1001"
#define TLP_FIRE "  taintport-agen-73      [000] ...1.     3.100002: tlp_fire: calls=2"

static bool flags_are(const char *line, const char *want)
{
	const char *payload = trace_event_payload(line, "module_load");
	char flags[16];

	return payload &&
	       module_load_flags(payload, "utt", flags, sizeof(flags)) &&
	       !strcmp(flags, want);
}

static void trace_module_load_of_a_6x_kernel(void)
{
	ktap_test_result(flags_are(LOAD_6X, "OFE"),
			 "trace_module_load_of_a_6x_kernel");
}

static void trace_module_load_of_a_510_kernel(void)
{
	ktap_test_result(flags_are(LOAD_510, "O"),
			 "trace_module_load_of_a_510_kernel");
}

static void trace_module_load_of_an_untainted_module(void)
{
	ktap_test_result(flags_are("insmod-1 [000] ..... 1.0: module_load: utt ",
				   ""),
			 "trace_module_load_of_an_untainted_module");
}

static void trace_module_load_of_another_module(void)
{
	char flags[16];

	ktap_test_result(!module_load_flags("uttx OE", "utt", flags,
					    sizeof(flags)) &&
			 !module_load_flags("ut OE", "utt", flags,
					    sizeof(flags)),
			 "trace_module_load_of_another_module");
}

static void trace_event_payload_ignores_other_events(void)
{
	ktap_test_result(!trace_event_payload(FIRE, "module_load") &&
			 !trace_event_payload("# tracer: nop", "module_load") &&
			 !trace_event_payload("x [0] 1.0: my_module_load: a",
					      "module_load"),
			 "trace_event_payload_ignores_other_events");
}

static void trace_utt_fire_value(void)
{
	const char *payload = trace_event_payload(FIRE, "utt_fire");
	int value;

	ktap_test_result(payload && trace_int_field(payload, "value", &value) &&
			 value == 1001,
			 "trace_utt_fire_value");
}

static void trace_tlp_fire_calls(void)
{
	const char *payload = trace_event_payload(TLP_FIRE, "tlp_fire");
	int calls;

	ktap_test_result(payload && trace_int_field(payload, "calls", &calls) &&
			 calls == 2,
			 "trace_tlp_fire_calls");
}

static void trace_utt_fire_refuses_garbage(void)
{
	int value;

	ktap_test_result(!trace_int_field("value=", "value", &value) &&
			 !trace_int_field("value= 1", "value", &value) &&
			 !trace_int_field("value=1x", "value", &value) &&
			 !trace_int_field("count=1", "value", &value) &&
			 !trace_int_field("values=1", "value", &value) &&
			 !trace_int_field("value", "value", &value),
			 "trace_utt_fire_refuses_garbage");
}

static void (*const tests[])(void) = {
	cmdline_finds_the_token,
	cmdline_takes_the_last_of_repeated_keys,
	cmdline_ignores_a_longer_key,
	cmdline_ignores_a_key_inside_a_token,
	cmdline_ignores_init_arguments_after_dashes,
	cmdline_refuses_a_value_too_long,
	cmdline_keeps_an_empty_value_empty,
	cmdline_without_fault_is_no_fault,
	cmdline_names_each_fault,
	cmdline_flags_an_unknown_fault,
	cmdline_letter_defaults_to_e,
	cmdline_letter_takes_the_given_letter,
	cmdline_letter_refuses_more_than_a_letter,
	cmdline_signed_module_is_optional,
	cmdline_signed_module_takes_a_module_name,
	cmdline_signed_module_refuses_a_path,
	tainted_reads_the_proc_file,
	tainted_refuses_garbage,
	tainted_bits_of_an_unsigned_load,
	tainted_bit_out_of_range_is_clear,
	taint_letters_of_a_forced_load,
	taint_letter_never_matches_the_terminator,
	kmsg_message_drops_prefix_and_dictionary,
	kmsg_message_takes_a_record_without_newline,
	kmsg_message_keeps_semicolons_in_the_text,
	kmsg_message_refuses_a_record_without_prefix,
	trace_module_load_of_a_6x_kernel,
	trace_module_load_of_a_510_kernel,
	trace_module_load_of_an_untainted_module,
	trace_module_load_of_another_module,
	trace_event_payload_ignores_other_events,
	trace_utt_fire_value,
	trace_tlp_fire_calls,
	trace_utt_fire_refuses_garbage,
};

int main(void)
{
	size_t i;

	ktap_print_header();
	ktap_set_plan(ARRAY_SIZE(tests));
	for (i = 0; i < ARRAY_SIZE(tests); i++)
		tests[i]();
	ktap_exit();
}
