// SPDX-License-Identifier: GPL-2.0-only
/// Taint a module whose signature check failed with TAINT_UNSIGNED_MODULE
/// instead of TAINT_FORCED_MODULE, as upstream commit 66cc69e34e86 (v3.15)
/// does. Only the add_taint_module() call that follows the "module
/// verification failed" notice in "if (!mod->sig_ok)" changes: load_module()
/// in kernel/module.c (to v5.18) or kernel/module/main.c (v5.19),
/// module_augment_kernel_taints() (v6.12). try_to_force_load() keeps
/// TAINT_FORCED_MODULE: forcing a load is still forcing.
//
// Confidence: High
// Options: --no-includes --include-headers
// Keywords: TAINT_UNSIGNED_MODULE, TAINT_FORCED_MODULE, sig_ok, add_taint_module
// Requires: 1.1.1
//
// Modes: patch, report, context, org (make coccicheck MODE=...). With
// -D taintport (only tools/lib/taintport/layer/spatch.py passes it) each
// rule's verdict is printed too ("taintport: present|missing <rule>
// file:line:col-line:col", the same places report mode names) and each rule
// that changes code prints "taintport: fired <rule> file:line"; without it
// patch mode prints nothing but the diff.
// Layout: spatch's layout of the changed call is upstream's.
//
// The notice is built from adjacent string literals (and KERN_NOTICE before
// v3.15), which a "constant char[] =~" regexp does not see as one string;
// a python rule reads the whole format argument instead and drops matches
// whose text lacks the notice (cocci.include_match(False)).

virtual patch
virtual context
virtual org
virtual report
virtual taintport

@initialize:python@
@@
MISSING = "TAINT_FORCED_MODULE for a module that failed signature verification: TAINT_UNSIGNED_MODULE missing"

def taintport_say(kind, rule, p, message=""):
    print(("taintport: %s %s %s:%s:%s-%s:%s %s" % (kind, rule, p.file, p.line, p.column,
                                                  p.line_end, p.column_end, message)).rstrip())

@present@
expression M, L, fmt;
position p;
@@
if (!M->sig_ok) {
  ...
  \(pr_notice_once\|printk_once\)(fmt, ...);
  add_taint_module@p(M, TAINT_UNSIGNED_MODULE, L);
}

@script:python present_notice@
fmt << present.fmt;
@@
if "module verification failed" not in fmt:
    cocci.include_match(False)

@find@
expression M, L, fmt;
position p;
@@
if (!M->sig_ok) {
  ...
  \(pr_notice_once\|printk_once\)(fmt, ...);
  add_taint_module@p(M, TAINT_FORCED_MODULE, L);
}

@script:python verification_notice@
fmt << find.fmt;
@@
if "module verification failed" not in fmt:
    cocci.include_match(False)

@fix depends on patch@
expression M, L;
position find.p;
position q;
@@
- add_taint_module@p@q(M, TAINT_FORCED_MODULE, L);
+ add_taint_module(M, TAINT_UNSIGNED_MODULE, L);

@script:python depends on taintport@
q << fix.q;
@@
print("taintport: fired sigcheck %s:%s" % (q[0].file, q[0].line))

@depends on context@
expression M, L;
position find.p;
@@
* add_taint_module@p(M, TAINT_FORCED_MODULE, L);

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
