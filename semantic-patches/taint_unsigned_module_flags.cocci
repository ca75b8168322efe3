// SPDX-License-Identifier: GPL-2.0-only
/// Print the unsigned-module letter among a module's own taint letters
/// (/sys/module/*/taint, oops module lists): an explicit test after the one
/// for TAINT_CRAP in module_flags_taint(), as upstream commit 66cc69e34e86
/// (v3.15) does. Since v4.10 module_flags_taint() loops over taint_flags[]
/// and needs nothing: taint_unsigned_letter.cocci covers it.
/// The letter is -D letter=<L> (default E).
//
// Confidence: High
// Options: --no-includes --include-headers
// Keywords: TAINT_UNSIGNED_MODULE, module_flags_taint
// Requires: 1.1.1
//
// Modes: patch, report, context, org (make coccicheck MODE=...). With
// -D taintport (only tools/lib/taintport/layer/engine.py passes it) each rule that
// changes code also prints "taintport: fired <rule> file:line"; without it
// patch mode prints nothing but the diff.
// Layout: spatch's layout of the added test is upstream's.

virtual patch
virtual context
virtual org
virtual report
virtual taintport

@initialize:python@
@@
LETTER = "E"
MISSING = "module letter '%s' for TAINT_UNSIGNED_MODULE missing after TAINT_CRAP"

@initialize:python@
l << virtual.letter;
@@
LETTER = l

@present@
identifier M;
@@
module_flags_taint(...) { <+... M->taints & (1 << TAINT_UNSIGNED_MODULE) ...+> }

@find depends on !present@
expression M, B, I;
position p;
@@
module_flags_taint(...) {
  ...
  if (M->taints & (1 << TAINT_CRAP))@p
  	B[I++] = ...;
  ...
}

@script:python letter depends on find@
c;
@@
coccinelle.c = cocci.make_expr("'%s'" % LETTER)

@fix depends on patch@
expression M, B, I;
expression letter.c;
position find.p;
position q;
@@
  if (M->taints & (1 << TAINT_CRAP))@p@q
  	B[I++] = ...;
+ if (M->taints & (1 << TAINT_UNSIGNED_MODULE))
+ 	B[I++] = c;

@script:python depends on taintport@
q << fix.q;
@@
print("taintport: fired module_flags %s:%s" % (q[0].file, q[0].line))

@depends on context@
expression M, B, I;
position find.p;
@@
* if (M->taints & (1 << TAINT_CRAP))@p
* 	B[I++] = ...;

@script:python depends on org@
p << find.p;
@@
coccilib.org.print_todo(p[0], MISSING % LETTER)

@script:python depends on report@
p << find.p;
@@
coccilib.report.print_report(p[0], MISSING % LETTER)
