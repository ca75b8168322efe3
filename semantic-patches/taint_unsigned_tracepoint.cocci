// SPDX-License-Identifier: GPL-2.0-only
/// Let tracepoints accept unsigned modules: add (1 << TAINT_UNSIGNED_MODULE)
/// after (1 << TAINT_CRAP) in the mask of taints that tracing tolerates, as
/// upstream commit 66cc69e34e86 (v3.15) does. The mask lives inline in
/// tracepoint_module_coming() (v3.10 without commit 45ab2813d40d) or in
/// trace_module_has_bad_taint(); whatever else it holds (TAINT_TEST since
/// v6.0, TAINT_LIVEPATCH since v6.3) stays.
//
// Confidence: High
// Options: --no-includes --include-headers
// Keywords: TAINT_UNSIGNED_MODULE, trace_module_has_bad_taint, tracepoint_module_coming
// Requires: 1.1.1
//
// "|" is left-associative, so (OOT | CRAP) is a subexpression of every
// longer mask and one rule covers them all. spatch prints the added term on
// the line of TAINT_CRAP; layer.py moves it to where upstream put it, and
// rewrites the comment above the 3.10 test (SmPL does not edit comments).

virtual patch
virtual report
virtual taintport

@present@
@@
 (1 << TAINT_UNSIGNED_MODULE)

@find depends on !present@
identifier fn =~ "^(trace_module_has_bad_taint|tracepoint_module_coming)$";
position p;
@@
fn(...) { <+...
 (1 << TAINT_OOT_MODULE) | (1 << TAINT_CRAP)@p
...+> }

@script:python depends on report@
p << find.p;
@@
coccilib.report.print_report(p[0], "tracing rejects unsigned modules: (1 << TAINT_UNSIGNED_MODULE) missing after (1 << TAINT_CRAP)")

@fix depends on patch@
position find.p;
position q;
@@
- (1 << TAINT_OOT_MODULE) | (1 << TAINT_CRAP)@p@q
+ (1 << TAINT_OOT_MODULE) | (1 << TAINT_CRAP) | (1 << TAINT_UNSIGNED_MODULE)

@script:python depends on taintport@
q << fix.q;
@@
print("taintport: fired tracepoint %s:%s" % (q[0].file, q[0].line))
