// SPDX-License-Identifier: GPL-2.0-only
/// Give TAINT_UNSIGNED_MODULE its letter in kernel/panic.c's table of taint
/// letters, right after TAINT_OOT_MODULE, as upstream commits 66cc69e34e86
/// and 57673c2b0baa (v3.15) do. Handles the four shapes the table has had:
/// struct tnt tnts[] (to v4.9), designated taint_flags[] initialisers (v4.10),
/// TAINT_FLAG() with four arguments (v6.12) and with three (v7.2).
/// The letter is -D letter=<L> (default E; X reproduces the 2014 posting).
/// A letter already owned by another flag, or another letter already given
/// to TAINT_UNSIGNED_MODULE, is reported, never added.
//
// Confidence: High
// Options: --no-includes --include-headers
// Keywords: TAINT_UNSIGNED_MODULE, tnts, taint_flags, TAINT_FLAG
// Requires: 1.1.1
//
// Modes: patch, report, context, org (make coccicheck MODE=...). With
// -D taintport (only tools/lib/taintport/layer/spatch.py passes it) each
// rule's verdict is printed too ("taintport: present|missing|taken <rule>
// file:line:col-line:col", the same places report mode names) and each rule
// that changes code prints "taintport: fired <rule> file:line"; without it
// patch mode prints nothing but the diff.
//
// Notes on the SmPL used here:
// - initializer lists are matched with "{ ..., entry, ..., }", designated
//   initialisers with "[index] = { ... }", TAINT_FLAG() entries as calls;
// - -D name=value reaches rules as "identifier virtual.name;" (the kernel's
//   scripts/coccinelle/misc/add_namespace.cocci does so with -D ns=...) and
//   python rules as "x << virtual.name;" (as public .cocci files do); found
//   by trying 1.1.1: "letter" must then NOT also be declared "virtual letter"
//   (spatch fails with a parse error), and a python rule that names an unset
//   value does not run, so a first @initialize:python@ sets the default and
//   a second one, reading virtual.letter, overrides it;
// - a python rule creates the char constant with cocci.make_expr() and hands
//   it to later rules as "expression letter.c;"; it depends on "table", as
//   a python rule that depends on no matching rule makes spatch parse every
//   file (no grep query);
// - a rule's "depends on" a python rule does not follow the matches that
//   rule dropped, so "taken" matches the letter itself instead of filtering.
// Layout: spatch prints an added { } initialiser over three lines and a
// TAINT_FLAG() entry with single spaces; upstream aligns each entry on one
// line with tabs. `tools/taintport apply --tree DIR` gives upstream's layout
// (tools/lib/taintport/layer/relayout.py re-lays the entry out like the
// TAINT_OOT_MODULE one above it, whitespace only, and fixes/unsigned.py
// updates the letter list in the comment above print_tainted() before v4.10,
// which SmPL cannot edit).

virtual patch
virtual context
virtual org
virtual report
virtual taintport

@initialize:python@
@@
LETTER = "E"
MISSING = "letter %s for TAINT_UNSIGNED_MODULE missing after TAINT_OOT_MODULE"
TAKEN = "letter '%s' already belongs to %s"
OTHER = "TAINT_UNSIGNED_MODULE already has letter %s, not '%s'"

def owner(flag):
    # TAINT_FLAG() names a flag without its TAINT_ prefix
    return flag if flag.startswith("TAINT_") else "TAINT_" + flag

def taintport_say(kind, rule, p, message=""):
    print(("taintport: %s %s %s:%s:%s-%s:%s %s" % (kind, rule, p.file, p.line, p.column,
                                                  p.line_end, p.column_end, message)).rstrip())

@initialize:python@
l << virtual.letter;
@@
LETTER = l

// Only a file with a table of taint letters needs the letter's expression.
@table@
identifier arr;
expression n;
@@
(
 struct tnt arr[] = { ... };
|
 struct taint_flag arr[n] = { ... };
)

@script:python letter depends on table@
c;
@@
coccinelle.c = cocci.make_expr("'%s'" % LETTER)

@present@
identifier arr;
expression n;
expression letter.c;
position p;
@@
(
 struct tnt arr[] = { ..., { TAINT_UNSIGNED_MODULE@p, c, ... }, ..., };
|
 struct taint_flag arr[n] = { ..., [TAINT_UNSIGNED_MODULE@p] = { c, ... }, ..., };
|
 struct taint_flag arr[n] = { ..., TAINT_FLAG(UNSIGNED_MODULE@p, c, ...), ..., };
)

