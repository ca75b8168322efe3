# SPDX-License-Identifier: GPL-2.0
"""Verdict stage: observed KTAP results against what the guest data expects.

Every test asserts the behaviour of a kernel with every fix of the family,
so a cell expects each test to pass except the expected failures (xfail) of
the fixes its tree lacks (test-matrix/fixes/<fix>.toml, read by
guest.py), and, where a fix has no meaning (a kernel without the
taint it allows), the failures of a kernel without that taint. A cell is "as-expected" when the failures are
exactly that set ("known-bug" when, on top of that, the tree as shipped lacks
a fix of the family), "unexpected" when the run was sound but a test's result
differs (the kernel is not what we thought: KCIDB's FAIL), and "error" when
the run broke or the output cannot be trusted (KCIDB's ERROR/MISS), which
includes a test the agent could not observe (# SKIP) unless the variant
declares that test unobservable by design (test-matrix/variants.toml skips:
the distribution's binary cannot load a module signed with our key).
"""
import enum
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from taintport import family
from taintport.digest import tree_digest
from taintport.errors import InputError
from taintport import guest
from taintport.judge.ktap import Parsed
from taintport.tree import variants
from taintport.tree.variants import Base, HostCheck, Variant


class Status(str, enum.Enum):
    AS_EXPECTED = "as-expected"
    # as expected, and the tree as shipped lacks a fix of the family: the
    # distribution's users have that bug (a finding, not a failure: exit 0)
    KNOWN_BUG = "known-bug"
    UNEXPECTED = "unexpected"
    ERROR = "error"


class FixState(str, enum.Enum):
    """A fix of the family in one cell's tree."""
    PRESENT = "present"              # shipped, and left in place
    MISSING = "missing"              # not shipped, not carried: the bug as shipped
    RECONSTRUCTED = "reconstructed"  # shipped, removed by the negative control
    CARRIED = "carried"              # put there by taintport's layer
    NOT_APPLICABLE = "not-applicable"  # the kernel lacks what the fix is about

    @property
    def fixed(self) -> bool:
        return self in (FixState.PRESENT, FixState.CARRIED)


def fix_state(variant: Variant, shipped: bool, carried: bool = True) -> FixState:
    """A fix's state in a variant's tree, given whether the version ships it
    and whether the layer carries it."""
    if variant.layer and carried:
        return FixState.PRESENT if shipped and variant.base is Base.SHIPPED else \
            FixState.CARRIED
    if variant.base is Base.SHIPPED:
        return FixState.PRESENT if shipped else FixState.MISSING
    return FixState.RECONSTRUCTED if shipped else FixState.MISSING


@dataclass(frozen=True)
class Expectations:
    tests: tuple[str, ...]            # "<subtest>.<test>", in the agent's order
    xfail: dict[str, frozenset[str]]  # fix -> the tests a tree without it fails
    carried: frozenset[str]           # the fixes the layer carries
    absent: Mapping[str, frozenset[str]] = field(default_factory=dict)
    #                                   fix -> the tests a kernel without its taint fails
    not_applicable: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    #                                   fix -> {version: why the fix has no meaning there}

    def states(self, variant: Variant, ships: Iterable[str],
               version: str = "") -> dict[str, FixState]:
        """{fix: FixState} of a variant's tree, given what the version ships."""
        ships = set(ships)
        return {fix: FixState.NOT_APPLICABLE
                if version in self.not_applicable.get(fix, {}) else
                fix_state(variant, fix in ships, fix in self.carried)
                for fix in self.xfail}

    def why_not_applicable(self, states: Mapping[str, FixState], version: str) -> dict[str, str]:
        """{fix: why} for the fixes a version's cells do not apply."""
        return {fix: self.not_applicable[fix][version] for fix, state in states.items()
                if state is FixState.NOT_APPLICABLE}

    def notes(self, states: Mapping[str, FixState], version: str) -> dict[str, str]:
        """{test: why it is expected to fail} for the tests a fix that is not
        applicable to the version expects failed: the reason reaches the
        reports with the test's diagnostics."""
        return {test: f"host: {fix} is not applicable to {version}: {why}; expected "
                      "to fail as on any kernel without what it is about"
                for fix, why in self.why_not_applicable(states, version).items()
                for test in sorted(self.absent[fix])}

    def check_applicable(self, version: str, judged: Mapping[str, str]) -> None:
        """The guest data's [not_applicable] for a version must be the layer's
        judgement of its tree (judged: {fix: why}, layer/ships.check_ships),
        for the fixes the layer carries: the judge reads the guest's table,
        and a table the tree disagrees with is refused before a cell runs."""
        said = {fix for fix in self.carried if version in self.not_applicable.get(fix, {})}
        if said != set(judged):
            shown = ", ".join(sorted(said)) or "none"
            found = "; ".join(f"{fix}: {why}" for fix, why in sorted(judged.items())) or "none"
            raise InputError(f"{guest.FIXES}: [not_applicable] says {version} cannot have "
                             f"fix(es) {shown}, but the layer judges its fetched tree's: {found}")

    def known_bug(self, variant: Variant, states: dict[str, FixState]) -> bool:
        """The tree as the distribution ships it, lacking a fix of the family."""
        return variant.base is Base.SHIPPED and not variant.layer and \
            any(state is FixState.MISSING for state in states.values())

    def failures(self, states: dict[str, "FixState"]) -> frozenset[str]:
        """The tests a tree whose fixes are in these states fails."""
        out: frozenset[str] = frozenset()
        for fix, state in states.items():
            if state is FixState.NOT_APPLICABLE:
                out |= self.absent[fix]
            elif not state.fixed:
                out |= self.xfail[fix]
        return out

    def expected(self, states: dict[str, "FixState"]) -> dict[str, bool]:
        """{test: passes} for a tree whose fixes are in these states."""
        failing = self.failures(states)
        return {test: test not in failing for test in self.tests}

    def owner(self, test: str) -> str:
        """The fix whose absence fails test, or "" for a test every tree passes."""
        return next((fix for fix, tests in self.xfail.items() if test in tests), "")


