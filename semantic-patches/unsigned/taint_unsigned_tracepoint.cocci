// SPDX-License-Identifier: GPL-2.0-only
/// Let tracepoints accept unsigned modules: add (1 << TAINT_UNSIGNED_MODULE)
/// after (1 << TAINT_CRAP) in the mask of taints that tracing tolerates, as
/// upstream commit 66cc69e34e86 (v3.15) does. The mask lives inline in
/// tracepoint_module_coming() (v3.10 without commit 45ab2813d40d) or in
/// trace_module_has_bad_taint(); whatever else it holds (TAINT_TEST since
/// v6.0, TAINT_LIVEPATCH since v6.3, a vendor's own bits) stays, in any
/// order. A mask written with BIT() gets BIT(TAINT_UNSIGNED_MODULE).
//
// Confidence: High
// Options: --no-includes --include-headers
// Keywords: TAINT_UNSIGNED_MODULE, trace_module_has_bad_taint, tracepoint_module_coming
// Requires: 1.1.1
//
// Modes: patch, report, context, org (make coccicheck MODE=...). With
// -D taintport (only tools/lib/taintport/layer/spatch.py passes it) each
// rule's verdict is printed too ("taintport: present|missing <rule>
// file:line:col-line:col", the same places report mode names) and each rule
// that changes code prints "taintport: fired <rule> file:line"; without it
// patch mode prints nothing but the diff.
//
// Layout: spatch appends " | (1 << TAINT_UNSIGNED_MODULE)" to the line of
// TAINT_CRAP (the code is upstream's, the line is longer); upstream wraps
// the term onto a line of its own. `tools/taintport apply --tree DIR` gives
// upstream's layout (tools/lib/taintport/layer/fixes/unsigned.py moves the
// term where upstream put it, and rewrites the comment above the 3.10 test,
// which SmPL cannot edit).

virtual patch
virtual context
virtual org
virtual report
virtual taintport

@initialize:python@
@@
MISSING = "tracing rejects unsigned modules: (1 << TAINT_UNSIGNED_MODULE) missing after (1 << TAINT_CRAP)"

def taintport_say(kind, rule, p, message=""):
    print(("taintport: %s %s %s:%s:%s-%s:%s %s" % (kind, rule, p.file, p.line, p.column,
                                                  p.line_end, p.column_end, message)).rstrip())

// The term in the mask itself: never one in a comment.
@present@
identifier fn =~ "^(trace_module_has_bad_taint|tracepoint_module_coming)$";
expression M;
position p;
@@
fn(...) { <+...
 M->taints & ~(<+... \( BIT(TAINT_UNSIGNED_MODULE)@p \| (1 << TAINT_UNSIGNED_MODULE)@p \) ...+>)
...+> }

// (spatch 1.1.1 matches this disjunction only with the BIT() branch first)
@find depends on !present@
identifier fn =~ "^(trace_module_has_bad_taint|tracepoint_module_coming)$";
expression M;
position p;
@@
fn(...) { <+...
 M->taints & ~(<+... \( BIT(TAINT_CRAP)@p \| (1 << TAINT_CRAP)@p \) ...+>)
...+> }

@fix depends on patch@
expression M;
position find.p;
position q;
@@
 M->taints & ~(<+...
(
 BIT(TAINT_CRAP)@p@q
+ | BIT(TAINT_UNSIGNED_MODULE)
|
 (1 << TAINT_CRAP)@p@q
+ | (1 << TAINT_UNSIGNED_MODULE)
)
 ...+>)

@script:python depends on taintport@
q << fix.q;
@@
print("taintport: fired tracepoint %s:%s" % (q[0].file, q[0].line))

@depends on context@
expression M;
position find.p;
@@
 M->taints & ~(<+...
(
*BIT(TAINT_CRAP)@p
|
*(1 << TAINT_CRAP)@p
)
 ...+>)

@script:python depends on org@
p << find.p;
@@
coccilib.org.print_todo(p[0], MISSING)

@script:python depends on report@
p << find.p;
@@
coccilib.report.print_report(p[0], MISSING)

@script:python depends on taintport@
p << present.p;
@@
taintport_say("present", "present", p[0])

@script:python depends on taintport@
p << find.p;
@@
taintport_say("missing", "find", p[0], MISSING)
