# SPDX-License-Identifier: GPL-2.0
"""The KTAP parser and the verdict on console logs (synthetic and captured)."""
import dataclasses
import tomllib
from pathlib import Path

import pytest

from taintport.judge import ktap, verdict
from taintport.layer import fixes
from taintport.tree import variants, versions
from taintport.tree.variants import HostCheck, Kind, named

CAPTURES = Path(__file__).parent / "data" / "consoles"


def console(results, *, plan=None, end=0, noise=True, subtest_ok=None):
    """A console as the agent prints it: results are ("<subtest>.<test>", ok),
    grouped into subtests in order of first appearance."""
    groups = {}
    for name, ok in results:
        sub, _, test = name.partition(".")
        groups.setdefault(sub, []).append((test, ok))
    lines = ["[    0.000000] Linux version 6.1.176 (taintport@taintport)",
             "KTAP version 1", f"1..{len(groups)}"]
    for k, (sub, tests) in enumerate(groups.items(), 1):
        lines += ["    KTAP version 1", f"    # Subtest: {sub}",
                  f"    1..{plan if plan is not None else len(tests)}"]
        for n, (test, ok) in enumerate(tests, 1):
            lines.append(f"    # {sub}: observed something")
            if noise and n == 2:
                lines.append("[    1.234567] random: crng init done\r")
            lines.append(f"    {'ok' if ok else 'not ok'} {n} {test}")
        good = all(ok for _, ok in tests) if subtest_ok is None else subtest_ok
        lines.append(f"{'ok' if good else 'not ok'} {k} {sub}")
    if end is not None:
        lines.append(f"# taintport-agent: end status={end}")
    return "\n".join(lines) + "\n"


def test_clean_run_parses_with_diagnostics():
    parsed = ktap.parse(console([("signed.loads", True), ("signed.unloads", False)]))
    assert not parsed.errors
    assert parsed.results["signed.loads"].ok
    assert not parsed.results["signed.unloads"].ok
    assert parsed.results["signed.loads"].diagnostics == ["signed: observed something"]
    assert parsed.subtests["signed"].tests == ["signed.loads", "signed.unloads"]
    assert not parsed.subtests["signed"].result.ok
    assert parsed.end_status == 0


def test_subtests_are_numbered_apart_and_closed_by_their_own_line():
    parsed = ktap.parse(console([("signed.loads", True), ("unsigned.loads", True),
                                 ("unsigned.unloads", True)]))
    assert not parsed.errors
    assert [r.number for r in parsed.results.values()] == [1, 1, 2]
    assert [s.result.number for s in parsed.subtests.values()] == [1, 2]


def test_subtest_result_that_contradicts_its_tests_is_an_error():
    parsed = ktap.parse(console([("signed.loads", False)], subtest_ok=True))
    assert any("contradicts its tests" in e for e in parsed.errors)


def test_a_prefix_before_the_version_line_is_stripped_as_kunit_does():
    text = "".join(f"prefix| {line}\n" for line in
                   console([("signed.loads", True)], noise=False).splitlines())
    parsed = ktap.parse(text)
    assert not parsed.errors, parsed.errors
    assert parsed.results["signed.loads"].ok


def test_missing_plan_entry_is_an_error_not_a_result():
    parsed = ktap.parse(console([("a.x", True)], plan=3))
    assert any("2 of 3 planned results missing (first: 2)" in e for e in parsed.errors)


def test_no_end_marker_means_truncated():
    parsed = ktap.parse(console([("a.x", True)], end=None))
    assert any("cut short" in e for e in parsed.errors)


def test_no_ktap_at_all():
    parsed = ktap.parse("[    0.1] Linux version\n")
    assert parsed.errors == ["no KTAP output on the console"]


def test_refusal_is_reported_as_such():
    parsed = ktap.parse("taintport-agent: refusing to run: no taintport.token on "
                        "/proc/cmdline\n")
    assert "refusing to run" in parsed.errors[0]


def test_panic_is_an_error_with_its_lines():
    text = console([("a.x", True)]) + "[    2.0] Kernel panic - not syncing: sysrq triggered crash\n"
    parsed = ktap.parse(text)
    assert any(e.startswith("kernel panic") for e in parsed.errors)
    assert any("sysrq triggered crash" in line for line in parsed.panic)


def test_agent_error_status():
    parsed = ktap.parse(console([("a.x", True)], end=1))
    assert any("status 1" in e for e in parsed.errors)