class HasChecks(Protocol):
    """A judged cell, as agreement() reads it (cells.Cell, which imports this module)."""
    variant: Variant
    checks: list["Check"]


@dataclass(frozen=True)
class Check:
    name: str              # "<subtest>.<test>", or a host check's name
    expected: bool         # True: the test passes (ok)
    observed: bool | None  # None: never reported, or skipped
    diagnostics: tuple = ()
    directive: str = ""    # "SKIP" when the agent could not observe it
    declared_skip: bool = False  # the variant cannot observe it by design

    @property
    def matches(self) -> bool:
        if self.declared_skip:
            return self.observed is None and self.directive == "SKIP"
        return self.observed is not None and self.observed == self.expected

    @property
    def subtest(self) -> str:
        """The load mode (KTAP subtest) a guest test belongs to; "" for a host check."""
        return self.name.partition(".")[0] if "." in self.name else ""

    @property
    def test(self) -> str:
        """The test's name within its subtest; a host check's whole name."""
        return self.name.partition(".")[2] or self.name

    def as_dict(self) -> dict[str, object]:
        word = {True: "ok", False: "not ok", None: "missing"}
        out = {"name": self.name, "expected": word[self.expected],
               "observed": word[self.observed], "matches": self.matches,
               "diagnostics": list(self.diagnostics)}
        if self.directive:
            out["directive"] = self.directive
        if self.declared_skip:
            out["declared_skip"] = True
        return out


@dataclass
class Judgement:
    status: Status
    checks: list[Check] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    @property
    def failing(self) -> list[Check]:
        return [c for c in self.checks if not c.matches]


def load(fix_names: Sequence[str], data: guest.Guest | None = None,
         table_path: Path | str = variants.TABLE) -> Expectations:
    """The guest data's tests and expected failures (guest.py), checked
    against the layer's family (fix_names: the run gives them): each of its
    fixes has a file of what the guest checks, and every test a variant skips
    (test-matrix/variants.toml) is a test of the data. A fix the guest
    checks but the layer does not carry is judged by what the trees ship."""
    data = data if data is not None else guest.load()
    rows = variants.load(table_path)
    tests = data.tests
    for v in rows.variants:
        strange = sorted(v.skips - set(tests))
        if strange:
            raise InputError(f"{table_path}: [variants.{v.name}] skips test(s) that "
                             f"the guest data ({guest.FIXES}) does not have: "
                             f"{', '.join(strange)}")
    missing = [fix for fix in fix_names if fix not in data.fixes]
    if missing:
        raise InputError(f"{guest.FIXES}: no file for fix(es) {', '.join(missing)} of the "
                         "family: what the guest checks for it")
    # A fix's taint is said twice, by the layer (semantic-patches/<fix>/fix.toml
    # taint, the mask's new term) and by the guest (fixes/<fix>.toml [taint],
    # its letter and bit): the layer's is the fix's, and the guest's must name
    # it, checked here where both are read for a run.
    for info in family.FAMILY:
        if info.name in fix_names and info.taint not in data.fixes[info.name].taints:
            raise InputError(f"{guest.FIXES / info.name}.toml: [taint] must name "
                             f"{info.taint}, the taint of {info.folder / family.RECORD}; "
                             f"it names {', '.join(sorted(data.fixes[info.name].taints)) or 'none'}")
    return Expectations(tests, {f.name: f.xfail for f in data.fixes.values()},
                        frozenset(fix_names),
                        {f.name: f.absent for f in data.fixes.values()},
                        {f.name: f.not_applicable for f in data.fixes.values()})


