# SPDX-License-Identifier: GPL-2.0
"""index.html: the matrix at a glance, for a release engineer, in one file.

Self-contained (inline CSS, a few lines of inline JS, no network): the
versions x variants grid, and per cell its checks (observed against
expected), the kernel log lines the agent saw, the KTAP, the console tail,
timings, inputs and the quilt patches. Every piece of text that came from a
console, a log or a file is escaped.
"""
import html
from pathlib import Path
from typing import Callable, Sequence

from taintport.judge.verdict import Check, Status
from taintport.results import report, schema
from taintport.results.cells import Cell, EXIT_MEANING, Matrix, Run, word
from taintport.results.report import printable
from taintport.results.reports import fixchecks, kcidb, knownbug, summary
from taintport.tree.variants import Variant, table

Patches = dict[str, dict[str, str]]  # render.Patches: {version: {name: text}}
# how the page reads a log of the results folder (folder.read_log: its end,
# regular files only), None when the run never wrote it
ReadLog = Callable[[Path], "str | None"]
CONSOLE_TAIL = 60
STATUS_WORDS = {s: s.value.replace("-", " ") for s in Status}
LEGEND = (("--ok", "as expected: every check matched test-matrix/fixes/<fix>.toml"),
          ("--known", "known bug: as expected, and the distribution's tree lacks a fix"),
          ("--bad", "unexpected: the kernel is wrong"),
          ("--err", "error: the run broke, no verdict"))
# the cells a reader must see first, in this order; they also open by themselves
FIRST = {Status.UNEXPECTED: 0, Status.ERROR: 1}

