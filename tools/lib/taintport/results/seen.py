# SPDX-License-Identifier: GPL-2.0
"""What a results run showed of a fix's bug, for a stable mail's "booted" line.

A mail may say a kernel was booted with the bug seen only when a results
folder records it: a cell of the tree as shipped (no layer) whose verdict is
known-bug with that fix missing. Each such boot names the upload it booted
and the run it came from (the folder and the time the run started).
"""
from pathlib import Path

from taintport.errors import InputError
from taintport.judge.verdict import Status
from taintport.layer.dep3 import Seen
from taintport.results import folder
from taintport.tree import versions
from taintport.tree.variants import Base


def seen(results: Path) -> list[Seen]:
    """Every boot of the tree as shipped in results/matrix.json that showed a
    fix's bug (read and checked by results/folder.py)."""
    matrix = folder.load_matrix(results)
    known = {v.name: v for v in versions.all_versions()}
    found = []
    for cell in matrix.cells:
        version = known.get(cell.version)
        if (cell.status is not Status.KNOWN_BUG or cell.variant.base is not Base.SHIPPED
                or cell.variant.layer or cell.inputs is None or version is None):
            continue  # only a known version's tree as shipped shows its users' bug
        run = matrix.run_of(cell)
        when = f"started {run.started}, " if run.started else ""
        kernel = (f"{version.distribution.capitalize()} {version.release}'s "
                  f"{cell.inputs.package} {cell.inputs.package_version}, {cell.variant.what}")
        for fix in cell.missing_fixes():
            found.append(Seen(fix, version.series, kernel,
                              f"the taintport run {when}results folder "
                              f"{Path(results).resolve().name}"))
    if not found:
        raise InputError(f"{results}/matrix.json: no cell of a tree as shipped shows a known "
                         "bug: nothing there backs a \"booted\" line; leave --results out")
    return found