EXPECTED = {"signed.loads": True, "signed.events_present": True}


def test_verdict_as_expected_and_unexpected():
    ok = ktap.parse(console([("signed.loads", True), ("signed.events_present", True)]))
    assert verdict.judge(ok, EXPECTED).status is verdict.Status.AS_EXPECTED
    bad = ktap.parse(console([("signed.loads", True), ("signed.events_present", False)]))
    j = verdict.judge(bad, EXPECTED)
    assert j.status is verdict.Status.UNEXPECTED
    assert [c.name for c in j.failing] == ["signed.events_present"]


def test_an_expected_failure_that_passes_is_unexpected_too():
    """as-expected only when the failures are exactly the expected set"""
    parsed = ktap.parse(console([("signed.loads", True), ("signed.events_present", True)]))
    j = verdict.judge(parsed, {"signed.loads": True, "signed.events_present": False})
    assert j.status is verdict.Status.UNEXPECTED
    assert [c.name for c in j.failing] == ["signed.events_present"]


def test_verdict_error_when_broken_even_if_checks_match():
    parsed = ktap.parse(console([("signed.loads", True), ("signed.events_present", True)],
                                end=None))
    assert verdict.judge(parsed, EXPECTED).status is verdict.Status.ERROR


def test_verdict_error_on_unreported_or_unknown_check():
    parsed = ktap.parse(console([("signed.loads", True), ("signed.other", True)]))
    j = verdict.judge(parsed, EXPECTED)
    assert j.status is verdict.Status.ERROR
    assert any("not reported" in e for e in j.errors)
    assert any("no expectation: signed.other" in e for e in j.errors)


def test_repository_expectations_list_every_test_and_each_fixs_failures():
    exp = verdict.load(fixes.NAMES)
    table = variants.table()
    assert [v.name for v in table.booted()] == ["upstream", "shipped", "reverted",
                                                "backported", "patched"]
    # the distribution's binary skips only what a module signed by it cannot show
    assert all(t.startswith(("signed.", "enforced.signed_")) or t == "livepatch.module_not_tainted_E"
               for t in named("shipped").skips)
    assert named("shipped").check(Kind.AGREES) == HostCheck("shipped", Kind.AGREES, "upstream")
    assert set(exp.xfail) >= {"unsigned", "livepatch", "test"}
    subtests = [t.partition(".")[0] for t in exp.tests]
    assert list(dict.fromkeys(subtests)) == ["signed", "unsigned", "forced", "test",
                                             "livepatch", "staging", "enforced"]
    assert len(exp.tests) == 16 * 3 + 10 + 13 + 11 + 18
    assert exp.xfail["test"] == {"test.events_present", "test.event_fires",
                                 "test.log_no_bad_taint"}
    assert "unsigned.events_present" in exp.xfail["unsigned"]
    assert exp.xfail["livepatch"] == {"livepatch.events_present", "livepatch.event_fires",
                                      "livepatch.log_no_bad_taint"}
    # the signed load and signature enforcement are the same with or without a fix
    for fix, tests in exp.xfail.items():
        assert not {t for t in tests if t.startswith(("signed.", "enforced."))}, fix
    assert exp.owner("forced.log_bad_vermagic") == "unsigned"
    assert exp.owner("enforced.sig_enforce_enabled") == ""


def test_fix_states_follow_the_variant_and_what_ships():
    exp = verdict.load(fixes.NAMES)
    S = verdict.FixState
    # bookworm's 6.1 as its file says: it ships some of the family, not all
    bookworm = versions.select(["bookworm-6.1"])[0].ships
    assert set(bookworm) and set(fixes.NAMES) - set(bookworm) <= exp.carried
    assert set(fixes.NAMES) - set(bookworm)
    states = {name: {f: s for f, s in exp.states(named(name), bookworm).items()
                     if f in fixes.NAMES}
              for name in ("upstream", "reverted", "backported", "patched")}

    def per_fix(shipped, not_shipped):
        return {f: shipped if f in bookworm else not_shipped for f in fixes.NAMES}
    assert states["upstream"] == per_fix(S.PRESENT, S.MISSING)
    assert states["reverted"] == per_fix(S.RECONSTRUCTED, S.MISSING)
    assert states["backported"] == per_fix(S.CARRIED, S.CARRIED)
    assert states["patched"] == per_fix(S.PRESENT, S.CARRIED)
    assert exp.known_bug(named("upstream"), exp.states(named("upstream"), bookworm))
    assert not exp.known_bug(named("reverted"), exp.states(named("reverted"), bookworm))
    every = tuple(exp.xfail)
    assert not exp.known_bug(named("upstream"), exp.states(named("upstream"), every))
    # the same kernel, but for a fix the guest tests and the layer does not
    # carry (yet): backported's tree has it removed
    uncarried = frozenset().union(*(exp.xfail[f] for f in every if f not in exp.carried))
    patched, backported = (exp.expected(exp.states(named(v), every))
                           for v in ("patched", "backported"))
    assert {t for t in patched if patched[t] != backported[t]} == uncarried
    # a fixed kernel passes every test; the reverted one fails every fix's set
    assert all(exp.expected(exp.states(named("upstream"), every)).values())
    assert exp.failures(exp.states(named("reverted"), every)) == \
        frozenset().union(*exp.xfail.values())


