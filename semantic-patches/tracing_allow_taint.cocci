// SPDX-License-Identifier: GPL-2.0-only
/// Let tracepoints accept the modules of one more taint: add (1 << TAINT)
/// at the end of the mask of taints that tracing tolerates, as upstream did
/// in trace_module_has_bad_taint() for TAINT_TEST (54be5509422e, v6.0) and
/// TAINT_LIVEPATCH (e7bb66f79a7b, v6.3). The taint is a parameter:
/// -D taint=TAINT_LIVEPATCH (each fix's fix.toml names its own; without it
/// no rule runs). Matches every shape of the mask: OOT | CRAP | UNSIGNED
/// (v3.15, Debian's 5.10), with | TEST (v6.0, Debian's 6.1), the inline
/// test of tracepoint_module_coming() (v3.10), and vendor spellings of it
/// (terms in any order or with BIT(), bits of their own, comments). The new
/// term is written like the mask's last one: BIT(TAINT) after a BIT()
/// term, upstream's (1 << TAINT) elsewhere.
//
// Confidence: High
// Options: --no-includes --include-headers
// Keywords: trace_module_has_bad_taint, tracepoint_module_coming
// Requires: 1.1.1
//
// Modes: patch, report, context, org (make coccicheck MODE=...
// SPFLAGS="-D taint=TAINT_LIVEPATCH"). With -D taintport (only
// tools/lib/taintport/layer/spatch.py passes it) each rule's verdict is
// printed too ("taintport: present|missing <rule> file:line:col-line:col",
// the same places report mode names) and the rule that changes code prints
// "taintport: fired mask file:line"; without it patch mode prints nothing
// but the diff.
//
// Layout: spatch appends " | (1 << TAINT)" to the mask's last line (the
// code is upstream's, the line is longer); upstream wrapped it. `tools/taintport
// apply --tree DIR` gives upstream's hunk where the mask has the lines
// upstream's hunk rewrote (each fix.toml's [pieces.mask] hunks), and
// elsewhere a line of its own for the term, no other line changed (the
// patch header says so).

virtual patch
virtual context
virtual org
virtual report
virtual taintport

@initialize:python@
@@
def taintport_say(kind, rule, p, message=""):
    print(("taintport: %s %s %s:%s:%s-%s:%s %s" % (kind, rule, p.file, p.line, p.column,
                                                  p.line_end, p.column_end, message)).rstrip())

def missing(taint):
    return "tracing rejects the modules of %s: (1 << %s) missing from the mask" % (taint, taint)

// The term in the mask itself: never one in a comment, nor one elsewhere
// in the function.
@present@
identifier fn =~ "^(trace_module_has_bad_taint|tracepoint_module_coming)$";
identifier virtual.taint;
expression M;
position p;
@@
fn(...) { <+...
 M->taints & ~(<+... \( BIT(taint)@p \| (1 << taint)@p \) ...+>)
...+> }

// The whole mask: "|" is left-associative, so E is every term, and the new
// one goes last, as upstream put it.
@find depends on !present@
identifier fn =~ "^(trace_module_has_bad_taint|tracepoint_module_coming)$";
identifier virtual.taint;
expression M, E;
position p;
@@
fn(...) { <+...
 M->taints & ~(E@p)
...+> }

// The term to add, spelt like the mask's last term (E printed token by token).
@script:python term@
E << find.E;
taint << virtual.taint;
t;
@@
last = E.rsplit("|", 1)[-1].split()
coccinelle.t = cocci.make_expr(("BIT(%s)" if last[:1] == ["BIT"] else "(1 << %s)") % taint)

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
print("taintport: fired mask %s:%s" % (q[0].file, q[0].line))

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
taint << virtual.taint;
@@
coccilib.org.print_todo(p[0], missing(taint))

@script:python depends on report@
p << find.p;
taint << virtual.taint;
@@
coccilib.report.print_report(p[0], missing(taint))

@script:python depends on taintport@
p << present.p;
@@
taintport_say("present", "present", p[0])

@script:python depends on taintport@
p << find.p;
taint << virtual.taint;
@@
taintport_say("missing", "find", p[0], missing(taint))
