// SPDX-License-Identifier: GPL-2.0-only
/// Let tracepoints accept livepatch modules: add (1 << TAINT_LIVEPATCH) at
/// the end of the mask of taints that tracing tolerates, as upstream commit
/// e7bb66f79a7b ("tracepoint: Allow livepatch module add trace event",
/// v6.3) does in trace_module_has_bad_taint(). A livepatch module is
/// tainted K (TAINT_LIVEPATCH, v4.0); without this, its trace events are
/// silently not created. Matches every shape of the mask: OOT | CRAP |
/// UNSIGNED (v3.15, Debian's 5.10), with | TEST (v6.0, Debian's 6.1), the
/// inline test of tracepoint_module_coming() (v3.10), and vendor spellings
/// of it (terms in any order or with BIT(), bits of their own, comments).
/// The new term is written like the mask's last one: BIT(TAINT_LIVEPATCH)
/// after a BIT() term, upstream's (1 << TAINT_LIVEPATCH) elsewhere.
//
// Confidence: High
// Options: --no-includes --include-headers
// Keywords: TAINT_LIVEPATCH, trace_module_has_bad_taint, tracepoint_module_coming
// Requires: 1.1.1
//
// Modes: patch, report, context, org (make coccicheck MODE=...). With
// -D taintport (only tools/lib/taintport/layer/spatch.py passes it) each
// rule's verdict is printed too ("taintport: present|missing <rule>
// file:line:col-line:col", the same places report mode names) and the rule
// that changes code prints "taintport: fired livepatch file:line"; without
// it patch mode prints nothing but the diff.
//
// Layout: spatch appends " | (1 << TAINT_LIVEPATCH)" to the mask's last
// line (the code is upstream's, the line is longer); upstream rewrapped the
// last two lines instead. `tools/taintport apply --tree DIR` gives
// upstream's hunk where the mask ends in the lines upstream rewrapped, and
// elsewhere a line of its own for the term, no other line changed
// (tools/lib/taintport/layer/fixes/livepatch.py; the patch header says so).

virtual patch
virtual context
virtual org
virtual report
virtual taintport

@initialize:python@
@@
MISSING = "tracing rejects livepatch modules: (1 << TAINT_LIVEPATCH) missing from the mask"

def taintport_say(kind, rule, p, message=""):
    print(("taintport: %s %s %s:%s:%s-%s:%s %s" % (kind, rule, p.file, p.line, p.column,
                                                  p.line_end, p.column_end, message)).rstrip())

// The term in the mask itself: never one in a comment, nor one elsewhere
// in the function.
@present@
identifier fn =~ "^(trace_module_has_bad_taint|tracepoint_module_coming)$";
expression M;
position p;
@@
fn(...) { <+...
 M->taints & ~(<+... \( BIT(TAINT_LIVEPATCH)@p \| (1 << TAINT_LIVEPATCH)@p \) ...+>)
...+> }

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

// The term to add, spelt like the mask's last term (E printed token by token).
@script:python term@
E << find.E;
t;
@@
last = E.rsplit("|", 1)[-1].split()
coccinelle.t = cocci.make_expr("BIT(TAINT_LIVEPATCH)" if last[:1] == ["BIT"]
                               else "(1 << TAINT_LIVEPATCH)")

@fix depends on patch@
expression M, E;
expression term.t;
position find.p;
position q;
@@
 M->taints & ~(E@p@q
+ | t
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

@script:python depends on taintport@
p << present.p;
@@
taintport_say("present", "present", p[0])

@script:python depends on taintport@
p << find.p;
@@
taintport_say("missing", "find", p[0], MISSING)