CSS = """
:root { --ok: #1a7f37; --ok-bg: #dafbe1; --bad: #cf222e; --bad-bg: #ffebe9;
        --err: #9a6700; --err-bg: #fff8c5; --muted: #59636e; --line: #d1d9e0;
        --known: #8250df; --known-bg: #fbefff;
        --mono: ui-monospace, "DejaVu Sans Mono", "Liberation Mono", monospace; }
* { box-sizing: border-box; }
body { margin: 0; background: #f6f8fa; color: #1f2328;
       font: 14px/1.5 system-ui, -apple-system, "Segoe UI", "DejaVu Sans", sans-serif; }
header { background: #fff; border-bottom: 1px solid var(--line); padding: 18px 32px; }
h1 { margin: 0 0 6px; font-size: 22px; }
h2 { font-size: 16px; margin: 28px 0 10px; }
h3 { font-size: 14px; margin: 18px 0 6px; }
main { padding: 8px 32px 40px; max-width: 1240px; }
.muted { color: var(--muted); }
.banner { display: inline-block; padding: 2px 10px; border-radius: 12px; font-weight: 600; }
.exit-0 { background: var(--ok-bg); color: var(--ok); }
.exit-1 { background: var(--bad-bg); color: var(--bad); }
.exit-2 { background: var(--err-bg); color: var(--err); }
.counts { margin: 8px 0 0; }
.counts b { font-variant-numeric: tabular-nums; }
table { border-collapse: collapse; }
.grid { width: 100%; table-layout: fixed; background: #fff; border: 1px solid var(--line); }
.grid th, .grid td { border: 1px solid var(--line); padding: 0; text-align: left;
                     vertical-align: top; }
.grid thead th { padding: 8px 12px; background: #f6f8fa; font-weight: 600; }
.grid thead th:first-child { width: 170px; }
.grid tbody th { padding: 10px 12px; white-space: nowrap; }
.grid tbody th small { display: block; font-weight: normal; color: var(--muted); }
.grid td { border-left: 5px solid var(--line); }
.grid a { display: block; padding: 10px 12px; color: inherit; text-decoration: none; }
.grid a:hover .status { text-decoration: underline; }
.grid .status { display: block; font-weight: 700; }
.grid .detail { display: -webkit-box; -webkit-box-orient: vertical; -webkit-line-clamp: 2;
                overflow: hidden; font-size: 12px; color: #3d444d; overflow-wrap: anywhere; }
td.as-expected { background: var(--ok-bg); border-left-color: var(--ok); }
td.as-expected .status { color: var(--ok); }
td.known-bug { background: var(--known-bg); border-left-color: var(--known); }
td.known-bug .status { color: var(--known); }
td.unexpected { background: var(--bad-bg); border-left-color: var(--bad); }
td.unexpected .status { color: var(--bad); }
td.error { background: var(--err-bg); border-left-color: var(--err); }
td.error .status { color: var(--err); }
td.absent { color: var(--muted); padding: 10px 12px; }
.legend { font-size: 12px; color: var(--muted); margin-top: 6px; }
.legend span { margin-right: 14px; }
.swatch { display: inline-block; width: 10px; height: 10px; border-radius: 2px;
          margin-right: 4px; vertical-align: middle; }
details.cell { background: #fff; border: 1px solid var(--line); border-radius: 6px;
               margin: 10px 0; border-left: 5px solid var(--line); }
details.cell.as-expected { border-left-color: var(--ok); }
details.cell.unexpected { border-left-color: var(--bad); }
details.cell.known-bug { border-left-color: var(--known); }
details.cell.error { border-left-color: var(--err); }
details.cell > summary { padding: 10px 14px; cursor: pointer; font-weight: 600; }
details.cell > summary .muted { font-weight: normal; margin-left: 8px; }
.badge { display: inline-block; min-width: 88px; text-align: center; padding: 1px 8px;
         border-radius: 10px; font-size: 12px; margin-right: 8px; }
.badge.as-expected { background: var(--ok-bg); color: var(--ok); }
.badge.unexpected { background: var(--bad-bg); color: var(--bad); }
.badge.known-bug { background: var(--known-bg); color: var(--known); }
.known { background: var(--known-bg); border-left: 4px solid var(--known); padding: 6px 12px; }
.grid.fixes th, .grid.fixes td { padding: 8px 12px; }
td.fix-present { color: var(--ok); border-left-color: var(--ok); }
td.fix-carried { color: var(--ok); font-weight: 700; border-left-color: var(--ok); }
td.fix-missing { color: var(--known); font-weight: 700; border-left-color: var(--known); }
td.fix-reconstructed { color: var(--muted); }
td.fix-contradicted { background: var(--bad-bg); color: var(--bad); font-weight: 700;
                      border-left-color: var(--bad); }
td.fix-unknown { background: var(--err-bg); color: var(--err); border-left-color: var(--err); }
.badge.error { background: var(--err-bg); color: var(--err); }
.body { padding: 0 16px 16px; border-top: 1px solid var(--line); }
.errors { background: var(--err-bg); border: 1px solid #e7d37a; border-radius: 6px;
          padding: 8px 12px; margin-top: 12px; }
pre { font: 12px/1.45 var(--mono); background: #f6f8fa; border: 1px solid var(--line);
      border-radius: 6px; padding: 8px 10px; overflow-x: auto; margin: 6px 0;
      white-space: pre-wrap; overflow-wrap: anywhere; }
.errors pre { background: transparent; border: 0; padding: 0; }
table.checks { font-size: 13px; margin-top: 4px; }
table.checks th, table.checks td { border: 1px solid var(--line); padding: 3px 10px;
                                  text-align: left; }
table.checks td { min-width: 110px; }
table.checks thead th { background: #f6f8fa; }
table.checks td { font-family: var(--mono); font-size: 12px; }
td.PASS { color: var(--ok); }
td.FAIL { background: var(--bad-bg); color: var(--bad); font-weight: 700; }
td.ERROR, td.MISS { background: var(--err-bg); color: var(--err); font-weight: 700; }
td.SKIP { color: var(--muted); }
td.known { background: var(--known-bg); color: var(--known); font-weight: 700; }
td small { font-family: system-ui, sans-serif; color: var(--muted); font-weight: normal; }
ul.mismatches { margin: 4px 0; padding-left: 20px; }
ul.mismatches code { font-weight: 600; }
.facts { display: grid; grid-template-columns: minmax(200px, 260px) 1fr; gap: 0 32px; }
table.kv { font-size: 12px; width: 100%; }
table.kv th { text-align: left; font-weight: 600; padding: 2px 16px 2px 0; vertical-align: top;
              width: 38%; overflow-wrap: anywhere; }
table.kv td { font-family: var(--mono); overflow-wrap: anywhere; padding: 2px 0; }
details.sub { margin: 6px 0; }
details.sub > summary { cursor: pointer; color: #0969da; }
.patch .add { color: #116329; background: #e6ffec; }
.patch .del { color: #82071e; background: #ffebe9; }
.patch .hunk { color: #0550ae; }
.links a { margin-right: 14px; color: #0969da; }
footer { padding: 0 32px 32px; color: var(--muted); font-size: 12px; }
"""

