/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The one trace event of utt. Its trace system is "utt", so the kernel
 * creates events/utt/ in tracefs for it, unless the module's taint makes
 * trace_module_has_bad_taint() refuse (the bug taintport tests).
 *
 * Laid out as the kernel's samples/trace_events/trace-events-sample.h
 * explains: TRACE_SYSTEM outside the guard, and the guard reopened by
 * TRACE_HEADER_MULTI_READ because define_trace.h reads this file again.
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM utt

#if !defined(_UTT_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define _UTT_TRACE_H

#include <linux/tracepoint.h>

TRACE_EVENT(utt_fire,

	TP_PROTO(int value),

	TP_ARGS(value),

	TP_STRUCT__entry(
		__field(int, value)
	),

	TP_fast_assign(
		__entry->value = value;
	),

	TP_printk("value=%d", __entry->value)
);

#endif /* _UTT_TRACE_H */

/*
 * define_trace.h includes this file again through TRACE_INCLUDE_PATH,
 * which is relative to define_trace.h unless the search path finds it
 * first. The Kbuild file puts the module's own folder on that path, so
 * "." works from any kernel build dir the module is built against.
 */
#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH .
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE utt_trace
#include <trace/define_trace.h>
