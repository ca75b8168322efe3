"""Two runs side by side, and many runs made one.

compare: the cells whose status changed between two matrix documents,
regressions first. merge: the results folders of CI jobs that each ran some
kernels, as one matrix document (and one folder, with copy_logs).
"""
import os
import shutil
from pathlib import Path
from typing import NamedTuple

from . import render, report, series
from .errors import InputError
from .verdict import Status

# a known bug of a shipped tree is as expected too: going from it to
# as-expected is a change (the distribution took the fix), not a fix of ours
GOOD = (Status.AS_EXPECTED.value, Status.KNOWN_BUG.value)
BAD = (Status.UNEXPECTED.value, Status.ERROR.value)
KINDS = ("regression", "fix", "change")


class Change(NamedTuple):
    version: str
    variant: str
    old: str | None  # None: the cell was not in that run
    new: str | None
    kind: str

    def __str__(self):
        return (f"{self.kind:<10}  {self.version:<16}  {self.variant:<10}  "
                f"{self.old or 'absent'} -> {self.new or 'absent'}")


def kind_of(old, new):
    if old in GOOD and new in BAD:
        return "regression"
    if new in GOOD and old in BAD:
        return "fix"
    return "change"


def statuses(doc):
    return {(c["version"], c["variant"]): c["status"] for c in doc["cells"]}


def order(key):
    version, variant = key
    rank = series.VARIANTS.index(variant) if variant in series.VARIANTS else len(series.VARIANTS)
    return version, rank, variant


def compare(old_doc, new_doc):
    """Cells whose status differs: regressions, then fixes, then other changes."""
    old, new = statuses(old_doc), statuses(new_doc)
    changes = [Change(*key, old.get(key), new.get(key), kind_of(old.get(key), new.get(key)))
               for key in sorted(old.keys() | new.keys(), key=order)
               if old.get(key) != new.get(key)]
    return sorted(changes, key=lambda c: KINDS.index(c.kind))


def merge(dirs):
    """One matrix document from several results folders.

    Cells are concatenated in the order given; a cell (version, variant) in
    two folders is an error naming both. Each source keeps its own start time,
    tools and accelerator under "runs"; the exit code is computed again.
    """
    runs, cells, seen = [], [], {}
    for folder in dirs:
        doc = render.load(folder)
        if "runs" in doc:  # already merged: its sources stay as they were recorded
            runs += doc["runs"]
        else:
            runs.append({"dir": str(folder), "started": doc.get("started"),
                         "tools": doc.get("tools", {}), "accelerator": doc.get("accelerator"),
                         "exit_code": doc["exit_code"],
                         "cells": [f"{c['version']}/{c['variant']}" for c in doc["cells"]]})
        for cell in doc["cells"]:
            key = (cell["version"], cell["variant"])
            if key in seen:
                raise InputError(f"{cell['version']} {cell['variant']} is in both "
                                 f"{seen[key]} and {folder}; merge each cell once")
            seen[key] = folder
            cells.append(cell)
    if not runs:
        raise InputError("nothing to merge: no results folders given")
    started = [r["started"] for r in runs if r["started"]]
    return {"schema": report.SCHEMA, "started": min(started) if started else None,
            "runs": runs, "exit_code": report.exit_code(cells), "cells": cells}


def copy_logs(dirs, out):
    """Copy each source's per-version folders into out, so the cells' log paths hold there.

    Version names were checked when each matrix.json was read; links are not
    followed (a job's artifact must not copy the host's files into the report)."""
    for folder in dirs:
        for version in {c["version"] for c in render.load(folder)["cells"]}:
            source = Path(folder) / version
            if source.is_dir() and not source.is_symlink():
                shutil.copytree(source, Path(out) / version, dirs_exist_ok=True,
                                ignore=links)


def links(folder, entries):
    return [name for name in entries if os.path.islink(os.path.join(folder, name))]