# open the cell a grid link points at
JS = """
function openTarget() {
  var el = document.getElementById(decodeURIComponent(location.hash.slice(1)));
  if (el && el.tagName === "DETAILS") { el.open = true; }
}
window.addEventListener("hashchange", openTarget);
openTarget();
"""


def esc(text: object) -> str:
    return html.escape(printable(text), quote=True)


def anchor(cell: Cell) -> str:
    return f"cell-{cell.version}-{cell.variant}"


def read_text(read_log: ReadLog, path: Path, tail: int | None = None) -> str | None:
    """A log of the results folder as text (its last tail lines), or None when
    the run never wrote it."""
    text = read_log(path)
    if text is None:
        return None
    lines = text.splitlines()
    return "\n".join(lines[-tail:] if tail else lines)


def kv_table(rows: Sequence[tuple[str, object]]) -> str:
    body = "".join(f"<tr><th>{esc(k)}</th><td>{esc(v)}</td></tr>" for k, v in rows
                   if v not in (None, "", {}))
    return f'<table class="kv">{body}</table>'


def grid(cells: Sequence[Cell]) -> str:
    versions: dict[str, dict[Variant, Cell]] = {}
    for cell in cells:
        versions.setdefault(cell.version, {})[cell.variant] = cell
    variants = [v for v in table().booted() if any(v in row for row in versions.values())]
    head = "".join(f"<th>{esc(v)}</th>" for v in variants)
    rows = []
    for version, row in versions.items():
        package = next((c.inputs.package_version for c in row.values() if c.inputs), "")
        tds = []
        for variant in variants:
            ran = row.get(variant)
            if ran is None:
                tds.append('<td class="absent">not run</td>')
                continue
            detail = esc(report.summary_of(ran))
            status = ran.status.value
            tds.append(
                f'<td class="{status}" data-version="{esc(version)}" '
                f'data-variant="{esc(variant)}" data-status="{status}">'
                f'<a href="#{esc(anchor(ran))}" title="{detail}">'
                f'<span class="status">{esc(STATUS_WORDS[ran.status])}'
                f'</span><span class="detail">{detail}</span></a></td>')
        rows.append(f'<tr><th scope="row">{esc(version)}<small>{esc(package)}</small></th>'
                    + "".join(tds) + "</tr>")
    legend = "".join(f'<span><i class="swatch" style="background:var({var})"></i>{text}</span>'
                     for var, text in LEGEND)
    return (f'<table class="grid"><thead><tr><th>version</th>{head}</tr></thead>'
            f'<tbody>{"".join(rows)}</tbody></table><p class="legend">{legend}</p>')


def known_bugs(cells: Sequence[Cell]) -> str:
    lines = report.known_bugs(cells)
    shipped = report.binaries(cells)
    out = ""
    if lines:
        items = "".join(f"<li>{esc(line)}</li>" for line in lines)
        out += f'<h2>Known bugs of the kernels as shipped</h2><ul class="known">{items}</ul>'
    if shipped:
        items = "".join(f"<li>{esc(line)}</li>" for line in shipped)
        out += f"<h2>The distribution's binaries against our builds</h2><ul>{items}</ul>"
    return out


