# SPDX-License-Identifier: GPL-2.0
"""Known bugs of the kernels as shipped, check by check, as the CI views mark them.

A cell is known-bug when the tree as the distribution ships it lacks a fix of
the family and every check came out as its expectations say. The checks that
show the bug are its expected failures: each belongs to the missing fixes
whose xfail list (test-matrix/fixes/<fix>.toml) names it, or the agent's test
it witnesses (the kernel's own trace-event sample: fixchecks.tests_of). A CI
view must not show them as passed (KCIDB: FAIL linked to an issue; JUnit:
skipped with the reason), while the run's exit code stays 0: the run showed
what it set out to.
Fix names, commits and bugs come from the family's data, never from here.
"""
from dataclasses import dataclass, field
from typing import Sequence

from taintport import family
from taintport.judge.verdict import Check, Status
from taintport.results.cells import Cell
from taintport.results.reports import fixchecks

# where a reader (and a KCIDB dashboard) opens an upstream commit
COMMIT_URL = "https://git.kernel.org/pub/scm/linux/kernel/git/torvalds/linux.git/commit/?id="


def fixes_shown(cell: Cell, check: Check) -> tuple[str, ...]:
    """The fixes the shipped tree lacks whose bug this check shows (none when
    the cell is no known bug or the check is no expected failure of one)."""
    if cell.status is not Status.KNOWN_BUG or check.expected or not check.matches:
        return ()
    missing = cell.missing_fixes()
    owners = tuple(fix for fix in missing if check.name in fixchecks.tests_of(fix))
    # the guest data changed since the run: the check still shows a missing fix
    return owners or tuple(missing)


def upstream(fix: str) -> str:
    """A fix as a reader looks it up: "e7bb66f79a7b, v6.3"."""
    info = family.BY_NAME.get(fix)
    return f"{info.upstream.commit[:12]}, {info.upstream.release}" if info else "unknown"


def message(fixes: Sequence[str]) -> str:
    """What a CI view says of a check (or a cell) showing known bugs:
    "known bug as shipped: livepatch missing (upstream e7bb66f79a7b)"."""
    return "; ".join(f"known bug as shipped: {fix} missing (upstream {upstream(fix)[:12]})"
                     for fix in fixes)


@dataclass
class KnownBug:
    """One fix one kernel (version) lacks as the distribution ships it, and
    who has the bug: the releases and uploads whose users run that tree."""
    version: str
    fix: str
    cells: list[Cell] = field(default_factory=list)

    @property
    def info(self) -> family.FixInfo | None:
        return family.BY_NAME.get(self.fix)

    @property
    def commit_url(self) -> str | None:
        return COMMIT_URL + self.info.upstream.commit if self.info else None

    @property
    def users(self) -> dict[str, list[str]]:
        """{release: [upload]} of the cells that showed it (none for a run
        from before releases were recorded)."""
        out: dict[str, list[str]] = {}
        for cell in self.cells:
            if cell.inputs and cell.inputs.release:
                uploads = out.setdefault(cell.inputs.release, [])
                if cell.inputs.upload not in uploads:
                    uploads.append(cell.inputs.upload)
        return out

    @property
    def uploads(self) -> list[str]:
        """Every upload the cells booted, as shipped ("6.1.176-1" when no suite was recorded)."""
        return list(dict.fromkeys(c.inputs.upload for c in self.cells if c.inputs))

    def describe(self) -> str:
        bug = self.info.bug if self.info else f"fix {self.fix} missing"
        who = "; ".join(f"{release} ({', '.join(uploads)})"
                        for release, uploads in self.users.items())
        seen = ", ".join(self.uploads)
        # a run from before releases were recorded knows the uploads only
        where = f"; the users of {who} have it" if who else f"; seen on {seen}" if seen else ""
        return (f"{self.version} as shipped lacks {self.fix} (upstream {upstream(self.fix)}): "
                f"{bug}{where}")


def known_bugs(cells: Sequence[Cell]) -> list[KnownBug]:
    """One per (version, fix a known-bug cell lacks), in the order of the run."""
    found: dict[tuple[str, str], KnownBug] = {}
    for cell in cells:
        if cell.status is Status.KNOWN_BUG:
            for fix in cell.missing_fixes():
                found.setdefault((cell.version, fix), KnownBug(cell.version, fix)).cells.append(
                    cell)
    return list(found.values())
