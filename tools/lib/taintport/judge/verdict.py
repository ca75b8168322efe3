"""Verdict stage: observed KTAP results against test-matrix/expectations.toml.

Every test asserts the behaviour of a kernel with every fix of the family,
so a cell expects each test to pass except the expected failures (xfail) of
the fixes its tree lacks. A cell is "as-expected" when the failures are
exactly that set ("known-bug" when, on top of that, the tree as shipped lacks
a fix of the family), "unexpected" when the run was sound but a test's result
differs (the kernel is not what we thought: KCIDB's FAIL), and "error" when
the run broke or the output cannot be trusted (KCIDB's ERROR/MISS), which
includes a test the agent could not observe (# SKIP) unless the variant
declares that test unobservable by design (test-matrix/variants.toml skips:
the distribution's binary cannot load a module signed with our key).
"""
import enum
import tomllib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from taintport import REPO
from taintport.errors import InputError
from taintport.judge.ktap import Parsed
from taintport.tree import variants
from taintport.tree.variants import Base, HostCheck, Variant

EXPECTATIONS = REPO / "test-matrix" / "expectations.toml"


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

    @property
    def fixed(self) -> bool:
        return self in (FixState.PRESENT, FixState.CARRIED)


def fix_state(variant: Variant, shipped: bool) -> FixState:
    """A fix's state in a variant's tree, given whether the version ships it."""
    if variant.layer:
        return FixState.PRESENT if shipped and variant.base is Base.SHIPPED else \
            FixState.CARRIED
    if variant.base is Base.SHIPPED:
        return FixState.PRESENT if shipped else FixState.MISSING
    return FixState.RECONSTRUCTED if shipped else FixState.MISSING


@dataclass(frozen=True)
class Expectations:
    tests: tuple[str, ...]            # "<subtest>.<test>", in the agent's order
    xfail: dict[str, frozenset[str]]  # fix -> the tests a tree without it fails

    def states(self, variant: Variant, ships: Iterable[str]) -> dict[str, FixState]:
        """{fix: FixState} of a variant's tree, given what the version ships."""
        return {fix: fix_state(variant, fix in ships) for fix in self.xfail}

    def known_bug(self, variant: Variant, states: dict[str, FixState]) -> bool:
        """The tree as the distribution ships it, lacking a fix of the family."""
        return variant.base is Base.SHIPPED and not variant.layer and \
            any(state is FixState.MISSING for state in states.values())

    def failures(self, states: dict[str, "FixState"]) -> frozenset[str]:
        """The tests a tree whose fixes are in these states fails."""
        out: frozenset[str] = frozenset()
        for fix, state in states.items():
            if not state.fixed:
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


def _names(path: Path | str, where: str, value: object, what: str = "KTAP test") -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise InputError(f"{path}: {where} must be a list of {what} names")
    dup = sorted({v for v in value if value.count(v) > 1})
    if dup:
        raise InputError(f"{path}: {where} names {', '.join(dup)} twice")
    return value


def load(fix_names: Sequence[str], path: Path | str = EXPECTATIONS,
         table_path: Path | str = variants.TABLE) -> Expectations:
    """test-matrix/expectations.toml, checked: [tests] lists each subtest's
    tests, every fix of the family (fix_names: the layer's, which the run
    gives) has an xfail list of tests that [tests] has, nothing else is
    there, and every test a variant skips (test-matrix/variants.toml) is one
    of them."""
    rows = variants.load(table_path)
    try:
        data = tomllib.loads(Path(path).read_text())
    except (OSError, tomllib.TOMLDecodeError) as err:
        raise InputError(f"{path}: cannot read expectations: {err}") from None
    subtests = data.pop("tests", None)
    if not isinstance(subtests, dict) or not subtests:
        raise InputError(f"{path}: [tests] missing: each subtest's list of tests")
    tests = tuple(f"{sub}.{test}" for sub, names in subtests.items()
                  for test in _names(path, f"[tests] {sub}", names))
    for v in rows.variants:
        strange = sorted(v.skips - set(tests))
        if strange:
            raise InputError(f"{table_path}: [variants.{v.name}] skips test(s) that "
                             f"{path} [tests] does not have: {', '.join(strange)}")
    unknown = sorted(set(data) - set(fix_names))
    if unknown:
        raise InputError(f"{path}: tables for unknown fix(es) {', '.join(unknown)}; "
                         f"the family is {', '.join(fix_names)}")
    xfail = {}
    for fix in fix_names:
        table = data.get(fix)
        if not isinstance(table, dict) or "xfail" not in table:
            raise InputError(f"{path}: [{fix}] xfail missing: the tests a tree without "
                             "the fix fails")
        extra = sorted(set(table) - {"xfail"})
        if extra:
            raise InputError(f"{path}: [{fix}] has unknown key(s) {', '.join(extra)}")
        names = _names(path, f"[{fix}] xfail", table["xfail"])
        strange = [n for n in names if n not in tests]
        if strange:
            raise InputError(f"{path}: [{fix}] xfail names test(s) that [tests] does not "
                             f"have: {', '.join(strange)}")
        if not names:
            raise InputError(f"{path}: [{fix}] xfail is empty: the test would not "
                             "catch that fix's bug")
        xfail[fix] = frozenset(names)
    return Expectations(tests, xfail)


def judge(parsed: Parsed, expected: dict[str, bool], known_bug: bool = False,
          skips: frozenset[str] = frozenset()) -> "Judgement":
    """Compare; a broken run, an incomplete set of tests or a test the agent
    could not observe is an error, unless skips declares it unobservable by
    design (and then observing it is an error too: the declaration is
    wrong). known_bug: the tree as shipped lacks a fix, so as-expected is
    known-bug."""
    checks = []
    errors = list(parsed.errors)
    for name, want in expected.items():
        result = parsed.results.get(name)
        # a SKIP means the agent could not observe the fact: no observation at all
        skipped = result is not None and result.skipped
        checks.append(Check(name=name, expected=want,
                            observed=None if result is None or skipped else result.ok,
                            diagnostics=tuple(result.diagnostics) if result else (),
                            directive=result.directive if result else "",
                            declared_skip=name in skips))
    observed = sorted(c.name for c in checks if c.declared_skip and c.observed is not None)
    if observed:
        errors.append("tests declared unobservable (expectations.toml skips) were observed: "
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