// TAINT_UNSIGNED_MODULE with another letter: a second entry would clash.
@other depends on !present@
identifier arr;
expression n, c2;
position p;
@@
(
 struct tnt arr[] = { ..., { TAINT_UNSIGNED_MODULE@p, c2, ... }, ..., };
|
 struct taint_flag arr[n] = { ..., [TAINT_UNSIGNED_MODULE@p] = { c2, ... }, ..., };
|
 struct taint_flag arr[n] = { ..., TAINT_FLAG(UNSIGNED_MODULE@p, c2, ...), ..., };
)

// An entry of another flag with the letter asked for: the letter is taken.
@taken@
identifier arr;
identifier f != {TAINT_UNSIGNED_MODULE, UNSIGNED_MODULE};
expression n;
expression letter.c;
position p;
@@
(
 struct tnt arr[] = { ..., { f@p, c, ... }, ..., };
|
 struct taint_flag arr[n] = { ..., [f@p] = { c, ... }, ..., };
|
 struct taint_flag arr[n] = { ..., TAINT_FLAG(f@p, c, ...), ..., };
)

@find depends on !present && !taken && !other@
identifier arr;
expression n;
position p;
@@
(
 struct tnt arr[] = { ..., { TAINT_OOT_MODULE@p, ... }, ..., };
|
 struct taint_flag arr[n] = { ..., [TAINT_OOT_MODULE@p] = { ... }, ..., };
|
 struct taint_flag arr[n] = { ..., TAINT_FLAG(OOT_MODULE@p, ...), ..., };
)

@tnt depends on patch && find@
identifier arr;
expression letter.c;
position q;
@@
 struct tnt arr[] = {
  ...,
  { TAINT_OOT_MODULE@q, ... },
+ { TAINT_UNSIGNED_MODULE, c, ' ' },
  ...
 };

@designated depends on patch && find@
identifier arr;
expression n;
expression letter.c;
position q;
@@
 struct taint_flag arr[n] = {
  ...,
  [TAINT_OOT_MODULE@q] = { ... },
+ [TAINT_UNSIGNED_MODULE] = { c, ' ', true },
  ...
 };

@flag4 depends on patch && find@
identifier arr;
expression n, e1, e2, e3;
expression letter.c;
position q;
@@
 struct taint_flag arr[n] = {
  ...,
  TAINT_FLAG(OOT_MODULE@q, e1, e2, e3),
+ TAINT_FLAG(UNSIGNED_MODULE, c, ' ', true),
  ...
 };

@flag3 depends on patch && find@
identifier arr;
expression n, e1, e2;
expression letter.c;
position q;
@@
 struct taint_flag arr[n] = {
  ...,
  TAINT_FLAG(OOT_MODULE@q, e1, e2),
+ TAINT_FLAG(UNSIGNED_MODULE, c, ' '),
  ...
 };

@script:python depends on taintport@
q << tnt.q;
@@
print("taintport: fired tnt %s:%s" % (q[0].file, q[0].line))

@script:python depends on taintport@
q << designated.q;
@@
print("taintport: fired designated %s:%s" % (q[0].file, q[0].line))

@script:python depends on taintport@
q << flag4.q;
@@
print("taintport: fired flag4 %s:%s" % (q[0].file, q[0].line))

@script:python depends on taintport@
q << flag3.q;
@@
print("taintport: fired flag3 %s:%s" % (q[0].file, q[0].line))

// Context marks the entry the letter goes after, in whichever shape it has.
@depends on context@
identifier arr;
expression n;
position find.p;
@@
(
 struct tnt arr[] = { ...,
* { TAINT_OOT_MODULE@p, ... }
  , ..., };
|
 struct taint_flag arr[n] = { ...,
* [TAINT_OOT_MODULE@p] = { ... }
  , ..., };
|
 struct taint_flag arr[n] = { ...,
* TAINT_FLAG(OOT_MODULE@p, ...)
  , ..., };
)

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
coccilib.org.print_todo(p[0], TAKEN % (LETTER, owner(f)))

@script:python depends on report@
f << taken.f;
p << taken.p;
@@
coccilib.report.print_report(p[0], TAKEN % (LETTER, owner(f)))

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
taintport_say("taken", "taken", p[0], TAKEN % (LETTER, owner(f)))

@script:python depends on taintport@
c2 << other.c2;
p << other.p;
@@
taintport_say("taken", "other", p[0], OTHER % (c2, LETTER))