def test_a_fix_not_applicable_to_a_version_expects_what_its_absence_fails():
    """bullseye's 5.10 has no TAINT_TEST: whatever the variant, the test fix is
    not applicable there, with its reason, and the kernel fails the tests of
    a kernel without that taint, not the fix's bug."""
    exp = verdict.load(fixes.NAMES)
    for variant in ("upstream", "reverted", "backported", "patched"):
        states = exp.states(named(variant), ("unsigned",), "bullseye-5.10")
        assert states["test"] is verdict.FixState.NOT_APPLICABLE
        assert "TAINT_TEST" in exp.why_not_applicable(states, "bullseye-5.10")["test"]
        failing = exp.failures(states)
        assert exp.absent["test"] <= failing
        assert not exp.xfail["test"] & failing
    # the reason reaches the reports with each such test's diagnostics
    states = exp.states(named("upstream"), ("unsigned",), "bullseye-5.10")
    notes = exp.notes(states, "bullseye-5.10")
    assert set(notes) == exp.absent["test"]
    parsed = ktap.parse(console([("test.module_tainted_N", False)]))
    check = verdict.judge(parsed, {"test.module_tainted_N": False}, notes=notes).checks[0]
    assert check.matches and "not applicable to bullseye-5.10: no TAINT_TEST" in \
        check.diagnostics[-1]
    assert exp.notes(exp.states(named("upstream"), ("unsigned", "test"), "bookworm-6.1"),
                     "bookworm-6.1") == {}
    # on a version that has the taint, the fix is judged as any other
    assert exp.states(named("upstream"), ("unsigned", "test"), "bookworm-6.1")["test"] is \
        verdict.FixState.PRESENT


def test_known_bug_is_as_expected_on_a_shipped_tree_that_lacks_a_fix():
    parsed = ktap.parse(console([("signed.loads", True)]))
    assert verdict.judge(parsed, {"signed.loads": True}, known_bug=True).status \
        is verdict.Status.KNOWN_BUG
    assert verdict.judge(parsed, {"signed.loads": False}, known_bug=True).status \
        is verdict.Status.UNEXPECTED


# The subtests the agent gained after the captures were made, and the fix
# each belongs to ("" for none): a capture is judged on the subtests it has,
# and may lack only these (README.md there: capture again, then empty it).
# None since every capture was made again (2026-12-07).
ADDED_SINCE_CAPTURE: dict[str, str] = {}


def as_captured(exp, parsed):
    """exp without the subtests a capture could not have printed yet."""
    have = set(parsed.subtests)
    gone = {t.partition(".")[0] for t in exp.tests} - have
    assert gone <= set(ADDED_SINCE_CAPTURE) or parsed.broken, gone
    return dataclasses.replace(
        exp, tests=tuple(t for t in exp.tests if t.partition(".")[0] not in gone),
        xfail={f: x for f, x in exp.xfail.items() if f not in missing_fixes(gone)})


def missing_fixes(gone):
    """The fixes whose guest side an older capture lacks (its subtests gone)."""
    return {ADDED_SINCE_CAPTURE[s] for s in gone if ADDED_SINCE_CAPTURE.get(s)}


def captures():
    return sorted(CAPTURES.glob("*/*.log")) if CAPTURES.exists() else []


