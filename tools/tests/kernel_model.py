# SPDX-License-Identifier: GPL-2.0
"""An independent model of the kernel rules the in-guest test observes.

The oracle for the guest data's expected failures (test-matrix/fixes/): it knows nothing of what any
boot printed. It replays the agent's loads (test-matrix/README.md) on a
model kernel with or without each fix of the family and says what every
test must report. A new fix or a new load mode extends this model first.

The rules, as the kernel source has them (kernel/module/main.c since 5.19,
kernel/module.c and kernel/module_signing.c before; names of functions, so
that they hold across versions):

- load_module(): the signature is checked first, module_sig_check(). With
  sig_enforce on, a module without a valid signature (and any forced load:
  a "mangled" module's signature is not even looked at) is refused with
  -EKEYREJECTED and "Loading of unsigned module is rejected", before any
  taint is added.
- check_modinfo(): a load with MODULE_INIT_IGNORE_VERMAGIC has no vermagic
  to check, so try_to_force_load(mod, "bad vermagic") taints it F
  (TAINT_FORCED_MODULE), printing "<mod>: bad vermagic: kernel tainted."
  only while the kernel is not tainted F yet (its test_taint() check);
  !get_modinfo(info, "intree") taints it O (TAINT_OOT_MODULE);
  check_modinfo_livepatch() taints a livepatch K (TAINT_LIVEPATCH) and
  prints "tainting kernel with TAINT_LIVEPATCH" with pr_notice_once();
  get_modinfo(info, "staging") taints it C (TAINT_CRAP), printing "module is
  from the staging directory" every time; since v6.0 (2852ca7fba9f)
  get_modinfo(info, "test") taints it N (TAINT_TEST), printing "loading test
  module taints kernel" only while the kernel is not tainted N yet. A kernel
  without TAINT_TEST ignores the tag.
- After that, !mod->sig_ok prints "module verification failed: signature
  and/or required key missing - tainting kernel" with pr_notice_once (once
  a boot) and taints the module: E (TAINT_UNSIGNED_MODULE) with the unsigned
  fix (66cc69e34e86), F before it (v3.7-v3.14).
- add_taint_module() sets the bit in the module's taints and in the kernel's
  (sticky for the whole boot).
- The module_load trace event prints show_module_flags(mod->taints): P, O,
  F, C, and E once the unsigned fix has it (57673c2b0baa); never K nor N.
- trace_module_add_events() skips a module for which
  trace_module_has_bad_taint() is true, printing "module has bad taint, not
  creating trace events": a taint outside the allow-list O, C, T, plus E
  with the unsigned fix (57673c2b0baa), N with the test fix (54be5509422e)
  and K with the livepatch fix (e7bb66f79a7b). Without events, the module's tracepoint fires into
  nothing.
"""
from dataclasses import dataclass, field

F, C, O, E, K, N = "F", "C", "O", "E", "K", "N"
BIT = {F: 1, C: 10, O: 12, E: 13, K: 15, N: 18}  # include/linux/panic.h


@dataclass
class Kernel:
    fixes: frozenset[str]               # the fixes of the family this kernel has
    tainted: set[str] = field(default_factory=set)
    printed_once: set[str] = field(default_factory=set)
    sig_enforce: bool = False
    taint_test: bool = True             # TAINT_TEST exists (v6.0 on)
    loaded: set[str] = field(default_factory=set)

    def once(self, message: str, log: list[str]) -> None:
        if message not in self.printed_once:
            self.printed_once.add(message)
            log.append(message)


@dataclass
class Load:
    """What one load did, as the agent observes it."""
    loaded: bool
    errno: str = ""
    module_taint: set[str] = field(default_factory=set)
    kernel_before: set[str] = field(default_factory=set)
    kernel_after: set[str] = field(default_factory=set)
    module_load_flags: set[str] = field(default_factory=set)
    events: bool = False
    log: list[str] = field(default_factory=list)


VERIFICATION_FAILED = "module verification failed"
BAD_VERMAGIC = "bad vermagic"
BAD_TAINT = "module has bad taint, not creating trace events"
LIVEPATCH_TAINT = "tainting kernel with TAINT_LIVEPATCH"
STAGING = "module is from the staging directory"
TEST_TAINT = "loading test module taints kernel"
REJECTED = "Loading of unsigned module is rejected"


