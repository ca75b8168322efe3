# SPDX-License-Identifier: GPL-2.0
"""Two runs side by side, and many runs made one.

compare: the cells whose status changed between two matrix documents,
regressions first. merge: the results folders of CI jobs that each ran some
kernels, as one matrix document (and one folder, with folder.copy_logs).
"""
from pathlib import Path
from typing import NamedTuple, Sequence

from taintport.errors import InputError
from taintport.judge.verdict import Status
from taintport.results import folder
from taintport.results.cells import Cell, Matrix, Run
from taintport.tree import variants

KINDS = ("regression", "fix", "change")


class Change(NamedTuple):
    version: str
    variant: str
    old: Status | None  # None: the cell was not in that run
    new: Status | None
    kind: str

    @property
    def worse(self) -> bool:
        """The cell became unexpected or an error, or went missing: what fails
        `report compare` (exit 1), whatever it was before."""
        return not sound(self.new)

    def __str__(self) -> str:
        old = self.old.value if self.old else "absent"
        new = self.new.value if self.new else "absent"
        return f"{self.kind:<10}  {self.version:<16}  {self.variant:<10}  {old} -> {new}"


def sound(status: Status | None) -> bool | None:
    """as-expected or known-bug (a known bug of a shipped tree is as expected
    too: going from it to as-expected is a change, the distribution took the
    fix, not a fix of ours); None when the cell is absent."""
    return None if status is None else status in (Status.AS_EXPECTED, Status.KNOWN_BUG)


def kind_of(old: Status | None, new: Status | None) -> str:
    if sound(old) is True and sound(new) is False:
        return "regression"
    if sound(new) is True and sound(old) is False:
        return "fix"
    return "change"


def statuses(doc: Matrix) -> dict[tuple[str, str], Status]:
    return {c.where: c.status for c in doc.cells}


def order(key: tuple[str, str]) -> tuple[str, int, str]:
    """Per version, the variants in the table's order."""
    version, variant = key
    return version, variants.table().index(variants.named(variant)), variant


def compare(old_doc: Matrix, new_doc: Matrix) -> list[Change]:
    """Cells whose status differs: regressions, then fixes, then other changes."""
    old, new = statuses(old_doc), statuses(new_doc)
    changes = [Change(*key, old.get(key), new.get(key), kind_of(old.get(key), new.get(key)))
               for key in sorted(old.keys() | new.keys(), key=order)
               if old.get(key) != new.get(key)]
    return sorted(changes, key=lambda c: KINDS.index(c.kind))


def merge(dirs: Sequence[Path | str]) -> Matrix:
    """One matrix document from several results folders.

    Cells are concatenated in the order given; a cell (version, variant) in
    two folders is an error naming both. Each source keeps its own start time,
    tools and accelerator under "runs"; the exit code is derived from all cells.
    """
    runs: list[Run] = []
    cells: list[Cell] = []
    seen: dict[tuple[str, str], Path | str] = {}
    for source in dirs:
        doc = folder.load_matrix(source)
        if doc.runs:  # already merged: its sources stay as they were recorded
            runs += doc.runs
        else:
            runs.append(Run(dir=str(source), started=doc.started, tools=doc.tools,
                            accelerator=doc.accelerator, exit_code=doc.exit_code,
                            cells=[f"{c.version}/{c.variant}" for c in doc.cells]))
        for cell in doc.cells:
            if cell.where in seen:
                raise InputError(f"{cell.version} {cell.variant} is in both "
                                 f"{seen[cell.where]} and {source}; merge each cell once")
            seen[cell.where] = source
            cells.append(cell)
    if not runs:
        raise InputError("nothing to merge: no results folders given")
    started = [r.started for r in runs if r.started]
    return Matrix(cells=cells, started=min(started) if started else None, runs=runs)