def fix_cell(cell: Cell, fix: str) -> str:
    """A fix's state in a cell's tree, in its colour only where the cell's
    checks of that fix showed it (the trixie backported cell's unsigned fix
    was "carried" in green while its events were missing)."""
    what, _ = fixchecks.shown(cell, fix)
    kind = cell.fixes[fix].value if what is fixchecks.Shown.SHOWN else \
        what.name.lower()
    checks = ", ".join(f"{c.name} {word(c.observed)}" for c in fixchecks.checks_of(cell, fix))
    return (f'<td class="fix-{kind}" data-fix="{esc(fix)}" data-variant="{esc(cell.variant)}" '
            f'title="{esc(checks)}">{esc(fixchecks.label(cell, fix))}</td>')


def fix_grid(cells: Sequence[Cell]) -> str:
    """Each fix's state in each cell's tree, as its checks showed it."""
    grid = report.fix_grid(cells)
    if not grid:
        return "<p>none recorded</p>"
    by_place = {cell.where: cell for cell in cells}
    variants = list(dict.fromkeys(v for _, _, states in grid for v in states))
    head = "".join(f"<th>{esc(v)}</th>" for v in variants)
    rows = "".join(
        f"<tr><th scope=\"row\">{esc(version)}</th><th>{esc(fix)}</th>"
        + "".join(fix_cell(by_place[(version, v)], fix) if v in states
                  else '<td class="fix-none">-</td>' for v in variants) + "</tr>"
        for version, fix, states in grid)
    legend = ("green: the tree holds the fix and the cell's checks of it passed; purple: "
              "missing as shipped; red: a check of the fix failed; amber: not shown "
              "(the run broke, or no check of it ran)")
    return (f'<table class="grid fixes"><thead><tr><th>version</th><th>fix</th>{head}</tr>'
            f'</thead><tbody>{rows}</tbody></table><p class="legend">{legend}</p>')


def checks_table(cell: Cell) -> str:
    """One row a test, grouped by KTAP subtest (load mode); host checks first."""
    groups: dict[str, list[tuple[str, Check]]] = {}
    for check in cell.checks:
        groups.setdefault(check.subtest or "host", []).append((check.test, check))
    rows = []
    for subtest, checks in groups.items():
        rows.append(f'<tr><th colspan="3" scope="rowgroup">{esc(subtest)}</th></tr>')
        for test, check in checks:
            status = kcidb.check_status(cell, check).value
            shown = knownbug.fixes_shown(cell, check)
            kind, title = ("known", knownbug.message(shown)) if shown else (status, status)
            rows.append(f'<tr><td>{esc(test)}</td>'
                        f'<td class="{kind}" title="{esc(check.name)}: {esc(title)}">'
                        f'{esc(word(check.observed))}</td>'
                        f'<td>{esc(word(check.expected))}</td></tr>')
    return ('<table class="checks"><thead><tr><th>test</th><th>observed</th>'
            f'<th>expected</th></tr></thead><tbody>{"".join(rows)}</tbody></table>')


def mismatches(cell: Cell) -> str:
    wrong = [c for c in cell.checks if kcidb.check_status(cell, c) is kcidb.Status.FAIL]
    if not wrong:
        return ""
    items = "".join(
        f"<li><code>{esc(c.name)}</code>: expected {esc(word(c.expected))}, observed "
        f"{esc(word(c.observed))}<pre>{esc(chr(10).join(kcidb.evidence(cell, c)))}</pre></li>"
        for c in wrong)
    return f'<h3>Checks that differ</h3><ul class="mismatches">{items}</ul>'


def dmesg(cell: Cell) -> str:
    lines = [d for c in cell.checks for d in c.diagnostics if ": dmesg: " in d]
    if not lines:
        return ""
    return ("<h3>Kernel log during each load</h3><pre>"
            + esc("\n".join(line.replace(": dmesg: ", ": ", 1) for line in lines)) + "</pre>")


