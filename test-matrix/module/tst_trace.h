/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The one trace event of tst, laid out like utt_trace.h (see there why).
 * Its trace system is "tst", so the kernel creates events/tst/ in tracefs
 * for it, unless the module's taint makes
 * trace_module_has_bad_taint() refuse (TAINT_TEST without upstream
 * 54be5509422e).
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM tst

#if !defined(_TST_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define _TST_TRACE_H

#include <linux/tracepoint.h>

TRACE_EVENT(tst_fire,

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

#endif /* _TST_TRACE_H */

#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH .
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE tst_trace
#include <trace/define_trace.h>
