"""Verdict stage: observed KTAP results against test-matrix/expectations.toml.

A cell is "as-expected" when every check matches its expectation ("known-bug" when,
on top of that, the tree as shipped lacks a fix of the family),
"unexpected" when the run was sound but a check differs (the kernel is not
what we thought: KCIDB's FAIL), and "error" when the run broke or the output
cannot be trusted (KCIDB's ERROR/MISS).
"""
import enum
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from . import REPO, fixes
from .errors import InputError

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
    def fixed(self):
        return self in (FixState.PRESENT, FixState.CARRIED)


@dataclass(frozen=True)
class Variant:
    """How a variant's tree is made (test-matrix/expectations.toml [variants])."""
    name: str
    base: str                    # "shipped" or "reverted"
    layer: bool
    sources_match: str = ""      # host check: C files byte-identical to this variant's
    reuses: str = ""             # byte-identical to this variant: reuse its cell

    def fix_state(self, shipped):
        if self.layer:
            return FixState.PRESENT if shipped and self.base == "shipped" else FixState.CARRIED
        if self.base == "shipped":
            return FixState.PRESENT if shipped else FixState.MISSING
        return FixState.RECONSTRUCTED if shipped else FixState.MISSING


@dataclass(frozen=True)
class Expectations:
    variants: dict        # name -> Variant
    tables: dict          # fix -> {"fix": {check: bool}, "bug": {check: bool}}

    def variant(self, name):
        if name not in self.variants:
            raise InputError(f"no expectations for variant '{name}'; "
                             f"valid: {', '.join(self.variants)}")
        return self.variants[name]

    def states(self, variant, ships):
        """{fix: FixState} of a variant's tree, given what the version ships."""
        v = self.variant(variant)
        return {fix: v.fix_state(fix in ships) for fix in self.tables}

    def known_bug(self, variant, states):
        """The tree as the distribution ships it, lacking a fix of the family."""
        v = self.variant(variant)
        return v.base == "shipped" and not v.layer and \
            any(state is FixState.MISSING for state in states.values())

    def expected(self, states):
        """{check: bool} for a tree whose fixes are in these states."""
        out = {}
        for fix, state in states.items():
            out.update(self.tables[fix]["fix" if state.fixed else "bug"])
        return out


@dataclass(frozen=True)
class Check:
    name: str
    expected: bool
    observed: bool | None  # None: never reported
    diagnostics: tuple = ()

    @property
    def matches(self):
        return self.observed is not None and self.observed == self.expected

    def as_dict(self):
        word = {True: "ok", False: "not ok", None: "missing"}
        return {"name": self.name, "expected": word[self.expected],
                "observed": word[self.observed], "matches": self.matches,
                "diagnostics": list(self.diagnostics)}


@dataclass
class Judgement:
    status: Status
    checks: list = field(default_factory=list)
    errors: list = field(default_factory=list)

    @property
    def failing(self):
        return [c for c in self.checks if not c.matches]


def load(path=EXPECTATIONS, fix_names=None):
    """test-matrix/expectations.toml, checked: every fix of the family has a
    [<fix>.fix] and a [<fix>.bug] table over the same checks, no check
    belongs to two fixes, every variant says how its tree is made."""
    if fix_names is None:
        fix_names = fixes.NAMES
    try:
        data = tomllib.loads(Path(path).read_text())
    except (OSError, tomllib.TOMLDecodeError) as err:
        raise InputError(f"{path}: cannot read expectations: {err}") from None
    variants = {}
    for name, spec in data.pop("variants", {}).items():
        if not isinstance(spec, dict) or spec.get("base") not in ("shipped", "reverted") \
                or not isinstance(spec.get("layer"), bool):
            raise InputError(f"{path}: [variants] {name} must be {{ base = \"shipped\" or "
                             "\"reverted\", layer = true or false }")
        variants[name] = Variant(name, spec["base"], spec["layer"],
                                 spec.get("sources_match", ""), spec.get("reuses", ""))
    for v in variants.values():
        for other in (v.sources_match, v.reuses):
            if other and other not in variants:
                raise InputError(f"{path}: [variants] {v.name} names unknown variant '{other}'")
    unknown = sorted(set(data) - set(fix_names))
    if unknown:
        raise InputError(f"{path}: tables for unknown fix(es) {', '.join(unknown)}; "
                         f"the family is {', '.join(fix_names)}")
    tables, owner = {}, {}
    for fix in fix_names:
        both = data.get(fix, {})
        for side in ("fix", "bug"):
            if not isinstance(both.get(side), dict):
                raise InputError(f"{path}: [{fix}.{side}] missing")
            bad = [k for k, v in both[side].items() if not isinstance(v, bool)]
            if bad:
                raise InputError(f"{path}: [{fix}.{side}] {', '.join(bad)} must be true or false")
        if set(both["fix"]) != set(both["bug"]):
            odd = sorted(set(both["fix"]) ^ set(both["bug"]))
            raise InputError(f"{path}: [{fix}.fix] and [{fix}.bug] differ in checks: "
                             f"{', '.join(odd)}")
        for check in both["fix"]:
            if check in owner:
                raise InputError(f"{path}: check {check} belongs to both {owner[check]} "
                                 f"and {fix}")
            owner[check] = fix
        tables[fix] = {"fix": dict(both["fix"]), "bug": dict(both["bug"])}
    return Expectations(variants, tables)


def judge(parsed, expected, known_bug=False):
    """Compare; a broken run or an incomplete set of checks is an error.
    known_bug: the tree as shipped lacks a fix, so as-expected is known-bug."""
    checks = []
    errors = list(parsed.errors)
    for name, want in expected.items():
        result = parsed.results.get(name)
        # a SKIP means the agent could not observe the fact: no observation at all
        skipped = result is not None and result.directive == "SKIP"
        if skipped:
            errors.append(f"check {name} skipped by the agent")
        checks.append(Check(name=name, expected=want,
                            observed=None if result is None or skipped else result.ok,
                            diagnostics=tuple(result.diagnostics) if result else ()))
    if not parsed.broken:
        missing = [c.name for c in checks if c.observed is None]
        if missing:
            errors.append(f"checks not reported by the agent: {', '.join(missing)}")
        unknown = sorted(set(parsed.results) - set(expected))
        if unknown:
            errors.append(f"checks with no expectation: {', '.join(unknown)}")
    if errors:
        return Judgement(Status.ERROR, checks, errors)
    if not all(c.matches for c in checks):
        return Judgement(Status.UNEXPECTED, checks, [])
    return Judgement(Status.KNOWN_BUG if known_bug else Status.AS_EXPECTED, checks, [])


def with_check(judgement, check):
    """Add a host-side check; a mismatch makes a sound cell unexpected."""
    status = judgement.status
    if status in (Status.AS_EXPECTED, Status.KNOWN_BUG) and not check.matches:
        status = Status.UNEXPECTED
    return Judgement(status, [check, *judgement.checks], judgement.errors)