def sub(title: str, body_html: str, open_: bool = False) -> str:
    return (f'<details class="sub"{" open" if open_ else ""}><summary>{esc(title)}</summary>'
            f"{body_html}</details>")


def patch_html(text: str) -> str:
    spans = []
    for line in text.splitlines():
        kind = ("add" if line.startswith("+") and not line.startswith("+++") else
                "del" if line.startswith("-") and not line.startswith("---") else
                "hunk" if line.startswith("@@") else "")
        spans.append(f'<span class="{kind}">{esc(line)}</span>' if kind else esc(line))
    return '<pre class="patch">' + "\n".join(spans) + "</pre>"


def patches_html(cell: Cell, patches: Patches | None) -> str:
    listed = cell.inputs.series if cell.inputs else {}
    if not listed:
        return ""
    known = (patches or {}).get(cell.version, {})
    parts = []
    for name, digest in listed.items():
        title = f"{name}  (sha256 {digest[:16]}…)"
        parts.append(sub(title, patch_html(known[name]) if name in known else
                         f'<p class="muted">quilt/{esc(cell.version)}/{esc(name)} is not '
                         "available with the sha256 the run used</p>"))
    return "<h3>Quilt patches applied</h3>" + "".join(parts)


def headline(cell: Cell) -> str:
    """checks, how many differ or went unreported, kernel, accelerator, boot time"""
    statuses = [kcidb.check_status(cell, c) for c in cell.checks]
    facts: list[str | None] = [f"{len(cell.checks)} checks"]
    if statuses.count(kcidb.Status.FAIL):
        facts.append(f"{statuses.count(kcidb.Status.FAIL)} differ")
    if statuses.count(kcidb.Status.MISS):
        facts.append(f"{statuses.count(kcidb.Status.MISS)} not reported")
    known = sum(1 for c in cell.checks if knownbug.fixes_shown(cell, c))
    if known:
        facts.append(f"{known} show the known bug")
    facts += [cell.kernel_release, cell.accelerator]
    facts.append(f"boot {summary.seconds(cell.timings.boot)}")
    return " · ".join(f for f in facts if f)


def facts_table(cell: Cell) -> str:
    rows: list[tuple[str, object]] = [
        ("kernel release", cell.kernel_release),
        ("kernel version (the guest's uname -v)", cell.kernel_version),
        ("accelerator", cell.accelerator),
        ("QEMU exit code", cell.qemu_exit_code),
        ("reused", "yes: inputs unchanged since a stored run" if cell.reused else None),
        ("resumed", "yes: kept from the interrupted run" if cell.resumed else None),
        ("fault", f"taintport.fault={cell.fault}: the agent broke on purpose, a harness "
                  "test, not a kernel's result" if cell.fault else None)]
    for key, value in (schema.write_inputs(cell.inputs) if cell.inputs else {}).items():
        if isinstance(value, dict):  # series, fragments: name -> sha256
            rows += [(f"{key} {name}", digest) for name, digest in value.items()]
        else:
            rows.append((key.replace("_", " "), value))
    timings: list[tuple[str, object]] = [(stage, f"{s:.2f} s")
                                         for stage, s in cell.timings.items()]
    timings.append(("total", f"{cell.timings.total():.2f} s"))
    return ('<div class="facts"><div><h3>Timings</h3>' + kv_table(timings)
            + "</div><div><h3>Inputs</h3>" + kv_table(rows) + "</div></div>")