def digest() -> str:
    """What the expectations are read from, as one digest (a cell's key)."""
    return tree_digest(guest.TEST_MATRIX)


def judge(parsed: Parsed, expected: dict[str, bool], known_bug: bool = False,
          skips: frozenset[str] = frozenset(),
          notes: Mapping[str, str] = {}) -> "Judgement":
    """Compare; a broken run, an incomplete set of tests or a test the agent
    could not observe is an error, unless skips declares it unobservable by
    design (and then observing it is an error too: the declaration is
    wrong). known_bug: the tree as shipped lacks a fix, so as-expected is
    known-bug. notes: a host's word on why a test is expected as it is,
    added to its diagnostics."""
    checks = []
    errors = list(parsed.errors)
    for name, want in expected.items():
        result = parsed.results.get(name)
        # a SKIP means the agent could not observe the fact: no observation at all
        skipped = result is not None and result.skipped
        checks.append(Check(name=name, expected=want,
                            observed=None if result is None or skipped else result.ok,
                            diagnostics=(tuple(result.diagnostics) if result else ()) +
                            ((notes[name],) if name in notes else ()),
                            directive=result.directive if result else "",
                            declared_skip=name in skips))
    observed = sorted(c.name for c in checks if c.declared_skip and c.observed is not None)
    if observed:
        errors.append("tests declared unobservable (variants.toml skips) were observed: "
                      + ", ".join(observed))
    if not parsed.broken:
        missing = [c.name for c in checks if c.observed is None and not c.directive]
        if missing:
            errors.append(f"tests not reported by the agent: {', '.join(missing)}")
        unknown = sorted(set(parsed.results) - set(expected))
        if unknown:
            errors.append(f"tests with no expectation: {', '.join(unknown)}")
    if errors:
        return Judgement(Status.ERROR, checks, errors)
    # a test that went the other way is a finding about the kernel, even
    # when others could not be observed because of it (a module that did
    # not load has no taint to look at)
    if any(c.observed is not None and not c.matches for c in checks):
        return Judgement(Status.UNEXPECTED, checks, [])
    unobserved = [c for c in checks if c.directive == "SKIP" and not c.declared_skip]
    if unobserved:
        reasons = {c.name: parsed.results[c.name].reason for c in unobserved}
        return Judgement(Status.ERROR, checks, [
            "tests the agent could not observe: " +
            ", ".join(f"{n} ({why})" if why else n for n, why in reasons.items())])
    return Judgement(Status.KNOWN_BUG if known_bug else Status.AS_EXPECTED, checks, [])


def agreement(check: HostCheck, checks: Sequence[Check], peer: "HasChecks") -> Check:
    """The host check that every guest test both cells observed came out the
    same (the distribution's binary against our build of its source); the
    diagnostics name each test that did not."""
    theirs = {c.name: c for c in peer.checks}
    word = {True: "ok", False: "not ok"}
    differ, compared = [], 0
    for mine in checks:
        other = theirs.get(mine.name)
        if not mine.subtest or mine.observed is None or other is None or \
                other.observed is None:
            continue
        compared += 1
        if mine.observed != other.observed:
            differ.append(f"host: {mine.name}: {check.variant} {word[mine.observed]}, "
                          f"{peer.variant} {word[other.observed]}")
    return Check(name=check.name, expected=True,
                 observed=not differ,
                 diagnostics=tuple(differ) or (
                     f"host: the {compared} tests both observed came out the same",))


def with_check(judgement: Judgement, check: Check) -> Judgement:
    """Add a host-side check; a mismatch makes a sound cell unexpected."""
    status = judgement.status
    if status in (Status.AS_EXPECTED, Status.KNOWN_BUG) and not check.matches:
        status = Status.UNEXPECTED
    return Judgement(status, [check, *judgement.checks], judgement.errors)
