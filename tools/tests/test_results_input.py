"""Results folders are input: hostile or damaged ones are refused, exit 2, nothing written.

Each test copies a fixture results folder (data/results/), edits it the way
an attacker's CI job or a crash would, and runs the real command on it.
docs/faults.md ("Results folders") maps each case here.
"""
import io
import json
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from taintport.cache import Cache
from taintport.judge import verdict
from taintport.results import folder, report, schema
from taintport.run import matrix, sources
from taintport.tree import series, variants, versions

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
    run = damaged(tmp_path, how)
    before = listing(run)
    refused(taintport("report", run), f"{run}/matrix.json", field)
    refused(taintport("report", "compare", BOOKWORM, run), "matrix.json", field)
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
