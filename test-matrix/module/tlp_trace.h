/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The one trace event of tlp, fired by the replacement of
 * cmdline_proc_show(). Its trace system is "tlp", so the kernel creates
 * events/tlp/ in tracefs for it, unless TAINT_LIVEPATCH makes
 * trace_module_has_bad_taint() refuse (the bug upstream e7bb66f79a7b
 * fixed). Laid out like utt_trace.h, for the same reasons.
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM tlp

#if !defined(_TLP_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define _TLP_TRACE_H

#include <linux/tracepoint.h>

TRACE_EVENT(tlp_fire,

	TP_PROTO(int calls),

	TP_ARGS(calls),

	TP_STRUCT__entry(
		__field(int, calls)
	),

	TP_fast_assign(
		__entry->calls = calls;
	),

	TP_printk("calls=%d", __entry->calls)
);

#endif /* _TLP_TRACE_H */

#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH .
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE tlp_trace
#include <trace/define_trace.h>
