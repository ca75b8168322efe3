# SPDX-License-Identifier: GPL-2.0
"""What every report says of the cells: the table on the terminal, the known
bugs, the distribution's binaries, the fixes' states; and clean text.

Text from a results file (a console line, an error, a name) can hold
terminal escapes: printable() is how any of it leaves the tool.
"""
import os
import re
import sys
from pathlib import Path
from typing import Sequence, TextIO

from taintport.judge.verdict import FixState, Status
from taintport.layer import fixes
from taintport.results.cells import Cell, exit_code, word
from taintport.tree.variants import Builder, Kind

# C0 and C1 controls (but tab and newline), and the bidirectional overrides a
# terminal or an editor would obey
UNPRINTABLE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def printable(text: object) -> str:
    """text as it may leave the tool: control characters shown, never obeyed."""
    return UNPRINTABLE.sub(lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100
                           else f"\\u{ord(m.group()):04x}", str(text))


def summary_of(cell: Cell) -> str:
    if cell.fault:
        return summary_text(cell) + f" (fault run: taintport.fault={cell.fault}, a harness test)"
    if cell.reused:
        return summary_text(cell) + " (reused: inputs unchanged)"
    if cell.resumed:
        return summary_text(cell) + " (resumed: kept from the earlier run, inputs unchanged)"
    return summary_text(cell)


def known_bugs(cells: Sequence[Cell]) -> list[str]:
    """One line per fix a distribution's tree lacks as shipped: the first
    thing a release engineer reads ("bookworm-6.1 upstream (as shipped in
    bookworm-security 6.1.192-3): ...")."""
    lines = []
    for cell in cells:
        if cell.status is not Status.KNOWN_BUG:
            continue
        for name in cell.missing_fixes():
            fix = fixes.BY_NAME.get(name)
            what = (f"{fix.info.bug} ({fix.commit[:12]}, {fix.release}, not in "
                    f"this tree; taintport carries it: the patched variant)"
                    if fix else f"fix {name} missing")
            lines.append(f"{cell.version} {cell.variant} ({as_shipped(cell)}): {what}")
    return lines


def users_with_bugs(cells: Sequence[Cell]) -> list[str]:
    """Per fix the trees as shipped lack: which releases' users have the bug,
    with the uploads they run ("bookworm (bookworm-security 6.1.192-3)")."""
    users: dict[str, dict[str, set[str]]] = {}
    for cell in cells:
        # a cell of a run from before releases were recorded names none
        if cell.status is Status.KNOWN_BUG and cell.inputs and cell.inputs.release:
            for name in cell.missing_fixes():
                users.setdefault(name, {}).setdefault(cell.inputs.release, set()).add(
                    cell.inputs.upload)
    lines = []
    for name, releases in users.items():
        fix = fixes.BY_NAME.get(name)
        who = "; ".join(f"{release} ({', '.join(sorted(uploads))})"
                        for release, uploads in releases.items())
        lines.append(f"{fix.info.bug if fix else f'fix {name} missing'}: the users of {who}")
    return lines


def as_shipped(cell: Cell) -> str:
    """Which build of the tree as shipped a cell booted, from which upload."""
    if cell.variant.built_by is Builder.DISTRIBUTION and cell.inputs:
        return (f"the distribution's binary, {cell.inputs.package} "
                f"{cell.inputs.package_version}"
                + (f" from {cell.inputs.suite}" if cell.inputs.suite else ""))
    if cell.inputs and cell.inputs.suite:
        return f"as shipped in {cell.inputs.upload}"
    return "as shipped"


def binaries(cells: Sequence[Cell]) -> list[str]:
    """One line per distribution binary booted: which package (and checksum),
    whose build the guest said it was, and whether it agrees with our build
    of its source, test by test."""
    lines = []
    for cell in cells:
        if cell.variant.built_by is not Builder.DISTRIBUTION:
            continue
        inputs = cell.inputs
        what = (f"{cell.version}: {inputs.package} {inputs.package_version} "
                f"(.deb sha256 {inputs.deb_sha256[:16]}, vmlinuz sha256 "
                f"{(inputs.bzimage_sha256 or '-')[:16]})" if inputs else cell.version)
        if cell.kernel_version:
            what += f", uname -v \"{cell.kernel_version}\""
        host = cell.variant.check(Kind.AGREES)
        agree = next((c for c in cell.checks if host and c.name == host.name), None)
        if cell.status is Status.ERROR:
            lines.append(f"{what}: the run broke ({'; '.join(cell.errors)[:120]})")
        elif agree is None:
            lines.append(f"{what}: {cell.status.value}; not compared (no sound "
                         "cell of our build in this run)")
        elif agree.matches:
            # the host check says how in its first line; a results file may hold none
            how = agree.diagnostics[0].removeprefix("host: ") if agree.diagnostics else \
                "no detail recorded"
            lines.append(f"{what}: agrees with our build of its source ({how})")
        else:
            differ = [d.removeprefix("host: ").split(":", 1)[0] for d in agree.diagnostics]
            lines.append(f"{what}: DISAGREES with our build of its source on "
                         f"{len(differ)} test(s): {', '.join(differ)}")
    return lines


