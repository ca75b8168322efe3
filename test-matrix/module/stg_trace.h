/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The one trace event of stg, laid out like utt_trace.h (see there why).
 * Its trace system is "stg", so the kernel creates events/stg/ in tracefs
 * for it, unless the module's taint makes
 * trace_module_has_bad_taint() refuse (never for C alone).
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM stg

#if !defined(_STG_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define _STG_TRACE_H

#include <linux/tracepoint.h>

TRACE_EVENT(stg_fire,

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

#endif /* _STG_TRACE_H */

#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH .
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE stg_trace
#include <trace/define_trace.h>
