"""The KTAP parser and the verdict on console logs (synthetic and captured)."""
import tomllib
from pathlib import Path

import pytest

from taintport import ktap, verdict, versions

DATA = Path(__file__).parent / "data" / "console"
LIVEPATCH_DATA = Path(__file__).parent / "data" / "livepatch"


def console(results, *, plan=None, end=0, noise=True):
    lines = ["[    0.000000] Linux version 6.1.176 (taintport@taintport)",
             "KTAP version 1", f"1..{plan if plan is not None else len(results)}"]
    for n, (name, ok) in enumerate(results, 1):
        lines.append(f"# {name.split('_')[0]}: observed something")
        if noise and n == 2:
            lines.append("[    1.234567] random: crng init done\r")
        lines.append(f"{'ok' if ok else 'not ok'} {n} {name}")
    if end is not None:
        lines.append(f"# taintport-agent: end status={end}")
    return "\n".join(lines) + "\n"


def test_clean_run_parses_with_diagnostics():
    parsed = ktap.parse(console([("signed_loads", True), ("signed_unloads", False)]))
    assert not parsed.errors
    assert parsed.results["signed_loads"].ok
    assert not parsed.results["signed_unloads"].ok
    assert parsed.results["signed_loads"].diagnostics == ["signed: observed something"]
    assert parsed.end_status == 0


def test_missing_plan_entry_is_an_error_not_a_result():
    parsed = ktap.parse(console([("a_x", True)], plan=3))
    assert any("2 of 3 planned results missing (first: 2)" in e for e in parsed.errors)


def test_no_end_marker_means_truncated():
    parsed = ktap.parse(console([("a_x", True)], end=None))
    assert any("cut short" in e for e in parsed.errors)


def test_no_ktap_at_all():
    parsed = ktap.parse("[    0.1] Linux version\n")
    assert parsed.errors == ["no KTAP output on the console"]


def test_refusal_is_reported_as_such():
    parsed = ktap.parse("taintport-agent: refusing to run: no taintport.token on "
                        "/proc/cmdline\n")
    assert "refusing to run" in parsed.errors[0]


def test_panic_is_an_error_with_its_lines():
    text = console([("a_x", True)]) + "[    2.0] Kernel panic - not syncing: sysrq triggered crash\n"
    parsed = ktap.parse(text)
    assert any(e.startswith("kernel panic") for e in parsed.errors)
    assert any("sysrq triggered crash" in line for line in parsed.panic)


def test_agent_error_status():
    parsed = ktap.parse(console([("a_x", True)], end=1))
    assert any("status 1" in e for e in parsed.errors)


EXPECTED = {"signed_loads": True, "signed_events_present": True}


def test_verdict_as_expected_and_unexpected():
    ok = ktap.parse(console([("signed_loads", True), ("signed_events_present", True)]))
    assert verdict.judge(ok, EXPECTED).status is verdict.Status.AS_EXPECTED
    bad = ktap.parse(console([("signed_loads", True), ("signed_events_present", False)]))
    j = verdict.judge(bad, EXPECTED)
    assert j.status is verdict.Status.UNEXPECTED
    assert [c.name for c in j.failing] == ["signed_events_present"]


def test_verdict_error_when_broken_even_if_checks_match():
    parsed = ktap.parse(console([("signed_loads", True), ("signed_events_present", True)],
                                end=None))
    assert verdict.judge(parsed, EXPECTED).status is verdict.Status.ERROR


def test_verdict_error_on_unreported_or_unknown_check():
    parsed = ktap.parse(console([("signed_loads", True), ("signed_other", True)]))
    j = verdict.judge(parsed, EXPECTED)
    assert j.status is verdict.Status.ERROR
    assert any("not reported" in e for e in j.errors)
    assert any("no expectation: signed_other" in e for e in j.errors)


def test_repository_expectations_are_complete_and_differ_where_the_bug_shows():
    exp = verdict.load()
    assert set(exp.variants) == {"upstream", "reverted", "backported", "patched"}
    assert set(exp.tables) == {"unsigned", "livepatch"}
    for fix, sides in exp.tables.items():
        differ = {k for k in sides["fix"] if sides["fix"][k] != sides["bug"][k]}
        assert differ, fix
        assert all(k.startswith(("unsigned_", "forced_", "livepatch_")) for k in differ)
    assert "unsigned_events_present" in {k for k in exp.tables["unsigned"]["fix"]
                                         if exp.tables["unsigned"]["fix"][k]
                                         != exp.tables["unsigned"]["bug"][k]}
    assert not exp.tables["livepatch"]["bug"]["livepatch_events_present"]


