# SPDX-License-Identifier: GPL-2.0
"""Results folders are input: hostile or damaged ones are refused, exit 2, nothing written.

Each test copies a fixture results folder (data/results/), edits it the way
an attacker's CI job or a crash would, and runs the real command on it.
docs/faults.md ("Results folders") maps each case here.
"""
import errno
import fcntl
import io
import json
import os
import shutil
import stat
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from taintport import atomic, cache
from taintport.cache import Cache
from taintport.errors import InputError, OutputError
from taintport.judge import verdict
from taintport.results import folder, render, report, schema
from taintport.run import matrix, sources
from taintport.tree import series, variants, versions

REPO = Path(__file__).resolve().parents[2]
RESULTS = Path(__file__).parent / "data" / "results"
BOOKWORM = RESULTS / "bookworm-6.1"
TRIXIE = RESULTS / "trixie-6.12"



def edited(tmp_path, edit, source=BOOKWORM, name="run"):
    """A copy of a fixture results folder whose matrix.json went through edit(doc)."""
    run = tmp_path / name
    shutil.copytree(source, run)
    doc = json.loads((run / "matrix.json").read_text())
    edit(doc)
    (run / "matrix.json").write_text(json.dumps(doc, indent=2))
    return run


def listing(folder):
    return sorted((str(p.relative_to(folder)), p.stat().st_mtime_ns) for p in
                  Path(folder).rglob("*"))


def refused(proc, *words):
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    for word in words:
        assert word in proc.stderr


# 1. paths and names in results

@pytest.mark.parametrize("path", ["/etc/passwd", "../../../../etc/passwd"])
def test_report_refuses_a_log_path_outside_the_folder(tmp_path, path, taintport):
    run = edited(tmp_path, lambda doc: doc["cells"][0]["logs"].update(console=path))
    before = listing(run)
    proc = taintport("report", run)
    refused(proc, "matrix.json: cells[0].logs.console", path)
    assert listing(run) == before, "nothing written"


@pytest.mark.parametrize("key", ["console", "build"])
def test_an_absolute_log_path_is_refused_even_inside_the_folder(tmp_path, key):
    """An absolute path that leads into the folder today leads elsewhere once
    the folder is copied (a CI artifact, a merge): only relative paths are read."""
    run = tmp_path / "run"
    console = run / "bookworm-6.1" / "upstream" / "console.log"
    run = edited(tmp_path, lambda doc: doc["cells"][0]["logs"].update({key: str(console)}))
    with pytest.raises(InputError, match=rf"matrix.json: cells\[0\].logs.{key}: expected a "
                       "relative path under the results folder"):
        folder.load_matrix(run)
    cell = run / "bookworm-6.1" / "upstream" / "cell.json"
    doc = json.loads(cell.read_text())
    doc["logs"][key] = str(console)
    cell.write_text(json.dumps(doc))
    with pytest.raises(InputError, match=rf"cell.json: cell.logs.{key}: expected a relative"):
        folder.read_cell(cell)


def test_report_refuses_a_log_linked_outside_the_folder(tmp_path, taintport):
    run = edited(tmp_path, lambda doc: None)
    console = run / "bookworm-6.1" / "upstream" / "console.log"
    console.unlink()
    console.symlink_to("/etc/passwd")
    before = listing(run)
    proc = taintport("report", run)
    refused(proc, "cells[0].logs.console", "leads outside the results folder")
    assert listing(run) == before


def test_report_refuses_a_patch_name_that_is_a_path(tmp_path, taintport):
    def edit(doc):
        doc["cells"][2]["inputs"]["series"] = {"../../../../etc/passwd": "0" * 64}
    proc = taintport("report", edited(tmp_path, edit))
    refused(proc, "cells[2].inputs.series", "group/name.patch")


def test_merge_refuses_a_version_that_is_a_path(tmp_path, taintport):
    def edit(doc):
        doc["cells"][0]["version"] = "../payload"
    job = edited(tmp_path, edit, name="job")
    shutil.copytree(job / "bookworm-6.1", tmp_path / "payload")  # job/../payload
    out = tmp_path / "ci" / "merged"
    proc = taintport("report", "merge", job, TRIXIE, "--out", out)
    refused(proc, "cells[0].version", "'../payload'")
    assert not (tmp_path / "ci").exists(), "nothing written, in --out or beside it"


def test_merge_refuses_a_version_name_longer_than_a_file_name(tmp_path, taintport):
    """5,000 characters: ENAMETOOLONG at the first folder merge made, a traceback."""
    long = "b" * 5000
    job = edited(tmp_path, lambda doc: [cell.update(version=long) for cell in doc["cells"]],
                 name="job")
    (job / "bookworm-6.1").rename(job / ("b" * 255))
    out = tmp_path / "merged"
    refused(taintport("report", "merge", job, "--out", out), "cells[0].version: 'bbbb",
            "(5002 characters as written) is not a version name")
    assert not out.exists()
    refused(taintport("report", job), "cells[0].version", "is not a version name")