def cell_section(cell: Cell, out_dir: Path, read_log: ReadLog, patches: Patches | None) -> str:
    out_dir = Path(out_dir)
    parts = []
    if cell.errors:
        parts.append('<div class="errors"><b>The run broke:</b><pre>'
                     + esc("\n".join(cell.errors)) + "</pre></div>")
    if cell.panic:
        parts.append("<h3>Kernel panic</h3><pre>" + esc("\n".join(cell.panic)) + "</pre>")
    parts.append(mismatches(cell))
    if cell.checks:
        parts.append("<h3>Checks: observed (and expected, where they differ)</h3>"
                     + checks_table(cell))
    parts.append(dmesg(cell))
    ktap = read_text(read_log, out_dir / cell.logs.ktap)
    if ktap is not None:
        parts.append(sub(f"KTAP ({len(ktap.splitlines())} lines)", f"<pre>{esc(ktap)}</pre>"))
    if cell.status in FIRST:
        tail = read_text(read_log, out_dir / cell.logs.console, tail=CONSOLE_TAIL)
        if tail is not None:
            parts.append(sub(f"Console, last {CONSOLE_TAIL} lines", f"<pre>{esc(tail)}</pre>",
                             open_=cell.status is Status.ERROR))
    parts.append(facts_table(cell))
    parts.append(patches_html(cell, patches))
    links = [cell.logs.build, cell.logs.console, cell.logs.ktap]
    parts.append('<p class="links">' + "".join(
        f'<a href="{esc(path)}">{esc(Path(path).name)}</a>' for path in links
        if (out_dir / path).exists()) + "</p>")
    status = cell.status.value
    return (f'<details class="cell {status}" id="{esc(anchor(cell))}"'
            f'{" open" if cell.status in FIRST else ""}>'
            f'<summary><span class="badge {status}">{esc(STATUS_WORDS[cell.status])}'
            f'</span>{esc(cell.version)} · {esc(cell.variant)}'
            f'<span class="muted">{esc(headline(cell))}</span></summary>'
            f'<div class="body">{"".join(parts)}</div></details>')


def environment(doc: Matrix) -> str:
    items = []
    for run in doc.all_runs():
        accel = run.accelerator
        tools = ", ".join(f"{k}: {v}" for k, v in sorted(run.tools.items()))
        where = f"{run.dir} · " if isinstance(run, Run) else ""
        items.append(f"<li>{esc(where)}started {esc(run.started or '-')} · accelerator "
                     f"{esc(accel.name if accel else '-')} "
                     f"({esc(accel.reason if accel else 'no boot')})<br>{esc(tools)}</li>")
    return f"<ul>{''.join(items)}</ul>"


def render(doc: Matrix, out_dir: Path, read_log: ReadLog, patches: Patches | None = None) -> str:
    """The page for a matrix document whose logs live under out_dir, read with
    read_log.

    patches: {version: {"group/name.patch": text}}, the quilt patches to show
    (see render.read_patches); a patch not given is listed by name only.
    """
    cells = doc.cells
    code = doc.exit_code
    by_status = {s: sum(1 for c in cells if c.status is s) for s in Status}
    tally = " · ".join(f"<b>{n}</b> {esc(STATUS_WORDS[s])}" for s, n in by_status.items())
    total = summary.counts(cells)
    ordered = sorted(cells, key=lambda c: FIRST.get(c.status, len(FIRST)))
    title = f"taintport matrix: {len(cells)} cells, exit {code}"
    meaning = EXIT_MEANING[code]
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{esc(title)}</title>
<style>{CSS}</style>
</head>
<body>
<header>
<h1>taintport matrix</h1>
<span class="banner exit-{esc(code)}">exit {esc(code)}: {esc(meaning)}</span>
<span class="muted">&nbsp; started {esc(doc.started or "-")}</span>
<p class="counts">{len(cells)} cells: {tally} &nbsp;|&nbsp; checks: {esc(total)}</p>
</header>
<main>
{known_bugs(cells)}
<h2>Versions × variants</h2>
{grid(cells)}
<h2>Fixes of the family</h2>
{fix_grid(cells)}
<h2>Cells</h2>
{"".join(cell_section(c, out_dir, read_log, patches) for c in ordered)}
<h2>Environment</h2>
{environment(doc)}
</main>
<footer>generated by taintport from matrix.json ({esc(doc.schema or schema.SCHEMA)})</footer>
<script>{JS}</script>
</body>
</html>
"""
