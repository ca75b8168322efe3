// SPDX-License-Identifier: GPL-2.0-only
/// Print the unsigned-module letter among a module's own taint letters
/// (/sys/module/*/taint, oops module lists): an explicit test after the one
/// for TAINT_CRAP in module_flags_taint(), as upstream commit 66cc69e34e86
/// (v3.15) does. Since v4.10 module_flags_taint() loops over taint_flags[]
/// and needs nothing: taint_unsigned_letter.cocci covers it.
/// The letter is -D letter=<L> (default E); a letter another flag shows, or
/// another letter already shown for TAINT_UNSIGNED_MODULE, is reported,
/// never added.
//
// Confidence: High
// Options: --no-includes --include-headers
// Keywords: TAINT_UNSIGNED_MODULE, module_flags_taint
// Requires: 1.1.1
//
// Modes: patch, report, context, org (make coccicheck MODE=...). With
// -D taintport (only tools/lib/taintport/layer/spatch.py passes it) each
// rule's verdict is printed too ("taintport: present|missing|taken <rule>
// file:line:col-line:col", the same places report mode names; the loop of
// v4.10 on is "present": the letter table holds the letter) and each rule
// that changes code prints "taintport: fired <rule> file:line"; without it
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
TAKEN = "module letter '%s' already belongs to %s"
OTHER = "TAINT_UNSIGNED_MODULE already has module letter %s, not '%s'"

def taintport_say(kind, rule, p, message=""):
    print(("taintport: %s %s %s:%s:%s-%s:%s %s" % (kind, rule, p.file, p.line, p.column,
                                                  p.line_end, p.column_end, message)).rstrip())

@initialize:python@
l << virtual.letter;
@@
LETTER = l

// Only a file with module_flags_taint() needs the letter's expression.
@function@
@@
module_flags_taint(...) { ... }

@script:python letter depends on function@
c;
@@
coccinelle.c = cocci.make_expr("'%s'" % LETTER)

// Since v4.10 the letters come from the letter table.
@loop@
symbol taint_flags;
expression i;
position p;
@@
module_flags_taint(...) { <+... taint_flags@p[i] ...+> }

@present@
expression M, B, I;
expression letter.c;
position p;
@@
module_flags_taint(...) { <+...
  if (M->taints & (1 << TAINT_UNSIGNED_MODULE@p))
  	B[I++] = c;
...+> }

@other depends on !present@
expression M, B, I, c2;
position p;
@@
module_flags_taint(...) { <+...
  if (M->taints & (1 << TAINT_UNSIGNED_MODULE@p))
  	B[I++] = c2;
...+> }

@taken@
identifier f != TAINT_UNSIGNED_MODULE;
expression M, B, I;
expression letter.c;
position p;
@@
module_flags_taint(...) { <+...
  if (M->taints & (1 << f@p))
  	B[I++] = c;
...+> }

@find depends on !loop && !present && !other && !taken@
expression M, B, I;
position p;
@@
module_flags_taint(...) {
  ...
  if (M->taints & (1 << TAINT_CRAP))@p
  	B[I++] = ...;
  ...
}

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

@script:python depends on org@
f << taken.f;
p << taken.p;
@@
coccilib.org.print_todo(p[0], TAKEN % (LETTER, f))

@script:python depends on report@
f << taken.f;
p << taken.p;
@@
coccilib.report.print_report(p[0], TAKEN % (LETTER, f))

@script:python depends on org@
c2 << other.c2;
p << other.p;
@@
coccilib.org.print_todo(p[0], OTHER % (c2, LETTER))

@script:python depends on report@
c2 << other.c2;
p << other.p;
@@
coccilib.report.print_report(p[0], OTHER % (c2, LETTER))

@script:python depends on taintport@
p << loop.p;
@@
taintport_say("present", "loop", p[0])

@script:python depends on taintport@
p << present.p;
@@
taintport_say("present", "present", p[0])

@script:python depends on taintport@
p << find.p;
@@
taintport_say("missing", "find", p[0], MISSING % LETTER)

@script:python depends on taintport@
f << taken.f;
p << taken.p;
@@
taintport_say("taken", "taken", p[0], TAKEN % (LETTER, f))

@script:python depends on taintport@
c2 << other.c2;
p << other.p;
@@
taintport_say("taken", "other", p[0], OTHER % (c2, LETTER))