def test_merge_copies_no_link_into_the_merged_folder(tmp_path, taintport):
    job = edited(tmp_path, lambda doc: None, name="job")
    (job / "bookworm-6.1" / "secret").symlink_to("/etc/passwd")
    out = tmp_path / "merged"
    proc = taintport("report", "merge", job, TRIXIE, "--out", out)
    assert proc.returncode == 2, "the merge exits as its cells: trixie's has an error"
    assert (out / "matrix.json").exists() and "taintport: error" not in proc.stderr
    assert (out / "bookworm-6.1" / "upstream" / "console.log").exists()
    assert not (out / "bookworm-6.1" / "secret").exists()


# 2. malformed results

MALFORMED = {
    "truncated": (lambda text: text[:len(text) // 2], "cannot read"),
    "no exit_code": (lambda text: json.dumps({k: v for k, v in json.loads(text).items()
                                              if k != "exit_code"}), "exit_code: missing"),
    "checks not a list": (lambda text: text.replace('"checks": [', '"checks": "x", "y": [', 1),
                          "cells[0].checks: expected a list"),
    "observed a number": (lambda text: text.replace('"observed": "ok"', '"observed": 1', 1),
                          "cells[0].checks[0].observed: expected"),
    "no status": (lambda text: without_first_status(text), "cells[0].status: missing"),
}


def without_first_status(text):
    doc = json.loads(text)
    del doc["cells"][0]["status"]
    return json.dumps(doc)


def damaged(tmp_path, how, name="run"):
    run = tmp_path / name
    shutil.copytree(BOOKWORM, run)
    change, _ = MALFORMED[how]
    (run / "matrix.json").write_text(change((run / "matrix.json").read_text()))
    return run


@pytest.mark.parametrize("how", MALFORMED)
def test_damaged_matrix_is_an_error_naming_file_and_field(tmp_path, how, taintport):
    field = MALFORMED[how][1]
    refused_by_every_reader(tmp_path, damaged(tmp_path, how), taintport, field)


def refused_by_every_reader(tmp_path, run, taintport, field, what=""):
    """report, report compare and report merge each refuse run's matrix.json,
    naming the file and the field, and write nothing."""
    before = listing(run)
    refused(taintport("report", run), f"{run}/matrix.json: {field}", what)
    refused(taintport("report", "compare", BOOKWORM, run), f"{run}/matrix.json: {field}")
    out = tmp_path / "merged"
    refused(taintport("report", "merge", TRIXIE, run, "--out", out), field)
    assert listing(run) == before and not out.exists()


def test_resume_of_a_truncated_cell_is_an_error_naming_it(tmp_path, taintport):
    run = tmp_path / "run"
    shutil.copytree(BOOKWORM, run)
    cell = run / "bookworm-6.1" / "reverted" / "cell.json"
    cell.write_text(cell.read_text()[:200])
    before = listing(run)
    proc = taintport("matrix", "--versions", "bookworm-6.1", "--resume", run)
    refused(proc, str(cell), "cannot read")
    assert [entry for entry in listing(run) if ".taintport-run.lock" not in entry[0]] == before


def test_resume_of_a_cell_with_a_wrong_type_is_an_error_naming_the_field(tmp_path, taintport):
    run = tmp_path / "run"
    shutil.copytree(BOOKWORM, run)
    path = run / "bookworm-6.1" / "upstream" / "cell.json"
    cell = json.loads(path.read_text())
    cell["timings"]["boot"] = "fast"
    path.write_text(json.dumps(cell))
    proc = taintport("matrix", "--versions", "bookworm-6.1", "--resume", run)
    refused(proc, str(path), "cell.timings.boot: expected seconds")


# 3. control characters

GUEST = "guest says \x1b]0;pwned\x07\x1b[2J\x1b[31mred\u202e"


def test_control_characters_never_leave_the_tool(tmp_path, taintport):
    def edit(doc):
        doc["started"] = "2026-12-03T10:00:00\x1b[2J\x00Z"
        first = doc["cells"][0]
        first["status"] = "error"
        doc["exit_code"] = 2  # as the cells give: the reader checks it
        first["errors"] = [GUEST]
        first["checks"][0]["name"] = "signed\x0bloads"
        first["checks"][0]["diagnostics"] = [GUEST]
        first["panic"] = [GUEST]
    run = edited(tmp_path, edit)
    proc = taintport("report", run)
    assert proc.returncode == 0
    ET.parse(run / "junit.xml")  # well-formed
    for name in ("junit.xml", "summary.md", "index.html"):
        text = (run / name).read_text()
        assert not any(c in text for c in "\x1b\x07\x00\x0b\u202e"), name
    assert "\\x1b[31mred" in (run / "summary.md").read_text()
    table = io.StringIO()
    report.table(folder.load_matrix(run).cells, table)
    assert "\x1b" not in table.getvalue() and "\\x1b]0;pwned" in table.getvalue()


def test_a_version_name_with_control_characters_is_refused(tmp_path, taintport):
    run = edited(tmp_path, lambda doc: doc["cells"][1].update(version="bookworm\x1b[2J-6.1"))
    refused(taintport("report", run), "cells[1].version", "\\x1b")
    assert not (run / "junit.xml").exists()


def test_every_cell_the_runner_writes_is_read_back(tmp_path):
    """The reader refuses what is wrong, never what the runner itself writes,
    and gives back the cell that was written."""
    runner = matrix.Runner(Cache(tmp_path / "cache"), tmp_path / "out")
    pinned = versions.select(["bookworm-6.1"])[0]
    for variant in variants.table().booted():
        cell = runner.chain.new_cell(pinned, variant,
                                     sources.of(variant).inputs(pinned, series.load(pinned.name),
                                                                variant),
                                     key="0" * 64)
        cell.reused_from, cell.resumed = variants.table().booted()[0], True
        cell.inputs.sources_sha256 = "1" * 64
        cell.timings.record("boot", 4.2)
        cell.checks = [verdict.Check("signed_loads", True, None, ("# seen",)),
                       verdict.Check("forced_loads", False, False)]
        written = json.loads(json.dumps(schema.write_cell(cell)))
        assert schema.read_cell(schema.Reader(tmp_path / "cell.json"), written, "cell") == cell


def test_a_check_whose_matches_disagrees_is_refused(tmp_path, taintport):
    def edit(doc):
        doc["cells"][0]["checks"][0]["matches"] = False
    refused(taintport("report", edited(tmp_path, edit)), "cells[0].checks[0].matches")


def test_an_exit_code_its_cells_do_not_give_is_refused(tmp_path, taintport):
    refused(taintport("report", edited(tmp_path, lambda doc: doc.update(exit_code=1))),
            "matrix.json: exit_code: expected 0, as its cells give")


def test_an_unknown_stage_is_refused(tmp_path, taintport):
    def edit(doc):
        doc["cells"][0]["timings"]["coffee"] = 1.0
    refused(taintport("report", edited(tmp_path, edit)), "cells[0].timings.coffee")


def test_a_fault_the_agent_does_not_know_is_refused(tmp_path, taintport):
    def edit(doc):
        doc["cells"][0]["fault"] = "meltdown"
    refused(taintport("report", edited(tmp_path, edit)), "cells[0].fault",
            "one of hang, panic, truncate", "meltdown")


def test_a_fault_run_says_so_in_the_reports(tmp_path, taintport):
    def edit(doc):
        doc["cells"][0]["fault"] = "truncate"
    run = edited(tmp_path, edit)
    proc = taintport("report", run)
    assert proc.returncode == 0, proc.stderr
    page = (run / "index.html").read_text()
    assert "(fault run: taintport.fault=truncate, a harness test)" in page
    assert "taintport.fault=truncate: the agent broke on purpose" in page
    assert "(fault run: taintport.fault=truncate, a harness test)" in \
        (run / "summary.md").read_text()


# 4. strict JSON: what json.loads takes and a results file must not hold

def exit_code_of(doc):
    statuses = {c["status"] for c in doc["cells"]}
    return 2 if "error" in statuses or not doc["cells"] else 1 if "unexpected" in statuses \
        else 0


def deep(levels):
    return "[" * levels + "]" * levels


STRICT = {
    # name: (the field it is written in, the text written there, what the error says)
    "NaN": ("timings.boot", "NaN", "NaN is not a number JSON allows"),
    "Infinity": ("timings.boot", "Infinity", "Infinity is not a number JSON allows"),
    "-Infinity": ("timings.boot", "-Infinity", "-Infinity is not a number JSON allows"),
    "1e999": ("timings.boot", "1e999", "1e999 is too large for a number"),
    "5000 digits": ("qemu_exit_code", "9" * 5000, "an integer of 5000 digits"),
    "200000 levels": ("qemu_exit_code", deep(200000), "nested deeper than 32 levels"),
}


@pytest.mark.parametrize("how", STRICT)
def test_what_strict_json_refuses_is_an_error_naming_file_and_field(tmp_path, how, taintport):
    key, value, what = STRICT[how]
    field = f"cells[0].{key}"

    def mark(doc):
        cell = doc["cells"][0]
        if key == "timings.boot":
            cell["timings"]["boot"] = "@"
        else:
            cell[key] = "@"
    run = edited(tmp_path, mark)
    text = (run / "matrix.json").read_text().replace('"@"', value, 1)
    (run / "matrix.json").write_text(text)
    refused_by_every_reader(tmp_path, run, taintport, field, what)


def surrogate_in(tmp_path, place):
    """A copy of the fixture whose matrix.json holds "\\ud800" (valid JSON) at place."""
    def edit(doc):
        cell = doc["cells"][0]
        cell.update(status="error", errors=["@"])
        doc["exit_code"] = 2
        if place == "diagnostics":
            cell["checks"][0]["diagnostics"] = ["@"]
            cell["errors"] = ["broken"]
        elif place == "key":
            cell["inputs"]["@"] = 1
            cell["errors"] = ["broken"]
    run = edited(tmp_path, edit, name=f"run-{place}")
    text = (run / "matrix.json").read_text()
    (run / "matrix.json").write_text(text.replace('"@"', '"\\ud800"', 1))
    return run


@pytest.mark.parametrize("place, where", [
    ("errors", "cells[0].errors[0]"),
    ("diagnostics", "cells[0].checks[0].diagnostics[0]"),
    ("key", r"cells[0].inputs.\ud800 (its key)"),
])
def test_a_lone_surrogate_is_refused_before_anything_is_written(tmp_path, place, where,
                                                                 taintport):
    """json.loads lets "\\ud800" through, no UTF-8 file holds it: report had
    rewritten three files when it found out, merge left a half --out."""
    run = surrogate_in(tmp_path, place)
    assert "\\ud800" in (run / "matrix.json").read_text()
    (run / "junit.xml").write_text("the reports of before\n")
    before = listing(run)
    message = f"matrix.json: {where}: a \\u escape of half a UTF-16 surrogate pair"
    refused(taintport("report", run), message)
    assert listing(run) == before, "nothing rewritten"
    out = tmp_path / "merged"
    refused(taintport("report", "merge", TRIXIE, run, "--out", out), message)
    assert not out.exists()
    paired = edited(tmp_path, lambda doc: doc["cells"][0].update(errors=["\U0001f600"]),
                    name="paired")  # json.dumps writes it as a pair: \\ud83d\\ude00
    assert "\\ud83d\\ude00" in (paired / "matrix.json").read_text()
    assert folder.load_matrix(paired).cells[0].errors == ["\U0001f600"]


def test_resume_of_a_cell_holding_nan_names_the_field(tmp_path, taintport):
    run = tmp_path / "run"
    shutil.copytree(BOOKWORM, run)
    path = run / "bookworm-6.1" / "upstream" / "cell.json"
    path.write_text(path.read_text().replace('"boot": ', '"boot": NaN, "x": ', 1))
    proc = taintport("matrix", "--versions", "bookworm-6.1", "--resume", run)
    refused(proc, f"{path}: timings.boot: NaN")


def test_a_string_past_the_limit_is_refused_and_never_written(tmp_path, taintport):
    huge = "x" * (schema.MAX_STRING + 1)
    run = edited(tmp_path, lambda doc: doc["cells"][0].update(errors=[huge], status="error",
                                                             ) or doc.update(exit_code=2))
    before = listing(run)
    refused(taintport("report", run), "matrix.json: cells[0].errors[0]: a string of "
            f"{len(huge)} characters, more than the {schema.MAX_STRING}")
    assert listing(run) == before
    # the writer cuts what the reader would refuse: a 30 MB error reads back
    cell = folder.load_matrix(BOOKWORM).cells[0]
    cell.errors = ["e" * 30_000_000]
    folder.write_cell(tmp_path / "out", cell)
    back = folder.read_cell(tmp_path / "out" / cell.version / cell.variant.name / "cell.json")
    assert len(back.errors[0]) <= schema.MAX_STRING and back.errors[0].endswith("cut]")
    # and so does the matrix.json a run writes as each cell ends, its KCIDB view too
    doc = folder.load_matrix(BOOKWORM)
    doc.cells[0].errors = ["e" * 30_000_000]
    folder.write_document(tmp_path / "out", doc)
    assert (tmp_path / "out" / "matrix.json").stat().st_size < 4 * schema.MAX_STRING


def test_a_file_past_its_limit_is_refused(tmp_path, monkeypatch):
    run = edited(tmp_path, lambda doc: None)
    size = (run / "matrix.json").stat().st_size
    monkeypatch.setattr(folder, "MAX_JSON", size - 1)
    with pytest.raises(InputError, match=rf"matrix.json: larger than the {size - 1} bytes"):
        folder.load_matrix(run)
    monkeypatch.setattr(folder, "MAX_JSON", size)
    assert folder.load_matrix(run).cells


# 5. only regular files are read

def within(seconds, *args, tmp_path):
    """tools/taintport that must end by itself: a reader that opened a FIFO would
    wait for a writer for ever."""
    env = dict(os.environ, TAINTPORT_CACHE=str(tmp_path / "cache"))
    return subprocess.run([sys.executable, str(REPO / "tools" / "taintport"), *map(str, args)],
                          capture_output=True, text=True, timeout=seconds, env=env)


def test_a_fifo_is_refused_not_waited_on(tmp_path):
    run = edited(tmp_path, lambda doc: None)
    ktap = run / "bookworm-6.1" / "reverted" / "ktap.txt"
    ktap.unlink()
    os.mkfifo(ktap)
    before = listing(run)
    refused(within(60, "report", run, tmp_path=tmp_path), f"{ktap}: a FIFO, not a regular file")
    assert listing(run) == before, "no report written"
    out = tmp_path / "merged"
    refused(within(60, "report", "merge", run, "--out", out, tmp_path=tmp_path),
            f"{ktap}: not a regular file, a folder or a link")
    assert not out.exists() or [p.name for p in out.iterdir()] == [folder.LOCK]
    matrix_json = run / "matrix.json"
    matrix_json.unlink()
    os.mkfifo(matrix_json)
    refused(within(60, "report", run, tmp_path=tmp_path), f"{matrix_json}: a FIFO")


# 6. junit.xml and index.html stay within a few times the inputs' size

def test_reports_stay_within_a_few_times_the_input(tmp_path, taintport):
    """Cells whose errors are one line of the longest string a results file
    holds: every check of a cell points to them (MISS where the agent reported
    nothing, ERROR where the run broke after it did), none copies them."""
    lines = {"reverted": "r" * (schema.MAX_STRING - 10),
             "backported": "b" * (schema.MAX_STRING - 10)}

    def edit(doc):
        for cell in doc["cells"]:
            if cell["variant"] in lines:
                assert len(cell["checks"]) > 70
                cell["status"] = "error"
                cell["errors"] = [lines[cell["variant"]], "second"]
    run = edited(tmp_path, edit, source=TRIXIE)
    assert taintport("report", run).returncode == 0
    size = (run / "matrix.json").stat().st_size
    for name in ("junit.xml", "index.html"):
        assert (run / name).stat().st_size < 3 * size, name
    junit = ET.parse(run / "junit.xml").getroot()
    for variant, line in lines.items():
        suite = next(s for s in junit if s.get("name") == f"trixie-6.12.{variant}")
        texts = [e.text or "" for e in suite.iter("error")]
        assert sum(line in t for t in texts) == 1, "one copy of the errors: the verdict's"
        checks = [case for case in suite.iter("testcase") if case.get("name") != "verdict"]
        assert {e.get("type") for case in checks for e in case.iter("error")} == \
            {"MISS" if variant == "reverted" else "ERROR"}
        assert all(len(e.get("message")) < 300 for e in suite.iter("error"))


# 6b. what taintport writes, it reads back: one cap for both

def test_fifty_five_error_strings_of_1_mb_make_a_folder_report_reads_back(tmp_path, taintport):
    """matrix.json of 58 MB, under the cap: report rewrote it at twice that (the
    KCIDB view holds the errors again), and then refused it."""
    def edit(doc):
        for i in range(55):
            cell = doc["cells"][i % len(doc["cells"])]
            cell["status"] = "error"
            cell["errors"] = cell.get("errors", []) + [chr(ord("a") + i % 26) * 1_000_000]
        doc["exit_code"] = 2
    run = edited(tmp_path, edit)
    assert 55_000_000 < (run / "matrix.json").stat().st_size <= folder.MAX_JSON
    proc = taintport("report", run)
    assert proc.returncode == 0, proc.stderr
    for name in ("matrix.json", "junit.xml", "summary.md", "index.html"):
        assert (run / name).stat().st_size <= 12_000_000, name
    doc = folder.load_matrix(run)
    for cell in doc.cells:
        assert sum(len(line) + 1 for line in cell.errors) <= schema.MAX_STRING
        assert cell.errors[-1].endswith("errors, panic lines and diagnostics, cut]")
    assert taintport("report", run).returncode == 0, "and again"


def test_a_report_larger_than_the_reader_takes_is_never_written(tmp_path, monkeypatch):
    run = edited(tmp_path, lambda doc: None)
    (run / "junit.xml").write_text("the reports of before\n")
    before = listing(run)
    doc = folder.load_matrix(run)
    monkeypatch.setattr(folder, "MAX_JSON", len(folder.document(run, doc).encode()) - 1)
    with pytest.raises(OutputError, match=r"matrix.json: would be \d+ bytes, more than the "
                       r"\d+ taintport reads of a results file; nothing written"):
        render.publish(run, doc, with_document=True)
    assert listing(run) == before
    with pytest.raises(OutputError, match="matrix.json: would be"):
        folder.write_document(run, doc)
    assert listing(run) == before
    # the page, rendered last: no report is written before it is refused
    page = render.reports(run, doc)["index.html"]
    monkeypatch.setattr(folder, "MAX_JSON", len(page.encode()) - 1)
    with pytest.raises(OutputError, match="index.html: would be"):
        render.publish(run, doc)
    assert listing(run) == before


def sparse(path, size):
    """path as a file of size bytes, all of it a hole but its last line."""
    with open(path, "wb") as handle:
        handle.truncate(size - 32)
        handle.seek(size - 32)
        handle.write(b"\n" + b"the last line of the log".ljust(30) + b"\n")
    assert path.stat().st_blocks * 512 < 1 << 20


def test_merge_copies_the_end_of_a_sparse_log_saying_so(tmp_path, taintport):
    """A console.log of 1 GiB on 12 KB of disk was copied as 1.1 GB of real disk."""
    job = edited(tmp_path, lambda doc: None, name="job")
    sparse(job / "bookworm-6.1" / "upstream" / "console.log", 1 << 30)
    out = tmp_path / "merged"
    proc = taintport("report", "merge", job, "--out", out)
    assert proc.returncode == 0, proc.stderr
    copy = out / "bookworm-6.1" / "upstream" / "console.log"
    assert copy.stat().st_size <= folder.MAX_LOG + 200
    text = copy.read_text()
    assert text.startswith(f"[taintport: the first {(1 << 30) - 31} bytes "
                           f"of console.log left out: taintport keeps the last "
                           f"{folder.MAX_LOG} bytes of a log]\n")
    assert text.endswith("the last line of the log      \n")
    used = sum(p.stat().st_blocks * 512 for p in out.rglob("*") if p.is_file())
    assert used < 4 * folder.MAX_LOG
    assert (out / "index.html").stat().st_size < 8 * folder.MAX_LOG


def test_the_page_shares_its_log_budget_among_the_cells(tmp_path, taintport):
    run = edited(tmp_path, lambda doc: None)
    cells = folder.load_matrix(run).cells
    for cell in cells:
        (run / cell.logs.ktap).unlink(missing_ok=True)
        (run / cell.logs.ktap).write_text("KTAP version 1\n" + "# x\n" * 3_000_000)
    assert taintport("report", run).returncode == 0
    limit = folder.page_log_limit(len(cells))
    assert limit < folder.MAX_LOG
    assert (run / "index.html").stat().st_size < len(cells) * limit + 4 * 1_000_000
    assert "bytes of ktap.txt left out" in (run / "index.html").read_text()


# 6c. where the folder is published

FIXTURE_BASE = "https://artifacts.example.org/taintport-fixtures/bookworm-6.1/"


def log_urls(run):
    return [b["log_url"] for b in json.loads((run / "matrix.json").read_text())["kcidb"]["builds"]]


def test_report_keeps_the_https_urls_the_folder_was_published_at(tmp_path, taintport, monkeypatch):
    assert "TAINTPORT_ARTIFACTS_URL" not in os.environ
    run = edited(tmp_path, lambda doc: None)
    before = log_urls(run)
    assert all(url.startswith(FIXTURE_BASE) for url in before)
    assert taintport("report", run).returncode == 0
    assert log_urls(run) == before, "not rewritten to file://"
    assert taintport("report", run, "--artifacts-url", "https://ci.example.org/job/7/"
                     ).returncode == 0
    assert log_urls(run)[0] == "https://ci.example.org/job/7/bookworm-6.1/upstream/build.log"
    assert taintport("report", run).returncode == 0
    assert log_urls(run)[0] == "https://ci.example.org/job/7/bookworm-6.1/upstream/build.log"
    monkeypatch.setenv("TAINTPORT_ARTIFACTS_URL", "https://env.example.org/x")
    assert within(60, "report", run, tmp_path=tmp_path).returncode == 0
    assert log_urls(run)[0] == "https://env.example.org/x/bookworm-6.1/upstream/build.log"


def test_report_makes_file_urls_of_a_folder_published_nowhere(tmp_path, taintport):
    assert "TAINTPORT_ARTIFACTS_URL" not in os.environ
    run = edited(tmp_path, lambda doc: doc.pop("kcidb"))
    assert taintport("report", run).returncode == 0
    assert log_urls(run)[0] == (run / "bookworm-6.1/upstream/build.log").resolve().as_uri()
    moved = run.rename(tmp_path / "moved")
    assert taintport("report", moved).returncode == 0
    assert log_urls(moved)[0] == (moved / "bookworm-6.1/upstream/build.log").resolve().as_uri()


@pytest.mark.parametrize("url", ["https://user:s3cret@ci.example.org/job/7/",
                                 "https://s3cret@ci.example.org/", "http://:s3cret@h/"])
def test_an_artifacts_url_with_credentials_is_refused_and_not_repeated(tmp_path, url, taintport):
    run = edited(tmp_path, lambda doc: None)
    before = listing(run)
    for args in (("report", run), ("report", "kcidb", run),
                 ("report", "merge", run, "--out", tmp_path / "merged")):
        proc = taintport(*args, "--artifacts-url", url)
        refused(proc, "--artifacts-url: ", "holds a user name or password", "***@")
        assert "s3cret" not in proc.stderr + proc.stdout
        assert listing(run) == before, args
    assert not (tmp_path / "merged").exists()
    # a folder whose view was published with them: named, not copied on
    text = (run / "matrix.json").read_text().replace(FIXTURE_BASE,
                                                     url.rstrip("/") + "/fixtures/")
    (run / "matrix.json").write_text(text)
    before = listing(run)
    proc = taintport("report", run)
    refused(proc, "matrix.json: kcidb.builds[].log_url: ", "holds a user name or password")
    assert "s3cret" not in proc.stderr and listing(run) == before


def test_a_view_under_two_bases_is_refused(tmp_path, taintport):
    run = edited(tmp_path, lambda doc: doc["kcidb"]["builds"][1].update(
        log_url="https://other.example.org/" + doc["cells"][1]["logs"]["build"]))
    refused(taintport("report", run), "log URLs under 2 different bases")
    assert taintport("report", run, "--artifacts-url", "https://x.example.org/").returncode == 0


# 7. merge's --out: new or empty, none of the inputs, one writer

def test_merge_refuses_an_out_that_holds_another_run(tmp_path, taintport):
    out = tmp_path / "other"
    shutil.copytree(TRIXIE, out)
    before = listing(out)
    refused(taintport("report", "merge", BOOKWORM, "--out", out), "already holds results")
    assert listing(out) == before


@pytest.mark.parametrize("where", ["an input", "inside an input"])
def test_merge_refuses_an_out_that_is_an_input(tmp_path, where, taintport):
    job = edited(tmp_path, lambda doc: None, name="job")
    out = job if where == "an input" else job / "bookworm-6.1" / "merged"
    before = listing(job)
    refused(taintport("report", "merge", job, TRIXIE, "--out", out), f"--out {out}",
            "is merged from it")
    assert listing(job) == before


def test_merge_waits_for_no_one_and_refuses_a_held_out(tmp_path, taintport):
    out = tmp_path / "merged"
    out.mkdir()
    with open(out / folder.LOCK, "a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        lock.write("pid 4242\n")
        lock.flush()
        refused(taintport("report", "merge", BOOKWORM, "--out", out),
                "pid 4242 is writing this results folder")
    assert [p.name for p in out.iterdir()] == [folder.LOCK]


def test_two_merges_into_one_out_lose_no_cell(tmp_path):
    """Started together: one merge writes the folder, whole; the other is
    refused (the lock, or the results it finds there), never half-merged."""
    out = tmp_path / "merged"
    env = dict(os.environ, TAINTPORT_CACHE=str(tmp_path / "cache"))
    command = [sys.executable, str(REPO / "tools" / "taintport"), "report", "merge",
               str(BOOKWORM), "--out", str(out)]
    for attempt in range(4):
        shutil.rmtree(out, ignore_errors=True)
        procs = [subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True, env=env) for _ in range(2)]
        ended = [(p.wait(120), p.stderr.read()) for p in procs]
        assert sorted(code for code, _ in ended) == [0, 2], ended
        loser = next(err for code, err in ended if code == 2)
        assert "Traceback" not in loser and ("is writing this results folder" in loser
                                             or "already holds results" in loser)
        merged = folder.load_matrix(out)
        assert [c.where for c in merged.cells] == \
            [c.where for c in folder.load_matrix(BOOKWORM).cells]


# 7b. killed at a rename: a rerun finishes the job, and nothing is half-written

def under_strace(tmp_path, kill_at, *args):
    """tools/taintport with SIGKILL injected at its kill_at-th rename(2) (none:
    None), and the count of renames it made."""
    env = dict(os.environ, TAINTPORT_CACHE=str(tmp_path / "cache"))
    trace = tmp_path / "strace.out"
    inject = ["-e", f"inject=rename:signal=KILL:when={kill_at}"] if kill_at else []
    proc = subprocess.run(["strace", "-f", "-qq", "-o", str(trace), "-e", "trace=rename",
                           *inject, sys.executable, str(REPO / "tools" / "taintport"),
                           *map(str, args)], capture_output=True, text=True, timeout=120,
                          env=env)
    return proc, trace.read_text().count("rename(")


def kill_points(count):
    return sorted({1, 2, count // 4, count // 2, 3 * count // 4, count - 1, count} - {0})


def temps(folder_):
    return [p for p in Path(folder_).rglob("*") if atomic.target_of(p.name)]


@pytest.mark.skipif(shutil.which("strace") is None, reason="needs strace (tools/install-deps)")
def test_a_report_killed_at_a_rename_leaves_temps_a_rerun_removes(tmp_path):
    run = edited(tmp_path, lambda doc: None)
    _, count = under_strace(tmp_path, None, "report", run)
    assert count >= 4, "matrix.json and three reports, at least"
    left = 0
    for kill_at in kill_points(count):
        proc, _ = under_strace(tmp_path, kill_at, "report", run)
        assert proc.returncode != 0
        left += len(temps(run))
        folder.load_matrix(run)  # each file is the old one or the new one, whole
    assert left, "SIGKILL at a rename leaves its temp file"
    proc, _ = under_strace(tmp_path, None, "report", run)
    assert proc.returncode == 0 and not temps(run)


@pytest.mark.skipif(shutil.which("strace") is None, reason="needs strace (tools/install-deps)")
def test_a_merge_killed_at_any_rename_leaves_no_half_out(tmp_path):
    """A killed merge left --out with 18 files and no matrix.json: now the
    merge is made beside it and renamed into place, and a rerun cleans up."""
    out = tmp_path / "ci" / "merged"
    whole = tmp_path / "whole"
    proc, count = under_strace(tmp_path, None, "report", "merge", BOOKWORM, "--out", whole)
    assert proc.returncode == 0 and count > 20
    expected = sorted(str(p.relative_to(whole)) for p in whole.rglob("*"))
    for kill_at in kill_points(count):
        proc, _ = under_strace(tmp_path, kill_at, "report", "merge", BOOKWORM, "--out", out)
        assert proc.returncode != 0, kill_at
        if kill_at < count:
            assert not out.exists(), f"killed at rename {kill_at} of {count}"
        else:
            assert not out.exists() or folder.load_matrix(out).cells
            shutil.rmtree(out, ignore_errors=True)
    assert any(p.name.startswith(".merged.taintport-merge-") for p in out.parent.iterdir())
    proc, _ = under_strace(tmp_path, None, "report", "merge", BOOKWORM, "--out", out)
    assert proc.returncode == 0, proc.stderr
    assert sorted(str(p.relative_to(out)) for p in out.rglob("*")) == expected
    assert [p.name for p in out.parent.iterdir() if p.name != out.name] == [cache.SCRATCH_LOCK]
    assert stat.S_IMODE(out.stat().st_mode) == 0o777 & ~cache.UMASK


@pytest.mark.parametrize("name", [".", ".."])
def test_merge_refuses_an_out_it_cannot_rename_into_place(tmp_path, name):
    cwd = tmp_path / "empty" / "here"
    cwd.mkdir(parents=True)
    proc = subprocess.run([sys.executable, str(REPO / "tools" / "taintport"), "report", "merge",
                           str(BOOKWORM), "--out", name], capture_output=True, text=True,
                          cwd=cwd, timeout=120,
                          env=dict(os.environ, TAINTPORT_CACHE=str(tmp_path / "cache")))
    refused(proc, f"--out {name}: name the folder itself")
    assert not list(cwd.iterdir()) and sorted(p.name for p in cwd.parent.iterdir()) == ["here"]


def test_report_refuses_a_folder_a_run_is_writing(tmp_path, taintport):
    run = edited(tmp_path, lambda doc: None)
    with open(run / folder.LOCK, "a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        lock.write("pid 4242\n")
        lock.flush()
        before = listing(run)
        refused(taintport("report", run), "pid 4242 is writing this results folder")
        assert listing(run) == before


# 8. a write the disk refuses: a clear error, and nothing lost

@pytest.fixture
def small_disk(tmp_path):
    """A real 8 MiB tmpfs (make check runs as root), unmounted afterwards."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    disk = tmp_path / "disk"
    disk.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(disk)], check=True)
    yield disk
    subprocess.run(["umount", str(disk)], check=True)


def fill(disk):
    """Every byte of the file system taken."""
    with open(disk / "filler", "wb", buffering=0) as filler:
        try:
            while True:
                filler.write(b"\0" * 4096)
        except OSError as err:
            assert err.errno == errno.ENOSPC


def contents(folder_):
    return {str(p.relative_to(folder_)): p.read_bytes() for p in Path(folder_).rglob("*")
            if p.is_file()}


def test_report_on_a_full_disk_is_a_clear_error_and_loses_nothing(small_disk, taintport):
    run = small_disk / "run"
    shutil.copytree(BOOKWORM, run)
    assert taintport("report", run).returncode == 0
    (run / "junit.xml").write_text("the reports of before\n")
    before = contents(run)
    fill(small_disk)
    proc = taintport("report", run)
    refused(proc, "cannot write: No space left on device", "is as it was")
    assert contents(run) == before, "every file as it was, no temporary file left"


def test_merge_onto_a_full_disk_leaves_its_out_empty(small_disk, taintport):
    out = small_disk / "merged"
    fill(small_disk)
    proc = taintport("report", "merge", BOOKWORM, "--out", out)
    refused(proc, "No space left on device")
    assert not out.exists() or [p.name for p in out.iterdir()] == [folder.LOCK]


def test_a_file_written_whole_has_the_users_mode_and_nothing_beside(tmp_path, monkeypatch):
    """cache.write_atomic is atomic.replace_file with the user's umask (read
    once at import): a results file others may read, not journal's 0644 for a
    tree's files nor mkstemp's 0600."""
    monkeypatch.setattr(cache, "UMASK", 0o002)
    target = tmp_path / "run" / "matrix.json"
    cache.write_atomic(target, "one\n")
    cache.write_atomic(target, "two\n")
    assert target.read_text() == "two\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o664
    assert [p.name for p in target.parent.iterdir()] == ["matrix.json"]


def test_a_read_only_folder_is_a_clear_error(small_disk, taintport):
    run = small_disk / "run"
    shutil.copytree(BOOKWORM, run)
    before = contents(run)
    subprocess.run(["mount", "-o", "remount,ro", str(small_disk)], check=True)
    refused(taintport("report", run), f"{run}: cannot hold the results folder: "
            "Read-only file system")
    refused(taintport("report", "merge", BOOKWORM, "--out", small_disk / "merged"),
            f"{small_disk}: cannot make the merge beside --out merged: Read-only file system")
    assert contents(run) == before


# 9. report compare fails on a cell that got worse

def compared(tmp_path, taintport, old_edit, new_edit, source=BOOKWORM):
    def with_exit(edit):
        def apply(doc):
            edit(doc)
            doc["exit_code"] = exit_code_of(doc)
        return apply
    old = edited(tmp_path, with_exit(old_edit), source=source, name="old")
    new = edited(tmp_path, with_exit(new_edit), source=source, name="new")
    return taintport("report", "compare", old, new)


def status_of(variant, status):
    def edit(doc):
        cell = next(c for c in doc["cells"] if c["variant"] == variant)
        cell["status"] = status
        cell["errors"] = ["broke"] if status == "error" else []
    return edit


def without(variant):
    def edit(doc):
        doc["cells"] = [c for c in doc["cells"] if c["variant"] != variant]
    return edit


def unchanged(doc):
    pass


@pytest.mark.parametrize("old, new, code", [
    (unchanged, unchanged, 0),
    (unchanged, without("reverted"), 1),                          # went missing
    (without("reverted"), unchanged, 0),                          # a new sound cell
    (status_of("reverted", "unexpected"), status_of("reverted", "error"), 1),
    (status_of("reverted", "error"), status_of("reverted", "unexpected"), 1),
    (without("reverted"), status_of("reverted", "unexpected"), 1),  # new, and unexpected
    (status_of("reverted", "error"), unchanged, 0),               # a fix
    (unchanged, status_of("upstream", "as-expected"), 0),          # known-bug -> as-expected
], ids=["same", "missing", "added", "unexpected-error", "error-unexpected", "added-unexpected",
        "fixed", "known-bug-fixed"])
def test_compare_fails_when_a_cell_got_worse(tmp_path, taintport, old, new, code):
    proc = compared(tmp_path, taintport, old, new)
    assert proc.returncode == code, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
