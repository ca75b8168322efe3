// SPDX-License-Identifier: GPL-2.0-only
/// Define TAINT_UNSIGNED_MODULE as bit 13, right after TAINT_OOT_MODULE, and
/// keep TAINT_FLAGS_COUNT in step, as upstream commit 66cc69e34e86 ("Fix:
/// module signature vs tracepoints: add new TAINT_UNSIGNED_MODULE", v3.15)
/// does in include/linux/kernel.h (include/linux/panic.h since v5.15).
/// Never defines it twice; refuses when bit 13 belongs to another flag or
/// TAINT_UNSIGNED_MODULE already has another value.
//
// Confidence: High
// Options: --no-includes --include-headers
// Keywords: TAINT_UNSIGNED_MODULE, TAINT_OOT_MODULE, TAINT_FLAGS_COUNT
// Requires: 1.1.1
//
// Modes: patch, report, context, org (make coccicheck MODE=...). With
// -D taintport (only tools/lib/taintport/layer/spatch.py passes it) each
// rule's verdict is printed too ("taintport: present|missing|taken <rule>
// file:line:col-line:col", the same places report mode names) and each rule
// that changes code prints "taintport: fired <rule> file:line"; without it
// patch mode prints nothing but the diff.
//
// SmPL matches and adds whole #define lines (the kernel's own
// scripts/coccinelle/misc/add_namespace.cocci works the same way on
// declarers). Layout: spatch prints an added or changed #define with single
// spaces ("#define TAINT_UNSIGNED_MODULE 13"); upstream aligns the value
// with tabs. `tools/taintport apply --tree DIR` gives upstream's layout
// (tools/lib/taintport/layer/relayout.py realigns the line like the one above
// it, whitespace only).

virtual patch
virtual context
virtual org
virtual report
virtual taintport

@initialize:python@
@@
MISSING = "TAINT_UNSIGNED_MODULE (bit 13) missing after TAINT_OOT_MODULE"
TAKEN = "bit 13 belongs to %s, cannot define TAINT_UNSIGNED_MODULE"
OTHER = "TAINT_UNSIGNED_MODULE is defined as %s, not 13"

def taintport_say(kind, rule, p, message=""):
    print(("taintport: %s %s %s:%s:%s-%s:%s %s" % (kind, rule, p.file, p.line, p.column,
                                                  p.line_end, p.column_end, message)).rstrip())

@present@
position p;
@@
#define TAINT_UNSIGNED_MODULE@p 13

// The list of taint bits: "taken" looks only where it is (a rule with no
// name of its own to look for would make spatch parse every file).
@oot@
@@
#define TAINT_OOT_MODULE 12

// Bit 13 taken by another flag: adding ours would give two flags one bit.
// (spatch's regexps are PCRE, so a negative look-ahead excludes the count.)
@taken depends on oot@
identifier I =~ "^TAINT_(?!FLAGS_COUNT$|UNSIGNED_MODULE$)";
position p;
@@
#define I@p 13

// TAINT_UNSIGNED_MODULE with another value: a second definition would clash.
@other depends on oot && !present@
expression v;
position p;
@@
#define TAINT_UNSIGNED_MODULE@p v

@find depends on !present && !taken && !other@
position p;
@@
#define TAINT_OOT_MODULE@p 12

@fix depends on patch@
position find.p;
@@
#define TAINT_OOT_MODULE@p 12
+#define TAINT_UNSIGNED_MODULE 13

// Only a count of 13 means TAINT_OOT_MODULE was the last flag.
@count depends on fix@
position q;
@@
-#define TAINT_FLAGS_COUNT@q 13
+#define TAINT_FLAGS_COUNT 14

@script:python depends on taintport && fix@
p << find.p;
@@
print("taintport: fired define %s:%s" % (p[0].file, p[0].line))

@script:python depends on taintport@
q << count.q;
@@
print("taintport: fired count %s:%s" % (q[0].file, q[0].line))

@depends on context@
position find.p;
@@
*#define TAINT_OOT_MODULE@p 12

@depends on context && find@
@@
*#define TAINT_FLAGS_COUNT 13

@script:python depends on org@
p << find.p;
@@
coccilib.org.print_todo(p[0], MISSING)

@script:python depends on report@
p << find.p;
@@
coccilib.report.print_report(p[0], MISSING)

@script:python depends on org@
p << taken.p;
I << taken.I;
@@
coccilib.org.print_todo(p[0], TAKEN % I)

@script:python depends on report@
p << taken.p;
I << taken.I;
@@
coccilib.report.print_report(p[0], TAKEN % I)

@script:python depends on org@
p << other.p;
v << other.v;
@@
coccilib.org.print_todo(p[0], OTHER % v)

@script:python depends on report@
p << other.p;
v << other.v;
@@
coccilib.report.print_report(p[0], OTHER % v)

@script:python depends on taintport@
p << present.p;
@@
taintport_say("present", "present", p[0])

@script:python depends on taintport@
p << find.p;
@@
taintport_say("missing", "find", p[0], MISSING)

@script:python depends on taintport@
p << taken.p;
I << taken.I;
@@
taintport_say("taken", "taken", p[0], TAKEN % I)

@script:python depends on taintport@
p << other.p;
v << other.v;
@@
taintport_say("taken", "other", p[0], OTHER % v)
