"""Verdict stage: observed KTAP results against test-matrix/expectations.toml.

A cell is "as-expected" when every check matches its expectation,
"unexpected" when the run was sound but a check differs (the kernel is not
what we thought: KCIDB's FAIL), and "error" when the run broke or the output
cannot be trusted (KCIDB's ERROR/MISS).
"""
import enum
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from . import REPO
from .errors import InputError

EXPECTATIONS = REPO / "test-matrix" / "expectations.toml"


class Status(str, enum.Enum):
    AS_EXPECTED = "as-expected"
    UNEXPECTED = "unexpected"
    ERROR = "error"


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


def load(path=EXPECTATIONS):
    try:
        data = tomllib.loads(Path(path).read_text())
    except (OSError, tomllib.TOMLDecodeError) as err:
        raise InputError(f"{path}: cannot read expectations: {err}") from None
    variants = data.get("variants", {})
    table = {}
    for variant, profile in variants.items():
        if profile not in data:
            raise InputError(f"{path}: variant '{variant}' uses profile '{profile}', "
                             "which has no table")
        bad = [k for k, v in data[profile].items() if not isinstance(v, bool)]
        if bad:
            raise InputError(f"{path}: [{profile}] {', '.join(bad)} must be true or false")
        table[variant] = dict(data[profile])
    return table


def for_variant(table, variant):
    if variant not in table:
        raise InputError(f"no expectations for variant '{variant}'; "
                         f"valid: {', '.join(table)}")
    return table[variant]


def judge(parsed, expected):
    """Compare; a broken run or an incomplete set of checks is an error."""
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
    status = Status.AS_EXPECTED if all(c.matches for c in checks) else Status.UNEXPECTED
    return Judgement(status, checks, [])


def with_check(judgement, check):
    """Add a host-side check; a mismatch makes a sound cell unexpected."""
    status = judgement.status
    if status is Status.AS_EXPECTED and not check.matches:
        status = Status.UNEXPECTED
    return Judgement(status, [check, *judgement.checks], judgement.errors)
