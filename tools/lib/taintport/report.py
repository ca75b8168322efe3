"""Results: one cell.json per cell, matrix.json for the run, a table on the terminal.

Every file is written atomically after each cell, so an interrupted run keeps
every cell it finished.
"""
import json
import sys
from pathlib import Path

from . import fixes, kcidb
from .cache import write_atomic
from .results import printable
from .verdict import Status

SCHEMA = "taintport-matrix/1"


def exit_code(cells):
    """tuxrun's convention: 2 when the run broke, 1 when a test came out wrong.
    A known bug of a shipped tree is what the run set out to show: 0."""
    statuses = {c["status"] for c in cells}
    if not cells or Status.ERROR.value in statuses:
        return 2
    if Status.UNEXPECTED.value in statuses:
        return 1
    return 0


def write_cell(out, cell):
    write_atomic(Path(out) / cell["version"] / cell["variant"] / "cell.json",
                 json.dumps(cell, indent=2) + "\n")


def write_matrix(out, meta, cells):
    write_document(out, {"schema": SCHEMA, **meta, "exit_code": exit_code(cells),
                         "cells": cells})


def write_document(out, doc):
    """matrix.json, with its "kcidb" view computed again from the cells."""
    doc = {key: value for key, value in doc.items() if key != "kcidb"}
    doc["kcidb"] = kcidb.report(doc)
    write_atomic(Path(out) / "matrix.json", json.dumps(doc, indent=2) + "\n")
    return doc


def summary_of(cell):
    if cell.get("reused"):
        return summary_text(cell) + " (reused: inputs unchanged)"
    if cell.get("resumed"):
        return summary_text(cell) + " (resumed: kept from the earlier run, inputs unchanged)"
    return summary_text(cell)


def known_bugs(cells):
    """One line per fix a distribution's tree lacks as shipped: the
    first thing a release engineer reads ("bookworm-6.1 as shipped: ...")."""
    lines = []
    for cell in cells:
        if cell["status"] != Status.KNOWN_BUG.value:
            continue
        for name, state in cell.get("fixes", {}).items():
            if state == "missing":
                fix = fixes.BY_NAME.get(name)
                what = (f"{fix.info['bug']} ({fix.commit[:12]}, {fix.release}, not in "
                        f"this tree; taintport carries it: the patched variant)"
                        if fix else f"fix {name} missing")
                lines.append(f"{cell['version']} {cell['variant']} (as shipped): {what}")
    return lines


def fix_grid(cells):
    """[(version, fix, {variant: state})]: each fix's state in each cell's tree."""
    rows = {}
    for cell in cells:
        for fix, state in cell.get("fixes", {}).items():
            rows.setdefault((cell["version"], fix), {})[cell["variant"]] = state
    return [(version, fix, states) for (version, fix), states in rows.items()]


def summary_text(cell):
    if cell["status"] == Status.ERROR.value:
        return "; ".join(cell["errors"])[:160]
    if cell.get("reused_from"):
        return (f"{len(cell['checks'])} checks: the {cell['reused_from']} cell's build and "
                "boot (C sources byte-identical)")
    wrong = [c["name"] for c in cell["checks"] if not c["matches"]]
    if wrong:
        return f"{len(wrong)} check(s) differ: " + ", ".join(wrong[:4]) + \
            (" ..." if len(wrong) > 4 else "")
    if cell["status"] == Status.KNOWN_BUG.value:
        missing = [f for f, state in cell.get("fixes", {}).items() if state == "missing"]
        return (f"{len(cell['checks'])} checks; known bug as shipped: "
                + ", ".join(missing) + " fix missing")
    failing_ok = sum(1 for c in cell["checks"] if c["expected"] == "not ok")
    return (f"{len(cell['checks'])} checks; {failing_ok} fail as expected (bug reproduced)"
            if failing_ok and cell["variant"] == "reverted" else f"{len(cell['checks'])} checks")


def table(cells, stream=sys.stdout):
    colour = stream.isatty()
    paint = {Status.AS_EXPECTED.value: "\033[32m", Status.KNOWN_BUG.value: "\033[35m",
             Status.UNEXPECTED.value: "\033[31m", Status.ERROR.value: "\033[33m"}
    rows = [("version", "variant", "status", "boot", "detail")]
    for c in cells:
        boot = c["timings"].get("boot")
        rows.append(tuple(printable(text) for text in (
            c["version"], c["variant"], c["status"],
            f"{boot:.1f}s" if boot is not None else "-", summary_of(c))))
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    for i, r in enumerate(rows):
        cols = [r[j].ljust(widths[j]) for j in range(4)]
        if colour and i and r[2] in paint:
            cols[2] = paint[r[2]] + cols[2] + "\033[0m"
        print("  ".join(cols) + "  " + r[4], file=stream)
    code = exit_code(cells)
    counts = {s.value: sum(1 for c in cells if c["status"] == s.value) for s in Status}
    print(f"\n{len(cells)} cells: " + ", ".join(f"{n} {s}" for s, n in counts.items())
          + f"; exit {code}", file=stream)