def fix_grid(cells: Sequence[Cell]) -> list[tuple[str, str, dict[str, FixState]]]:
    """[(version, fix, {variant: state})]: each fix's state in each cell's tree."""
    rows: dict[tuple[str, str], dict[str, FixState]] = {}
    for cell in cells:
        for fix, state in cell.fixes.items():
            rows.setdefault((cell.version, fix), {})[cell.variant.name] = state
    return [(version, fix, states) for (version, fix), states in rows.items()]


def summary_text(cell: Cell) -> str:
    if cell.status is Status.ERROR:
        return "; ".join(cell.errors)[:160]
    if cell.reused_from:
        return (f"{len(cell.checks)} checks: the {cell.reused_from} cell's build and "
                "boot (C sources byte-identical)")
    wrong = [c.name for c in cell.failing]
    if wrong:
        return f"{len(wrong)} check(s) differ: " + ", ".join(wrong[:4]) + \
            (" ..." if len(wrong) > 4 else "")
    skipped = sum(1 for c in cell.checks if c.declared_skip)
    count = f"{len(cell.checks)} checks" + (f" ({skipped} skipped by design)"
                                            if skipped else "")
    if cell.status is Status.KNOWN_BUG:
        return (f"{count}; known bug as shipped: "
                + ", ".join(cell.missing_fixes()) + " fix missing")
    failing_ok = sum(1 for c in cell.checks if not c.expected)
    return (f"{len(cell.checks)} checks; {failing_ok} fail as expected (bug reproduced)"
            if failing_ok and cell.variant.negative_control else count)


def coloured(stream: TextIO) -> bool:
    """Colour on a terminal, unless NO_COLOR is set to anything (no-color.org)."""
    return stream.isatty() and not os.environ.get("NO_COLOR")


def table(cells: Sequence[Cell], stream: TextIO = sys.stdout) -> None:
    colour = coloured(stream)
    paint = {Status.AS_EXPECTED.value: "\033[32m", Status.KNOWN_BUG.value: "\033[35m",
             Status.UNEXPECTED.value: "\033[31m", Status.ERROR.value: "\033[33m"}
    rows = [("version", "variant", "status", "boot", "detail")]
    for c in cells:
        boot = c.timings.boot
        rows.append((printable(c.version), printable(c.variant), c.status.value,
                     f"{boot:.1f}s" if boot is not None else "-", printable(summary_of(c))))
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    for i, r in enumerate(rows):
        cols = [r[j].ljust(widths[j]) for j in range(4)]
        if colour and i and r[2] in paint:
            cols[2] = paint[r[2]] + cols[2] + "\033[0m"
        print("  ".join(cols) + "  " + r[4], file=stream)
    counts = {s.value: sum(1 for c in cells if c.status is s) for s in Status}
    print(f"\n{len(cells)} cells: " + ", ".join(f"{n} {s}" for s, n in counts.items())
          + f"; exit {exit_code(cells)}", file=stream)


def verdict_lines(cell: Cell, out: Path, stream: TextIO = sys.stdout) -> None:
    """One booted cell's verdict, its errors and each check that did not come
    out as expected (what `taintport boot` ends with)."""
    boot_time = cell.timings.boot
    print(f"{printable(cell.version)} {printable(cell.variant)}: {cell.status.value} "
          f"({cell.accelerator or 'no boot'}, "
          f"{f'{boot_time:.1f}s' if boot_time is not None else 'no boot'}, "
          f"console {out / cell.logs.console})", file=stream)
    for line in cell.errors:
        print(f"  error: {printable(line)}", file=stream)
    for check in cell.failing:
        print(f"  {check.name}: expected {word(check.expected)}, observed "
              f"{word(check.observed)}", file=stream)
