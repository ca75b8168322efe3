# SPDX-License-Identifier: GPL-2.0
"""Which checks of a cell speak for which fix of the family, and what they showed.

A fix's checks are the tests a tree without it fails: its xfail list in
test-matrix/fixes/<fix>.toml, and the kernel's own trace-event sample's test
that witnesses one of them (judge/selftests.py's WITNESSES). A cell's fix
state (present, carried, missing, reconstructed) says what its tree was made
to hold; only those checks say whether the kernel behaved so. A report shows
a state as proven only when they did.
"""
import enum
import functools

from taintport import family
from taintport.judge import selftests, verdict
from taintport.judge.verdict import Check, Status
from taintport.results.cells import Cell


@functools.cache
def xfail() -> dict[str, frozenset[str]]:
    """{fix: the tests a tree without it fails}, from test-matrix/fixes/<fix>.toml."""
    return verdict.load(family.NAMES).xfail


@functools.cache
def tests_of(fix: str) -> frozenset[str]:
    """The tests that speak for fix: its xfail list, and the sample's witness
    of any of them (the same bug seen in a module nobody here wrote)."""
    tests = xfail().get(fix, frozenset())
    return tests | {w for w, agent in selftests.WITNESSES.items() if agent in tests}


def checks_of(cell: Cell, fix: str) -> list[Check]:
    """The cell's checks that speak for fix."""
    return [check for check in cell.checks if check.name in tests_of(fix)]


class Shown(str, enum.Enum):
    """What a cell's checks of a fix showed of its state."""
    SHOWN = "shown"          # every one observed came out as the state says
    CONTRADICTED = "contradicted"  # one came out otherwise: the kernel is not so
    UNKNOWN = "not shown"    # the run broke, or none was observed


def shown(cell: Cell, fix: str) -> tuple[Shown, int]:
    """What the cell's checks of fix showed, and how many contradict it (a
    check observed otherwise than expected: KCIDB's FAIL)."""
    checks = checks_of(cell, fix)
    if cell.status is Status.ERROR:
        return Shown.UNKNOWN, 0  # what a broken run observed is not trusted
    failed = sum(1 for c in checks if c.observed is not None and not c.matches)
    if failed:
        return Shown.CONTRADICTED, failed
    observed = [c for c in checks if not c.declared_skip]
    if observed and all(c.matches for c in observed):
        return Shown.SHOWN, 0
    return Shown.UNKNOWN, 0


def label(cell: Cell, fix: str) -> str:
    """A fix's state in a cell as a report shows it: "carried", or "carried,
    but 1 of its checks failed", or "carried, not shown" when nothing proved it."""
    state = cell.fixes[fix].value
    what, failed = shown(cell, fix)
    if what is Shown.CONTRADICTED:
        return f"{state}, but {failed} of its checks failed"
    return state if what is Shown.SHOWN else f"{state}, {what.value}"