def load(kernel: Kernel, name: str, *, signed: bool, forced: bool = False,
         livepatch: bool = False, staging: bool = False, test: bool = False) -> Load:
    out = Load(loaded=False, kernel_before=set(kernel.tainted))
    sig_ok = signed and not forced                       # module_sig_check()
    if not sig_ok and kernel.sig_enforce:
        out.log.append(REJECTED)
        out.errno = "EKEYREJECTED"
        out.kernel_after = set(kernel.tainted)
        return out
    taints: set[str] = set()

    def taint(letter: str) -> None:                      # add_taint_module()
        taints.add(letter)
        kernel.tainted.add(letter)

    if forced:                                           # check_modinfo()
        if F not in kernel.tainted:
            out.log.append(BAD_VERMAGIC)
        taint(F)
    taint(O)
    if staging:
        out.log.append(STAGING)
        taint(C)
    if test and kernel.taint_test:
        if N not in kernel.tainted:
            out.log.append(TEST_TAINT)
        taint(N)
    if livepatch:
        taint(K)
        kernel.once(LIVEPATCH_TAINT, out.log)
    if not sig_ok:
        kernel.once(VERIFICATION_FAILED, out.log)
        taint(E if "unsigned" in kernel.fixes else F)
    allowed = {O, "C", "T"} | ({E} if "unsigned" in kernel.fixes else set()) \
        | ({K} if "livepatch" in kernel.fixes else set()) \
        | ({N} if "test" in kernel.fixes else set())
    shown = {"P", O, F, "C"} | ({E} if "unsigned" in kernel.fixes else set())
    out.loaded = True
    out.module_taint = taints
    out.module_load_flags = taints & shown
    out.events = not taints - allowed                   # trace_module_has_bad_taint()
    if not out.events:
        out.log.append(BAD_TAINT)
    out.kernel_after = set(kernel.tainted)
    kernel.loaded.add(name)
    return out


def unload(kernel: Kernel, name: str) -> None:
    kernel.loaded.discard(name)


def boot(fixes, taint_test: bool = True) -> dict[str, Load]:
    """The agent's loads in its order, on a kernel with these fixes."""
    kernel = Kernel(frozenset(fixes), taint_test=taint_test)
    loads = {}
    for mode, name, kwargs in (("signed", "utt", dict(signed=True)),
                               ("unsigned", "utt", dict(signed=False)),
                               ("forced", "utt", dict(signed=False, forced=True)),
                               ("test", "tst", dict(signed=True, test=True)),
                               ("livepatch", "tlp", dict(signed=True, livepatch=True)),
                               ("staging", "stg", dict(signed=True, staging=True))):
        loads[mode] = load(kernel, name, **kwargs)
        unload(kernel, name)
    kernel.sig_enforce = True                            # sig_enforce: enable-only
    for mode, kwargs in (("enforced_unsigned", dict(signed=False)),
                         ("enforced_forced", dict(signed=False, forced=True)),
                         ("enforced_signed", dict(signed=True))):
        loads[mode] = load(kernel, "utt", **kwargs)
        unload(kernel, "utt")
    return loads


def _letter_test(test: str, have: set[str]) -> bool | None:
    """<what>_tainted_X / <what>_not_tainted_X against a set of letters."""
    for neg, word in ((True, "not_tainted_"), (False, "tainted_")):
        if word in test:
            letter = test.rsplit("_", 1)[1]
            return (letter not in have) if neg else (letter in have)
    return None


def observe(load: Load, test: str) -> bool:
    """What the agent's test reports for one load (test-matrix/README.md)."""
    if test == "loads":
        return load.loaded
    if test == "unloads":
        return load.loaded
    if test in ("patch_enabled", "patch_applies"):
        return load.loaded
    if test.startswith("module_load_"):
        return bool(_letter_test(test, load.module_load_flags))
    if test.startswith("module_"):
        return bool(_letter_test(test, load.module_taint))
    if test.startswith("kernel_"):
        return bool(_letter_test(test, load.kernel_after))
    if test in ("events_present", "event_fires"):
        return load.events
    if test in ("events_refused", "event_silent"):
        return not load.events
    needles = {"verification_failed": VERIFICATION_FAILED, "bad_vermagic": BAD_VERMAGIC,
               "bad_taint": BAD_TAINT, "livepatch_taint": LIVEPATCH_TAINT,
               "staging": STAGING, "test_taint": TEST_TAINT, "rejected": REJECTED}
    if test.startswith("log_no_"):
        return needles[test[len("log_no_"):]] not in load.log
    if test.startswith("log_"):
        return needles[test[len("log_"):]] in load.log
    raise KeyError(f"the model does not know the test {test}")


def enforced(loads: dict[str, Load], sig_enforce_on: bool, test: str) -> bool:
    if test == "sig_enforce_enabled":
        return sig_enforce_on
    which, _, rest = test.partition("_")
    load = loads[f"enforced_{which}"]
    if rest == "refused":
        return not load.loaded and load.errno == "EKEYREJECTED"
    if rest == "not_loaded":
        return not load.loaded
    if rest == "no_events":
        return not load.events
    if rest == "no_new_taint":
        return load.kernel_before == load.kernel_after
    return observe(load, rest)


def results(fixes, tests, taint_test: bool = True) -> dict[str, bool]:
    """{"<subtest>.<test>": passes} for every test, on a kernel with these fixes
    (and without TAINT_TEST when taint_test is false: before v6.0)."""
    loads = boot(fixes, taint_test)
    out = {}
    for name in tests:
        subtest, _, test = name.partition(".")
        out[name] = enforced(loads, True, test) if subtest == "enforced" \
            else observe(loads[subtest], test)
    return out