@pytest.mark.parametrize("log", captures(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_captured_consoles_are_judged_as_the_matrix_judged_them(log):
    """Real boots (tools/tests/data/consoles/README.md), <version>/<variant>.log,
    some with how they were provoked in the name (<variant>-<outcome>.log):
    judged from what the version's descriptor ships, as the matrix does."""
    name, _, outcome = log.stem.partition("-")
    variant = named(name)
    parsed = ktap.parse(log.read_text(errors="replace"))
    exp = as_captured(verdict.load(fixes.NAMES), parsed)
    ships = versions.select([log.parent.name])[0].ships
    states = exp.states(variant, ships, log.parent.name)
    skips = variant.skips
    j = verdict.judge(parsed, exp.expected(states), exp.known_bug(variant, states), skips)
    want = outcome or ("known-bug" if exp.known_bug(variant, states) else "as-expected")
    assert j.status.value == want, j.errors or [c.name for c in j.failing]
    if outcome:
        return
    assert len(parsed.results) == len(exp.tests)
    # the captures can tell each fix from its bug: judged as if one fix's
    # state were the other, every sound capture is unexpected
    lacking = missing_fixes({t.partition(".")[0] for t in verdict.load(fixes.NAMES).tests}
                            - set(parsed.subtests))
    for fix, state in states.items():
        if fix in lacking:
            continue
        flipped = dict(states, **{fix: verdict.FixState.CARRIED if not state.fixed
                                  else verdict.FixState.MISSING})
        assert verdict.judge(parsed, exp.expected(flipped), skips=skips).status is \
            verdict.Status.UNEXPECTED, fix


def test_every_version_has_its_captures():
    have = {(p.parent.name, p.stem) for p in captures()}
    for version in versions.select(None):
        for variant in ("upstream", "shipped", "reverted", "backported"):
            assert (version.name, variant) in have


def test_skipped_check_is_no_observation():
    text = console([("signed.loads", True), ("signed.events_present", True)])
    text = text.replace("ok 2 events_present", "ok 2 events_present # SKIP no tracefs")
    j = verdict.judge(ktap.parse(text), EXPECTED)
    assert j.status is verdict.Status.ERROR
    assert any("could not observe: signed.events_present (no tracefs)" in e for e in j.errors)
    assert [(c.observed, c.directive) for c in j.checks
            if c.name == "signed.events_present"] == [(None, "SKIP")]


def test_a_finding_with_skips_it_caused_is_unexpected():
    """a module that did not load has no taint to look at: the load is the finding"""
    text = console([("signed.loads", False), ("signed.events_present", True)])
    text = text.replace("ok 2 events_present", "ok 2 events_present # SKIP module not loaded")
    j = verdict.judge(ktap.parse(text), EXPECTED)
    assert j.status is verdict.Status.UNEXPECTED


# KTAP the agent never prints, which must not read as a clean run (issue 34 item 8)

@pytest.mark.parametrize("word", ["# skip", "# Skip", "#SKIP", "# SKIP"])
def test_a_skip_directive_is_read_in_any_case(word):
    """ktap.rst: directives are case-insensitive; a lower-case skip is no observation."""
    text = console([("signed.loads", True), ("signed.events_present", True)])
    text = text.replace("ok 2 events_present", f"ok 2 events_present {word} no tracefs")
    parsed = ktap.parse(text)
    result = parsed.results["signed.events_present"]
    assert (result.directive, result.skipped, result.reason) == ("SKIP", True, "no tracefs")
    assert verdict.judge(parsed, EXPECTED).status is verdict.Status.ERROR


def test_a_test_reported_twice_is_an_error():
    text = console([("signed.loads", True), ("signed.events_present", True)])
    text = text.replace("ok 2 events_present", "ok 2 loads")
    parsed = ktap.parse(text)
    assert parsed.errors == ["result name signed.loads reported twice"]
    assert verdict.judge(parsed, EXPECTED).status is verdict.Status.ERROR


def test_more_results_than_planned_is_an_error():
    parsed = ktap.parse(console([("signed.loads", True), ("signed.events_present", True)],
                                plan=1))
    assert parsed.errors == ["subtest signed: 2 results for a plan of 1"]
    assert verdict.judge(parsed, EXPECTED).status is verdict.Status.ERROR


def test_more_subtests_than_planned_is_an_error():
    text = console([("signed.loads", True), ("unsigned.loads", True)])
    parsed = ktap.parse(text.replace("\n1..2\n", "\n1..1\n", 1))
    assert parsed.errors == ["2 subtests for a plan of 1"]