def test_fix_states_follow_the_variant_and_what_ships():
    exp = verdict.load()
    S = verdict.FixState
    bookworm = ("unsigned",)
    assert exp.states("upstream", bookworm) == {"unsigned": S.PRESENT, "livepatch": S.MISSING}
    assert exp.states("reverted", bookworm) == {"unsigned": S.RECONSTRUCTED,
                                                "livepatch": S.MISSING}
    assert exp.states("backported", bookworm) == {"unsigned": S.CARRIED, "livepatch": S.CARRIED}
    assert exp.states("patched", bookworm) == {"unsigned": S.PRESENT, "livepatch": S.CARRIED}
    assert exp.known_bug("upstream", exp.states("upstream", bookworm))
    assert not exp.known_bug("reverted", exp.states("reverted", bookworm))
    both = ("unsigned", "livepatch")
    assert not exp.known_bug("upstream", exp.states("upstream", both))
    assert exp.expected(exp.states("patched", bookworm)) == \
        exp.expected(exp.states("backported", bookworm))


def test_known_bug_is_as_expected_on_a_shipped_tree_that_lacks_a_fix():
    parsed = ktap.parse(console([("signed_loads", True)]))
    assert verdict.judge(parsed, {"signed_loads": True}, known_bug=True).status \
        is verdict.Status.KNOWN_BUG
    assert verdict.judge(parsed, {"signed_loads": False}, known_bug=True).status \
        is verdict.Status.UNEXPECTED


def test_livepatch_tables_list_the_same_checks_and_differ_where_the_bug_shows():
    """[livepatch.fix] and [livepatch.bug]: the 13 checks of the agent's livepatch mode."""
    data = tomllib.loads(verdict.EXPECTATIONS.read_text())
    fix, bug = data["livepatch"]["fix"], data["livepatch"]["bug"]
    assert list(fix) == list(bug)
    assert len(fix) == 13 and all(name.startswith("livepatch_") for name in fix)
    assert all(isinstance(v, bool) for v in [*fix.values(), *bug.values()])
    assert {k for k in fix if fix[k] != bug[k]} == {
        "livepatch_events_present", "livepatch_event_fires", "livepatch_log_bad_taint"}


@pytest.mark.parametrize("log", sorted(DATA.glob("*.log")) if DATA.exists() else [],
                         ids=lambda p: p.name)
def test_captured_console_logs(log):
    """Real boots: each file's name says which variant and what must come out.
    They were captured before the livepatch load mode: judged on the
    unsigned fix's checks, on bookworm 6.1 (which ships that fix)."""
    variant, outcome = log.stem.split("-", 1)
    parsed = ktap.parse(log.read_text(errors="replace"))
    exp = verdict.load()
    states = {"unsigned": exp.variant(variant).fix_state(True)}
    j = verdict.judge(parsed, exp.expected(states))
    assert j.status.value == outcome, j.errors or [c.name for c in j.failing]


@pytest.mark.parametrize("log", sorted(LIVEPATCH_DATA.glob("*.log")), ids=lambda p: p.name)
def test_captured_livepatch_modes(log):
    """Real boots of the upstream variant, <version>-<fix|bug>.log: all 61
    results judged as the matrix judges that version's upstream cell, from
    what its descriptor ships (5.10 and 6.1 lack e7bb66f79a7b: known bug)."""
    name, side = log.stem.rsplit("-", 1)
    exp = verdict.load()
    ships = versions.select([name])[0].ships
    states = exp.states("upstream", ships)
    assert states["livepatch"].fixed == (side == "fix")
    parsed = ktap.parse(log.read_text(errors="replace"))
    assert len(parsed.results) == 61
    j = verdict.judge(parsed, exp.expected(states), exp.known_bug("upstream", states))
    want = verdict.Status.AS_EXPECTED if side == "fix" else verdict.Status.KNOWN_BUG
    assert j.status is want, j.errors or [c.name for c in j.failing]
    # the other table would not do: the captures can tell the fix from the bug
    other = dict(states, livepatch=verdict.FixState.MISSING if side == "fix"
                 else verdict.FixState.CARRIED)
    assert verdict.judge(parsed, exp.expected(other)).status is verdict.Status.UNEXPECTED


def test_skipped_check_is_no_observation():
    text = console([("signed_loads", True), ("signed_events_present", True)])
    text = text.replace("ok 2 signed_events_present", "ok 2 signed_events_present # SKIP no tracefs")
    j = verdict.judge(ktap.parse(text), EXPECTED)
    assert j.status is verdict.Status.ERROR
    assert any("skipped" in e for e in j.errors)
    assert [c.observed for c in j.checks if c.name == "signed_events_present"] == [None]
