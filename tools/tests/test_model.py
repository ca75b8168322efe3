# SPDX-License-Identifier: GPL-2.0
"""The guest data's expected failures (test-matrix/fixes/) against an
independent model of the kernel's rules (kernel_model.py), not against what a
boot printed. The fixes are those the guest tests (a file each)."""
import dataclasses
import itertools

import kernel_model
from taintport.judge import verdict
from taintport.layer import fixes as layer

EXP = verdict.load(layer.NAMES)


class fixes:
    """The fixes the guest tests, in upstream order."""
    NAMES = tuple(EXP.xfail)


def disagreements(exp):
    """Where the data and the model part: one line per fix and test."""
    wrong = [f"all fixes: {t}" for t, ok in
             kernel_model.results(fixes.NAMES, exp.tests).items() if not ok]
    for fix in fixes.NAMES:
        got = kernel_model.results(set(fixes.NAMES) - {fix}, exp.tests)
        model = {t for t, ok in got.items() if not ok}
        wrong += [f"without {fix}: {t} (model fails it: {t in model})"
                  for t in sorted(model ^ exp.xfail[fix])]
    return wrong


def test_a_kernel_with_every_fix_passes_every_test():
    exp = EXP
    got = kernel_model.results(fixes.NAMES, exp.tests)
    assert [t for t, ok in got.items() if not ok] == []


def test_each_fixs_expected_failures_are_what_the_model_says_its_absence_fails():
    assert disagreements(EXP) == []


def test_flipping_any_one_expectation_is_caught():
    """The comparison is not vacuous: every single expectation of every fix,
    turned over (a test added to or taken from its xfail list), is a
    disagreement naming that fix and that test."""
    exp = EXP
    flips = 0
    for fix in fixes.NAMES:
        for test in exp.tests:
            flipped = dataclasses.replace(exp, xfail={**exp.xfail,
                                                      fix: exp.xfail[fix] ^ {test}})
            said = disagreements(flipped)
            assert len(said) == 1 and said[0].startswith(f"without {fix}: {test} "), said
            flips += 1
    assert flips == len(fixes.NAMES) * len(exp.tests) > 100


def test_every_combination_of_missing_fixes_fails_the_union_of_their_lists():
    """What the verdict assumes when a tree lacks several fixes (reverted)."""
    exp = EXP
    for n in range(len(fixes.NAMES) + 1):
        for missing in itertools.combinations(fixes.NAMES, n):
            got = kernel_model.results(set(fixes.NAMES) - set(missing), exp.tests)
            states = {f: verdict.FixState.MISSING if f in missing else verdict.FixState.PRESENT
                      for f in fixes.NAMES}
            assert {t for t, ok in got.items() if not ok} == exp.failures(states), missing


def test_the_model_can_tell_the_bugs_apart():
    """A model that passed everything would make the tests above vacuous."""
    before_3_15 = kernel_model.boot(set())
    assert before_3_15["unsigned"].module_taint == {"O", "F"}
    assert not before_3_15["unsigned"].events
    assert "bad vermagic" not in before_3_15["forced"].log
    debian_6_1 = kernel_model.boot({"unsigned"})
    assert debian_6_1["livepatch"].module_taint == {"O", "K"}
    assert not debian_6_1["livepatch"].events
    assert debian_6_1["enforced_unsigned"].errno == "EKEYREJECTED"


def test_a_kernel_without_taint_test_fails_what_the_test_fix_calls_absent():
    """Where a fix is not applicable (bullseye's 5.10 has no TAINT_TEST), the
    kernel fails that fix's `absent` list and nothing else, fixes or not."""
    for fix, absent in EXP.absent.items():
        if not absent:
            continue
        for present in (fixes.NAMES, [f for f in fixes.NAMES if f != fix]):
            got = kernel_model.results(present, EXP.tests, taint_test=False)
            missing = set(fixes.NAMES) - set(present) - {fix}
            want = absent | frozenset().union(*(EXP.xfail[f] for f in missing))
            assert {t for t, ok in got.items() if not ok} == want, (fix, present)
