# SPDX-License-Identifier: GPL-2.0
"""summary.md: an LKFT-style plain-text report, ready to paste into a mail.

Build summary first, then the cells that need a human (unexpected, error),
then every cell, then the totals as LKFT counts them (a skipped check
counted as a skip, so the counts add up to the total). A test whose KTAP
result is "not ok" and is an expected failure (a bug the negative control
reproduced, or a known bug of the tree as shipped) is an xfail, not a pass.
"""
import io
from typing import NamedTuple, Sequence

from taintport.judge import selftests
from taintport.judge.verdict import Check, Status
from taintport.results import report
from taintport.results.cells import Cell, EXIT_MEANING, Matrix, Run, word
from taintport.results.reports import fixchecks, kcidb

DIAGNOSTICS_SHOWN = 4


class Counts(NamedTuple):
    """Every check in exactly one of the counts after total: they add up to it."""
    total: int = 0
    passed: int = 0
    failed: int = 0
    errors: int = 0  # ERROR and MISS: the run, not the kernel
    skipped: int = 0  # SKIP: not observed (declared by the variant, or the agent's)
    xfail: int = 0

    def __add__(self, other: tuple[int, ...]) -> "Counts":  # type: ignore[override]
        return Counts(*(a + b for a, b in zip(self, other)))

    def __str__(self) -> str:
        return (f"total: {self.total}, pass: {self.passed}, fail: {self.failed}, "
                f"error: {self.errors}, skip: {self.skipped}, xfail: {self.xfail}")


def is_xfail(check: Check) -> bool:
    return not check.expected and check.observed is False


def counts(cells: Sequence[Cell]) -> Counts:
    total = Counts()
    for cell in cells:
        for check in cell.checks:
            status = kcidb.check_status(cell, check)
            passed = status is kcidb.Status.PASS
            total += Counts(
                total=1,
                passed=passed and not is_xfail(check),
                failed=status is kcidb.Status.FAIL,
                errors=status in (kcidb.Status.ERROR, kcidb.Status.MISS),
                skipped=status is kcidb.Status.SKIP,
                xfail=passed and is_xfail(check))
    return total


def seconds(value: float | None) -> str:
    if value is None:
        return "-"
    minutes, secs = divmod(round(value), 60)
    return f"{minutes}m{secs:02d}s" if minutes else f"{value:.1f}s"


def columns(rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  ".join(v.ljust(w) for v, w in zip(r, widths)).rstrip() for r in rows]


def build_time(cell: Cell) -> str:
    text = f"{cell.variant} {seconds(cell.timings.build)}"
    return text + " (reused)" if cell.reused else text


def build_summary(cells: Sequence[Cell]) -> list[str]:
    rows = [("version", "upload", "built", "build time", "per variant")]
    for version, group in kcidb.by_version(cells).items():
        inputs = next((c.inputs for c in group if c.inputs), None)
        built = sum(1 for c in group if c.kernel_release)
        total = sum(c.timings.build or 0 for c in group)
        rows.append((version, inputs.upload if inputs else "-",
                     f"{built}/{len(group)} variants", seconds(total),
                     ", ".join(build_time(c) for c in group)))
    return columns(rows)


def attention(cell: Cell) -> list[str]:
    """What a reader needs about a cell that is not as expected."""
    lines = [f"* {cell.version} {cell.variant}: {cell.status.value.upper()}"]
    lines += [f"    {line}" for error in cell.errors for line in error.splitlines()[:6]]
    for check in cell.checks:
        if kcidb.check_status(cell, check) is kcidb.Status.FAIL:
            lines.append(f"    {check.name}: expected {word(check.expected)}, "
                         f"observed {word(check.observed)}")
            lines += [f"        {d}" for d in kcidb.evidence(cell, check)[:DIAGNOSTICS_SHOWN]]
    missing = [c.name for c in cell.checks if c.observed is None]
    if missing:
        lines.append(f"    not reported ({len(missing)}): {', '.join(missing)}")
    lines += [f"    | {line}" for line in cell.panic]
    return lines


def kernels_own(cells: Sequence[Cell]) -> list[str]:
    """The kernel's own selftests that fail on the tree as shipped
    (judge/selftests.py: expected not ok), once per version, with their output."""
    lines: list[str] = []
    seen: set[tuple[str, str]] = set()
    for cell in cells:
        for check in cell.checks:
            if not check.name.startswith(f"{selftests.LIVEPATCH}.") or \
                    check.expected or check.observed is not False or \
                    (cell.version, check.name) in seen:
                continue
            seen.add((cell.version, check.name))
            lines.append(f"* {cell.version}: {check.name} fails on the tree as shipped")
            lines += [f"    {d}" for d in check.diagnostics[1:1 + 2 * DIAGNOSTICS_SHOWN]]
    return lines


def fix_table(cells: Sequence[Cell]) -> list[str]:
    """Each fix's state in each variant's tree: present, missing (as
    shipped), reconstructed (the negative control) or carried (taintport),
    qualified where the cell's checks of the fix did not show it."""
    grid = report.fix_grid(cells)
    if not grid:
        return ["none recorded"]
    by_place = {cell.where: cell for cell in cells}
    variants = list(dict.fromkeys(v for _, _, states in grid for v in states))
    rows = [("version", "fix", *variants)]
    rows += [(version, fix, *(fixchecks.label(by_place[(version, v)], fix) if v in states
                              else "-" for v in variants))
             for version, fix, states in grid]
    return columns(rows)


def render(doc: Matrix) -> str:
    cells = doc.cells
    code = doc.exit_code
    out = [f"taintport matrix: {len(cells)} cells, exit {code} ({EXIT_MEANING[code]})",
           f"started {doc.started or '-'}", "",
           "## Build summary", ""] + build_summary(cells)

    out += ["", "## Known bugs of the kernels as shipped", ""]
    out += [f"* {line}" for line in report.known_bugs(cells)] or ["none"]
    users = report.users_with_bugs(cells)
    if users:
        out += ["", "Which releases' users have them:", ""] + [f"* {line}" for line in users]

    out += ["", "## The kernels' own selftests failing as shipped", ""]
    out += kernels_own(cells) or ["none"]

    shipped = report.binaries(cells)
    if shipped:
        out += ["", "## The distribution's binaries against our builds", ""]
        out += [f"* {line}" for line in shipped]

    out += ["", "## Fixes of the family, per cell", ""] + fix_table(cells)

    needing = sorted((c for c in cells if not c.sound),
                     key=lambda c: c.status is not Status.UNEXPECTED)
    out += ["", "## Unexpected and error cells", ""]
    out += [line for cell in needing for line in attention(cell)] or ["none"]

    table = io.StringIO()
    report.table(cells, table)
    out += ["", "## Cells", "", table.getvalue().rstrip("\n")]

    out += ["", "## Summary", "", f"* {counts(cells)}"]
    versions = kcidb.by_version(cells)
    if len(versions) > 1:
        out += [f"* {version}: {counts(group)}" for version, group in versions.items()]

    out += ["", "## Environment", ""]
    for run in doc.all_runs():
        accel = run.accelerator
        where = f"{run.dir}: " if isinstance(run, Run) else ""
        out.append(f"* {where}accelerator {accel.name if accel else '-'} "
                   f"({accel.reason if accel else 'no boot'})")
        out += [f"    {tool}: {version}" for tool, version in sorted(run.tools.items())]
    return report.printable("\n".join(out)) + "\n"
