// SPDX-License-Identifier: GPL-2.0-only
/// Let tracepoints accept livepatch modules: add (1 << TAINT_LIVEPATCH) at
/// the end of the mask of taints that tracing tolerates, as upstream commit
/// e7bb66f79a7b ("tracepoint: Allow livepatch module add trace event",
/// v6.3) does in trace_module_has_bad_taint(). A livepatch module is
/// tainted K (TAINT_LIVEPATCH, v4.0); without this, its trace events are
/// silently not created. Matches every shape of the mask: OOT | CRAP |
/// UNSIGNED (v3.15, Debian's 5.10), with | TEST (v6.0, Debian's 6.1), and the
/// inline test of tracepoint_module_coming() (v3.10).
//
// Confidence: High
// Options: --no-includes --include-headers
// Keywords: TAINT_LIVEPATCH, trace_module_has_bad_taint, tracepoint_module_coming
// Requires: 1.1.1
//
// Modes: patch, report, context, org (make coccicheck MODE=...). With
// -D taintport (only tools/lib/taintport/layer/engine.py passes it) the rule that
// changes code also prints "taintport: fired livepatch file:line"; without
// it patch mode prints nothing but the diff.
//
// Layout: spatch appends " | (1 << TAINT_LIVEPATCH)" to the mask's last
// line (the code is upstream's, the line is longer); upstream rewrapped the
// last two lines instead. `tools/taintport apply --tree DIR` gives
// upstream's layout (tools/lib/taintport/layer/fixes/livepatch.py re-lays the
// mask out, and says in the patch header where a tree's mask needed an
// adaptation).

virtual patch
virtual context
virtual org
virtual report
virtual taintport

@initialize:python@
@@
MISSING = "tracing rejects livepatch modules: (1 << TAINT_LIVEPATCH) missing from the mask"

@present@
identifier fn =~ "^(trace_module_has_bad_taint|tracepoint_module_coming)$";
@@
fn(...) { <+... (1 << TAINT_LIVEPATCH) ...+> }

// The whole mask: "|" is left-associative, so E is every term, and the new
// one goes last, as upstream put it.
@find depends on !present@
identifier fn =~ "^(trace_module_has_bad_taint|tracepoint_module_coming)$";
expression M, E;
position p;
@@
fn(...) { <+...
 M->taints & ~(E@p)
...+> }

@fix depends on patch@
expression M, E;
position find.p;
position q;
@@
 M->taints & ~(E@p@q
+ | (1 << TAINT_LIVEPATCH)
 )

@script:python depends on taintport@
q << fix.q;
@@
print("taintport: fired livepatch %s:%s" % (q[0].file, q[0].line))

// Only the line where the mask starts is starred, where report and org
// point too.
@depends on context@
expression M, E;
position find.p;
@@
* M->taints
  & ~(E@p)

@script:python depends on org@
p << find.p;
@@
coccilib.org.print_todo(p[0], MISSING)

@script:python depends on report@
p << find.p;
@@
coccilib.report.print_report(p[0], MISSING)
