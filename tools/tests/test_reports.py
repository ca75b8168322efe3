# SPDX-License-Identifier: GPL-2.0
"""The reports rendered from matrix.json: KCIDB view, junit.xml, summary.md,
index.html (also in headless Chromium), and report compare / merge.

Fixtures under data/results/ are results folders of real runs, made by the
regenerate script there (its README says which run made which cell):
bookworm-6.1 with the default variants (upstream and Debian's binary a known
bug, the others as expected), and trixie-6.12, merged from three runs: upstream as expected,
reverted an error (a panic fault run: the KTAP cut short after its plan) and
backported unexpected (a layer that restores the taint letter but not
tracing's acceptance of it).
"""
import copy
import dataclasses
import datetime
import hashlib
import io
import json
import re
import shutil
import subprocess
import textwrap
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path

import pytest

from taintport.errors import InputError
from taintport.judge import ktap, verdict
from taintport.judge import selftests as selftests_judge
from taintport.judge.verdict import FixState, Status
from taintport.results import compare, folder, render, report
from taintport.results.cells import Matrix, Timings
from taintport.results.reports import htmlpage, junit, kcidb, summary
from taintport.tree.variants import named

REPO = Path(__file__).resolve().parents[2]
RESULTS = Path(__file__).parent / "data" / "results"
BOOKWORM = RESULTS / "bookworm-6.1"
TRIXIE = RESULTS / "trixie-6.12"
CHROMIUM = Path("/usr/bin/chromium")
MARKUP = "<script>alert(1)</script>"

# Properties each object may have in KCIDB I/O schema v4.3 (kcidb-io,
# kcidb_io/schema/v04_03.py: "additionalProperties": False), and the required ones.
KCIDB_FIELDS = {
    "checkouts": ({"id", "origin", "tree_name", "git_repository_url", "git_commit_hash",
                   "git_commit_name", "git_repository_branch", "patchset_files",
                   "patchset_hash", "message_id", "comment", "start_time", "contacts",
                   "log_url", "log_excerpt", "valid", "misc"}, {"id", "origin"}),
    "builds": ({"checkout_id", "id", "origin", "comment", "start_time", "duration",
                "architecture", "command", "compiler", "input_files", "output_files",
                "config_name", "config_url", "log_url", "log_excerpt", "valid", "misc"},
               {"checkout_id", "id", "origin"}),
    "tests": ({"build_id", "id", "origin", "environment", "path", "comment", "log_url",
               "log_excerpt", "status", "waived", "start_time", "duration", "output_files",
               "misc"}, {"build_id", "id", "origin"}),
}
KCIDB_STATUSES = {"FAIL", "ERROR", "MISS", "PASS", "DONE", "SKIP"}
# where a CI job published its results folder (GitLab: $CI_JOB_URL/artifacts/raw/...)
BASE = "https://ci.example.org/jobs/7/artifacts/raw/results/bookworm-6.1"
WHERE = kcidb.Artifacts(BASE)


@pytest.fixture
def bookworm():
    return folder.load_matrix(BOOKWORM)


@pytest.fixture
def trixie():
    return folder.load_matrix(TRIXIE)


def cell(doc, variant):
    return next(c for c in doc.cells if c.variant.name == variant)


def nulls(obj, where=""):
    if obj is None:
        return [where]
    if isinstance(obj, dict):
        return [n for k, v in obj.items() for n in nulls(v, f"{where}.{k}")]
    if isinstance(obj, list):
        return [n for i, v in enumerate(obj) for n in nulls(v, f"{where}[{i}]")]
    return []


# the fixtures: real runs, read back by the runner's own reader

@pytest.mark.parametrize("results", [BOOKWORM, TRIXIE], ids=lambda f: f.name)
def test_fixture_folders_load_as_the_runner_reads_results(results):
    """matrix.json through folder.load_matrix (what `report` and `merge`
    read), each cell.json through folder.earlier_cells (what --resume
    reads): the same cells, every file they name present."""
    doc = folder.load_matrix(results)
    assert doc.cells, "a results folder with cells"
    assert folder.earlier_cells(results) == {c.where: c for c in doc.cells}
    for c in doc.cells:
        for path in (c.logs.build, c.logs.console, c.logs.ktap):
            assert (results / path).is_file(), path


def test_fixtures_hold_no_path_of_the_machine_that_made_them():
    texts = [p.read_text() for p in RESULTS.rglob("*") if p.is_file() and p.name != "regenerate"]
    assert not [t for t in texts if str(REPO) in t or str(Path.home()) + "/" in t]
    cut = (BOOKWORM / "bookworm-6.1" / "upstream" / "build.log").read_text().splitlines()
    assert re.fullmatch(r"\[regenerate: the first \d+ of \d+ lines left out; .*\]", cut[0])
    assert len(cut) == 31, "the cut line and the build's last 30 lines"


def sample_table(doc):
    """The table a run prints at its end (report.table), indented as README.md shows it."""
    text = io.StringIO()
    report.table(doc.cells, text)
    return textwrap.indent(text.getvalue(), "    ")


def test_readme_sample_is_the_bookworm_run(bookworm):
    """README.md's "Reading a report" is the bookworm-6.1 fixture's table,
    printed by the code the runner prints it with (data/results/regenerate
    rewrites it)."""
    sample = sample_table(bookworm)
    assert re.match(r"    version +variant +status +boot +detail\n", sample)
    assert len(sample.splitlines()) == 1 + len(bookworm.cells) + 2, "header, cells, counts"
    assert sample in (REPO / "README.md").read_text()


# KCIDB

def test_kcidb_objects_use_only_schema_fields(trixie):
    doc = kcidb.report(trixie, WHERE)
    assert doc["version"] == {"major": 4, "minor": 3}
    for kind, (allowed, required) in KCIDB_FIELDS.items():
        for obj in doc[kind]:
            assert set(obj) <= allowed, (kind, set(obj) - allowed)
            assert required <= set(obj), (kind, required - set(obj))
            assert obj["id"].startswith("taintport:")
    assert nulls(doc) == [], "KCIDB allows no null property"
    for test in doc["tests"]:
        assert test["status"] in KCIDB_STATUSES
        assert re.fullmatch(r"[.a-zA-Z0-9_-]*", test["path"])
        assert len(test.get("log_excerpt", "")) <= kcidb.EXCERPT_MAX


def test_kcidb_one_checkout_per_version_one_build_per_cell(bookworm):
    doc = kcidb.report(bookworm, WHERE)
    assert [c["tree_name"] for c in doc["checkouts"]] == ["bookworm-6.1"]
    assert [b["id"] for b in doc["builds"]] == [
        "taintport:bookworm-6.1:upstream", "taintport:bookworm-6.1:shipped",
        "taintport:bookworm-6.1:reverted", "taintport:bookworm-6.1:backported",
        "taintport:bookworm-6.1:patched"]
    # a verdict per cell and a test per check: 109 from the agent's and the
    # selftests' boots (the shipped cell's 10 skips too), and the host's check
    # of shipped (agrees with upstream), backported and patched (byte-identical
    # sources)
    assert len(doc["tests"]) == 5 + 109 + 110 + 109 + 110 + 110
    build = doc["builds"][0]
    assert build["architecture"] == "x86_64"
    assert build["compiler"] == bookworm.tools["gcc"]
    assert build["config_name"] == "tinyconfig+base+livepatch+selftests+bookworm-6.1"
    assert build["valid"] is True
    assert build["log_url"] == f"{BASE}/bookworm-6.1/upstream/build.log"
    assert build["duration"] == cell(bookworm, "upstream").timings.build


def test_kcidb_patchset_is_the_versions_series(bookworm):
    checkout = kcidb.report(bookworm, WHERE)["checkouts"][0]
    series = cell(bookworm, "backported").inputs.series
    assert [f["url"] for f in checkout["patchset_files"]] == [
        f"{BASE}/bookworm-6.1/patches/{p}" for p in series]
    assert all("/" not in f["name"] for f in checkout["patchset_files"])
    # `sha256sum *.patch | cut -c-64 | sha256sum`, as the schema defines it
    listing = "".join(d + "\n" for d in series.values())
    assert checkout["patchset_hash"] == hashlib.sha256(listing.encode()).hexdigest()
    assert checkout["valid"] is True
    assert checkout["comment"] == "linux-source-6.1 6.1.192-3"


def test_kcidb_checkout_is_valid_when_every_tree_was_patched(bookworm):
    """A cell that took another's build and boot (patched, C sources byte-identical)
    built nothing itself, but its tree was fetched and patched: the checkout is valid."""
    backported = cell(bookworm, "backported")
    reusing = dataclasses.replace(backported, variant=named("patched"), reused_from=named("backported"),
                                  timings=Timings(fetch=0.1, apply=0.01))
    doc = Matrix(cells=[*bookworm.cells, reusing], tools=bookworm.tools)
    assert kcidb.report(doc, WHERE)["checkouts"][0]["valid"] is True
    unpatched = dataclasses.replace(reusing, timings=Timings(fetch=0.1))
    doc = Matrix(cells=[*bookworm.cells, unpatched], tools=bookworm.tools)
    assert kcidb.report(doc, WHERE)["checkouts"][0]["valid"] is False


def test_kcidb_statuses_keep_kernel_wrong_apart_from_run_wrong(trixie):
    tests = {t["id"]: t for t in kcidb.report(trixie, WHERE)["tests"]}
    unexpected = "taintport:trixie-6.12:backported"
    assert tests[unexpected]["status"] == "FAIL"
    failing = sorted(t["path"] for i, t in tests.items()
                     if i.startswith(unexpected + ":") and t["status"] == "FAIL")
    # the kernel's own trace-event sample is the second witness of the same bug
    assert failing == ["taintport.backported_sources_identical_to_patched",
                       "taintport.sample.trace_events.unsigned_events_present",
                       "taintport.unsigned.event_fires", "taintport.unsigned.events_present",
                       "taintport.unsigned.log_no_bad_taint"]
    broke = "taintport:trixie-6.12:reverted"
    assert tests[broke]["status"] == "ERROR"
    assert "kernel panic" in tests[broke]["log_excerpt"]
    statuses = {t["path"]: t["status"] for i, t in tests.items() if i.startswith(broke + ":")}
    # the selftests are not run after an agent that gave no verdict: a declared skip
    assert statuses.pop("taintport.selftests.livepatch.all") == "SKIP"
    assert list(statuses.values()) == ["MISS"] * 100, "the panic came before the first result"
    assert tests["taintport:trixie-6.12:upstream"]["status"] == "PASS"
    fires = tests[unexpected + ":unsigned.event_fires"]
    assert fires["misc"] == {"expected": "ok", "observed": "not ok", "accelerator": "tcg"}
    assert "no utt_fire line" in fires["log_excerpt"]


def test_kcidb_what_a_broken_run_did_observe_is_error_not_pass(trixie):
    """The trixie upstream cell's observations, had its run broken afterwards:
    ERROR, never PASS or FAIL."""
    broke = dataclasses.replace(cell(trixie, "upstream"), status=Status.ERROR,
                                errors=["no end marker: the KTAP output was cut short"])
    statuses = {kcidb.check_status(broke, c) for c in broke.checks}
    assert statuses == {kcidb.Status.ERROR}


def test_kcidb_log_checks_carry_the_kernel_log_block():
    doc = folder.load_matrix(TRIXIE)
    bad_taint = next(t for t in kcidb.report(doc, WHERE)["tests"]
                     if t["id"] == "taintport:trixie-6.12:backported:unsigned.log_no_bad_taint")
    assert "module has bad taint" in bad_taint["log_excerpt"]


def test_kcidb_build_that_failed_and_fetch_that_failed(bookworm):
    failed = dataclasses.replace(
        cell(bookworm, "upstream"), status=Status.ERROR,
        errors=["build: make failed (exit 2)\nerror: foo.c:1"], checks=[],
        kernel_release=None, accelerator=None, qemu_exit_code=None,
        timings=Timings(fetch=1.0, apply=0.1, build=20.0))
    unfetched = dataclasses.replace(failed, variant=named("reverted"), inputs=None,
                                    timings=Timings(), errors=["fetch: 404"])
    doc = kcidb.report(Matrix(cells=[failed, unfetched], tools={"gcc": "gcc 12"}), WHERE)
    build, never = doc["builds"]
    assert build["valid"] is False and build["duration"] == 20.0
    assert "valid" not in never, "a build that never started is unknown, not invalid"
    assert doc["checkouts"][0]["valid"] is False
    assert [t["status"] for t in doc["tests"]] == ["ERROR", "ERROR"]
    assert "log_url" not in doc["tests"][0], "no boot, no console log"
    assert nulls(doc) == []


def test_a_check_the_agent_skipped_is_skip_and_its_cell_an_error(bookworm):
    """verdict turns a SKIP into no observation and an error of the cell; the
    check itself is KCIDB's SKIP and JUnit's skipped, a cell's status ERROR."""
    ktap_text = ("KTAP version 1\n1..1\n    KTAP version 1\n    # Subtest: signed\n"
                 "    1..1\n    ok 1 loads # SKIP no tracefs\nok 1 signed # SKIP\n"
                 "# taintport-agent: end status=0\n")
    judged = verdict.judge(ktap.parse(ktap_text), {"signed.loads": True})
    assert judged.status is Status.ERROR
    skipped = dataclasses.replace(cell(bookworm, "upstream"), status=judged.status,
                                  checks=judged.checks, errors=judged.errors)
    assert kcidb.check_status(skipped, skipped.checks[0]) is kcidb.Status.SKIP
    assert kcidb.cell_status(skipped) is kcidb.Status.ERROR
    suite = ET.fromstring(junit.render(Matrix(cells=[skipped]))).find("testsuite")
    assert suite.get("skipped") == "1"
    assert suite.find("testcase[@name='signed.loads']/skipped") is not None
    assert "signed.loads (no tracefs)" in summary.render(Matrix(cells=[skipped]))


# junit.xml

def test_junit_one_suite_per_cell_one_case_per_check(trixie):
    root = ET.fromstring(junit.render(trixie))
    suites = {s.get("name"): s for s in root.findall("testsuite")}
    assert list(suites) == ["trixie-6.12.upstream", "trixie-6.12.reverted",
                            "trixie-6.12.backported"]
    for name, suite in suites.items():
        cases = suite.findall("testcase")
        checks = len(cell(trixie, name.rpartition(".")[2]).checks)
        assert len(cases) == checks + 1 and int(suite.get("tests")) == checks + 1, "and a verdict"
        assert {c.get("classname") for c in cases} == {name}
        assert float(suite.get("time")) > 0
    upstream = suites["trixie-6.12.upstream"]
    assert (upstream.get("failures"), upstream.get("errors")) == ("0", "0")
    props = {p.get("name"): p.get("value") for p in upstream.iter("property")}
    assert props["timing.boot"] == f"{cell(trixie, 'upstream').timings.boot:.2f}"
    assert props["kernel_release"] == "6.12.118"

    unexpected = suites["trixie-6.12.backported"]
    assert len(unexpected.findall("testcase")) == 112, "110 guest checks, the host's, the verdict"
    # three of the agent's checks, the sample's, the host's, the verdict
    assert unexpected.get("failures") == "6"
    failure = unexpected.find("testcase[@name='unsigned.events_present']/failure")
    assert failure.get("message") == "expected ok, observed not ok"
    assert "does not exist" in failure.text

    broke = suites["trixie-6.12.reverted"]
    assert broke.get("errors") == "101" and broke.get("failures") == "0"
    assert broke.get("skipped") == "1"  # the selftests, not run after the panic
    error = broke.find("testcase[@name='verdict']/error")
    assert error.get("type") == "ERROR" and "kernel panic" in error.get("message")
    missing = broke.find("testcase[@name='forced.unloads']/error")
    assert missing.get("type") == "MISS" and "not reported" in missing.get("message")
    assert root.get("tests") == "325" and root.get("failures") == "6"


def test_junit_survives_control_characters_in_console_text(trixie):
    doc = copy.deepcopy(trixie)
    cell(doc, "reverted").errors[0] += "\x1b[31m\x00 colour"
    root = ET.fromstring(junit.render(doc))  # parses: no raw control character left
    texts = [e.text or "" for e in root.iter("error")]
    messages = [e.get("message", "") for e in root.iter("error")]
    carried = [t for t in texts + messages if "colour" in t]
    assert carried, "the error text did not reach the JUnit document"
    assert not any("\x00" in t or "\x1b" in t for t in carried)


# summary.md

def test_summary_counts_like_lkft(bookworm, trixie):
    reverted = cell(bookworm, "reverted")
    # the reverted tree fails the 20 expected failures of the three fixes' bugs
    assert summary.counts([reverted]) == summary.Counts(total=109, passed=89, failed=0,
                                                        errors=0, xfail=20)
    # the known bug's 3 expected failures (the livepatch fix bookworm lacks)
    assert summary.counts([cell(bookworm, "upstream")]) == summary.Counts(
        total=109, passed=106, failed=0, errors=0, xfail=3)
    # the panicked cell's selftests: a declared skip, not run after it
    assert summary.counts(trixie.cells) == summary.Counts(
        total=322, passed=216, failed=5, errors=100, skipped=1, xfail=0)
    # Debian's binary cannot load a module signed with our key: 10 declared skips
    assert summary.counts([cell(bookworm, "shipped")]) == summary.Counts(
        total=110, passed=97, failed=0, errors=0, skipped=10, xfail=3)


@pytest.mark.parametrize("results", [BOOKWORM, TRIXIE], ids=lambda f: f.name)
def test_totals_add_up_in_summary_and_page(results):
    """Every check is counted once: pass + fail + error + skip + xfail is the
    total, in summary.md and in index.html's header (the bookworm sample's 9
    declared skips were missing: 367 + 22 of 398)."""
    doc = folder.load_matrix(results)
    counts = summary.counts(doc.cells)
    assert counts.total == sum(len(c.checks) for c in doc.cells)
    assert sum(counts[1:]) == counts.total
    line = re.search(r"^\* (total: .*)$", summary.render(doc), re.M).group(1)
    header = re.search(r'<p class="counts">.*checks: ([^<]*)</p>',
                       htmlpage.render(doc, results, folder.read_log)).group(1)
    for text in (line, header):
        numbers = dict((k, int(v)) for k, v in re.findall(r"(\w+): (\d+)", text))
        assert set(numbers) == {"total", "pass", "fail", "error", "skip", "xfail"}, text
        assert sum(numbers.values()) == 2 * numbers["total"], text


def test_summary_puts_unexpected_and_error_first(trixie):
    text = summary.render(trixie)
    assert text.index("## Build summary") < text.index("## Unexpected and error cells") \
        < text.index("## Cells") < text.index("## Summary")
    attention = text[text.index("## Unexpected"):text.index("## Cells")]
    assert attention.index("backported: UNEXPECTED") < attention.index("reverted: ERROR")
    assert "unsigned.events_present: expected ok, observed not ok" in attention
    assert "Kernel panic - not syncing" in attention
    assert "* total: 322, pass: 216, fail: 5, error: 100, skip: 1, xfail: 0" in text
    assert "trixie-6.12  trixie-security 6.12.118-1  3/3 variants" in text
    assert "exit 2 (the run itself broke)" in text.splitlines()[0]


def test_summary_of_a_clean_run(bookworm):
    text = summary.render(bookworm)
    assert "## Unexpected and error cells\n\nnone\n" in text
    assert "5 cells: 3 as-expected, 2 known-bug, 0 unexpected, 0 error; exit 0" in text


# index.html

class Page(HTMLParser):
    """The parts of the page the tests look at: grid cells, scripts, resources."""

    def __init__(self, text):
        super().__init__()
        self.grid, self.scripts, self.resources, self.texts = [], 0, [], []
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "td" and "data-status" in attrs:
            self.grid.append((attrs["data-version"], attrs["data-variant"],
                              attrs["data-status"]))
        if tag == "script":
            self.scripts += 1
        if tag in ("link", "img", "iframe") or (tag == "script" and "src" in attrs):
            self.resources.append(tag)
        self.resources += [v for k, v in attrs.items()
                           if k in ("src", "href") and v and re.match(r"[a-z]+:", v)]

    def handle_data(self, data):
        self.texts.append(data)


# What a kernel prints for a module argument it does not know (kernel/module/main.c,
# unknown_module_param_cb); the agent loads with no arguments, so the tests put it there.
HOSTILE = f"utt: unknown parameter '{MARKUP}' ignored"


def hostile_copy(tmp_path):
    """The trixie fixture with guest text carrying markup where the page shows
    guest text: a kernel log line the agent reported for the unexpected cell,
    and the last console line of the error cell."""
    hostile = tmp_path / "trixie-hostile"
    shutil.copytree(TRIXIE, hostile)
    doc = json.loads((hostile / "matrix.json").read_text())
    backported = next(c for c in doc["cells"] if c["variant"] == "backported")
    loads = next(c for c in backported["checks"] if c["name"] == "unsigned.loads")
    loads["diagnostics"].append(f"unsigned: dmesg: {HOSTILE}")
    (hostile / "matrix.json").write_text(json.dumps(doc))
    with open(hostile / "trixie-6.12" / "reverted" / "console.log", "a") as console:
        console.write(f"[    9.000000] {HOSTILE}\n")
    return hostile


@pytest.fixture
def merged(tmp_path):
    """The two fixture runs merged into one results folder, reports rendered,
    with markup in the guest's text and in a patch."""
    dirs = [BOOKWORM, hostile_copy(tmp_path)]
    out = tmp_path / "merged"
    doc = compare.merge(dirs)
    folder.copy_logs(dirs, out)
    folder.write_document(out, doc)
    unexpected = next(c for c in doc.cells if c.where == ("trixie-6.12", "backported"))
    first = next(iter(unexpected.inputs.series))
    patches = {"trixie-6.12": {first: "--- a/kernel/tracepoint.c\n+++ b/kernel/tracepoint.c\n"
                               "@@ -1 +1 @@\n-\treturn mod->taints & ~(1 << TAINT_OOT_MODULE);\n"
                               f"+\treturn 0; /* {MARKUP} */\n"}}
    render.publish(out, doc, patches)
    return out


def test_html_is_one_self_contained_escaped_file(merged):
    text = (merged / "index.html").read_text()
    page = Page(text)
    assert page.grid == [("bookworm-6.1", "upstream", "known-bug"),
                         ("bookworm-6.1", "shipped", "known-bug"),
                         ("bookworm-6.1", "reverted", "as-expected"),
                         ("bookworm-6.1", "backported", "as-expected"),
                         ("bookworm-6.1", "patched", "as-expected"),
                         ("trixie-6.12", "upstream", "as-expected"),
                         ("trixie-6.12", "reverted", "error"),
                         ("trixie-6.12", "backported", "unexpected")]
    assert page.scripts == 1, "only the page's own inline script"
    assert page.resources == [], "no external resource, no network"
    assert MARKUP not in text
    assert html_escaped(MARKUP) in text
    joined = "".join(page.texts)
    assert joined.count(HOSTILE) == 2, "kernel log and console tail show the markup as text"
    assert "Kernel panic - not syncing: sysrq triggered crash" in joined
    assert "return 0; /* " + MARKUP in joined, "patch text shown, escaped"


def html_escaped(text):
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def test_html_cells_that_need_a_human_come_first_and_open(merged):
    text = (merged / "index.html").read_text()
    order = [m.group(1) for m in re.finditer(r'<details class="cell [^"]*" id="([^"]+)"', text)]
    assert order[:2] == ["cell-trixie-6.12-backported", "cell-trixie-6.12-reverted"]
    assert re.search(r'id="cell-trixie-6.12-reverted" open>', text)
    assert re.search(r'id="cell-bookworm-6.1-upstream">', text), "clean cells stay closed"


class FixTable(HTMLParser):
    """The "Fixes of the family" table: {(fix, variant): (class, text)}."""

    def __init__(self, text):
        super().__init__()
        self.states, self.at = {}, None
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "td" and "data-fix" in attrs:
            self.at = (attrs["data-fix"], attrs["data-variant"])
            self.states[self.at] = (attrs["class"], "")

    def handle_data(self, data):
        if self.at:
            self.states[self.at] = (self.states[self.at][0], self.states[self.at][1] + data)

    def handle_endtag(self, tag):
        if tag == "td":
            self.at = None


def test_html_fix_table_is_green_only_where_the_checks_passed(trixie, bookworm):
    """trixie's backported cell carries every fix but is unexpected
    (unsigned.events_present not ok): its unsigned column is no green
    "carried"; its test and livepatch columns, whose checks passed, are. The reverted
    cell broke: neither state is shown. The table's text is padded."""
    states = FixTable(htmlpage.render(trixie, TRIXIE, folder.read_log)).states
    assert states[("unsigned", "backported")] == ("fix-contradicted",
                                                  "carried, but 4 of its checks failed")
    assert states[("livepatch", "backported")] == ("fix-carried", "carried")
    assert states[("test", "backported")] == ("fix-carried", "carried")
    assert states[("unsigned", "upstream")] == ("fix-present", "present")
    assert states[("unsigned", "reverted")] == ("fix-unknown", "reconstructed, not shown")
    assert re.search(r"trixie-6.12\s+unsigned\s+present\s+reconstructed, not shown\s+"
                     r"carried, but 4 of its checks failed\n", summary.render(trixie))
    # what a run that broke afterwards observed is not trusted, even all ok
    broke = dataclasses.replace(cell(trixie, "upstream"), status=Status.ERROR,
                                errors=["no end marker: the KTAP output was cut short"])
    states = FixTable(htmlpage.render(Matrix(cells=[broke]), TRIXIE, folder.read_log)).states
    assert set(states.values()) == {("fix-unknown", "present, not shown")}
    green = {k for k, (cls, _) in FixTable(htmlpage.render(
        bookworm, BOOKWORM, folder.read_log)).states.items() if cls in ("fix-carried",
                                                                         "fix-present")}
    # unsigned and test where the tree has them (4 each), livepatch where it is carried (2)
    assert len(green) == 10, "bookworm: every fixed tree showed its fix"
    padding = re.search(r"\.grid\.fixes th, \.grid\.fixes td \{ padding: (\d+)px", htmlpage.CSS)
    assert padding and int(padding.group(1)) > 0


def test_html_shows_only_patches_with_the_runs_checksum(tmp_path, bookworm):
    quilt = tmp_path / "quilt" / "bookworm-6.1" / "reverted"
    quilt.mkdir(parents=True)
    name = next(iter(cell(bookworm, "reverted").inputs.series))
    text = "Subject: the patch as the run applied it\n---\n"
    for c in bookworm.cells:  # the run recorded this patch's checksum
        if name in c.inputs.series:
            c.inputs.series[name] = hashlib.sha256(text.encode()).hexdigest()
    (tmp_path / "quilt" / "bookworm-6.1" / name).write_text(text)
    assert render.read_patches(bookworm, tmp_path / "quilt") == {"bookworm-6.1": {name: text}}
    (tmp_path / "quilt" / "bookworm-6.1" / name).write_text("changed since the run\n")
    assert render.read_patches(bookworm, tmp_path / "quilt") == {}
    page = htmlpage.render(bookworm, BOOKWORM, folder.read_log, {})
    assert "is not available with the sha256 the run used" in page


def test_render_all_writes_next_to_matrix_json(tmp_path):
    out = tmp_path / "run"
    shutil.copytree(TRIXIE, out)
    written = render.publish(out, folder.load_matrix(out))
    assert sorted(p.name for p in written) == ["index.html", "junit.xml", "summary.md"]
    assert all(p.parent == out and p.stat().st_size > 0 for p in written)
    assert not list(out.glob(".*")), "no temporary files left behind"


def test_load_rejects_what_is_not_a_matrix(tmp_path):
    with pytest.raises(InputError, match="matrix.json: cannot read"):
        folder.load_matrix(tmp_path)
    (tmp_path / "matrix.json").write_text('{"schema": "x"}')
    with pytest.raises(InputError, match=r"matrix.json: cells: missing"):
        folder.load_matrix(tmp_path)


@pytest.mark.skipif(not CHROMIUM.exists(),
                    reason="/usr/bin/chromium absent (apt-get install chromium)")
def test_html_in_headless_chromium(merged, tmp_path):
    url = (merged / "index.html").as_uri()
    common = [str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
              "--no-first-run", "--disable-background-networking",
              "--disable-component-update", "--disable-sync",
              f"--user-data-dir={tmp_path / 'profile'}", "--window-size=1280,900"]
    dom = subprocess.run(common + ["--dump-dom", url], capture_output=True, text=True,
                         timeout=60, check=True).stdout
    page = Page(dom)
    assert ("trixie-6.12", "reverted", "error") in page.grid
    assert ("trixie-6.12", "backported", "unexpected") in page.grid
    assert sum(1 for g in page.grid if g[2] == "as-expected") == 4
    assert page.scripts == 1, "console text did not become a <script> element"
    assert HOSTILE in "".join(page.texts)

    shot = tmp_path / "shot.png"
    subprocess.run(common + [f"--screenshot={shot}", url], capture_output=True,
                   timeout=60, check=True)
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    assert (width, height) == (1280, 900)
    assert len(data) > 20000, "a blank page compresses to almost nothing"


# report compare / merge

def with_statuses(doc, statuses):
    doc = copy.deepcopy(doc)
    for c in doc.cells:
        c.status = Status(statuses[c.variant.name])
    return doc


def test_compare_lists_regressions_then_fixes_then_the_rest(bookworm):
    old = with_statuses(bookworm, {"upstream": "as-expected", "shipped": "known-bug",
                                   "reverted": "unexpected", "backported": "error",
                                   "patched": "known-bug"})
    new = with_statuses(bookworm, {"upstream": "error", "shipped": "known-bug",
                                   "reverted": "as-expected", "backported": "unexpected",
                                   "patched": "known-bug"})
    new.cells.append(dataclasses.replace(new.cells[0], version="trixie-6.12"))
    changes = compare.compare(old, new)
    assert [(c.kind, c.version, c.variant, c.old, c.new) for c in changes] == [
        ("regression", "bookworm-6.1", "upstream", "as-expected", "error"),
        ("fix", "bookworm-6.1", "reverted", "unexpected", "as-expected"),
        ("change", "bookworm-6.1", "backported", "error", "unexpected"),
        ("change", "trixie-6.12", "upstream", None, "error"),
    ]
    assert str(changes[0]).split() == ["regression", "bookworm-6.1", "upstream",
                                       "as-expected", "->", "error"]
    assert compare.compare(bookworm, bookworm) == []


TRIXIE_RUNS = ["upstream", "reverted-fault-panic", "backported-without-mask"]


def test_merge_runs_from_separate_jobs(bookworm, trixie):
    """bookworm-6.1 is one run, trixie-6.12 already a merge of three: each
    source keeps its own start, tools, accelerator and exit code."""
    doc = compare.merge([BOOKWORM, TRIXIE])
    assert [c.where for c in doc.cells] == [c.where for c in bookworm.cells + trixie.cells]
    assert doc.exit_code == 2
    assert compare.merge([BOOKWORM]).exit_code == 0
    assert [r.dir for r in doc.runs] == [str(BOOKWORM)] + TRIXIE_RUNS
    assert doc.runs[0].tools == bookworm.tools
    assert doc.runs[0].accelerator == bookworm.accelerator
    assert doc.runs[1:] == trixie.runs
    assert [r.cells for r in doc.runs[1:]] == [["trixie-6.12/upstream"], ["trixie-6.12/reverted"],
                                               ["trixie-6.12/backported"]]
    assert [r.exit_code for r in doc.runs] == [0, 0, 2, 1]
    assert doc.started == min(bookworm.started, trixie.started)
    assert doc.run_of(cell(trixie, "reverted")) is doc.runs[2]


def test_merge_rejects_a_cell_twice_naming_both_folders(tmp_path):
    again = tmp_path / "bookworm-again"
    shutil.copytree(BOOKWORM, again)
    with pytest.raises(InputError) as err:
        compare.merge([BOOKWORM, again])
    assert str(BOOKWORM) in str(err.value) and str(again) in str(err.value)
    assert "bookworm-6.1 upstream" in str(err.value)


def test_merge_of_merged_keeps_the_sources(tmp_path, merged):
    doc = compare.merge([merged])
    assert [r.dir for r in doc.runs] == [str(BOOKWORM)] + TRIXIE_RUNS


def test_merged_folder_holds_every_log_its_cells_name(merged):
    doc = folder.load_matrix(merged)
    for c in doc.cells:
        for path in (c.logs.build, c.logs.console):
            assert (merged / path).is_file(), path
    assert "trixie-6.12" in (merged / "summary.md").read_text()


def test_a_reused_cell_says_so(bookworm):
    doc = copy.deepcopy(bookworm)
    backported = cell(doc, "backported")
    backported.reused = True
    build, = (b for b in kcidb.report(doc, WHERE)["builds"]
              if b["id"] == "taintport:bookworm-6.1:backported")
    assert build["misc"]["reused"] is True
    assert f"backported {summary.seconds(backported.timings.build)} (reused)" in \
        summary.render(doc)
    page = htmlpage.render(doc, BOOKWORM, folder.read_log)
    assert "inputs unchanged since a stored run" in page


def test_a_known_bug_is_seen_first_everywhere_and_exits_0(bookworm):
    """bookworm-6.1 as Debian ships it lacks the livepatch fix: its upstream
    cell, and Debian's own binary of it."""
    doc = bookworm
    assert cell(doc, "upstream").status is Status.KNOWN_BUG
    assert cell(doc, "shipped").status is Status.KNOWN_BUG
    assert [c.fixes for c in doc.cells] == [
        {"unsigned": FixState.PRESENT, "test": FixState.PRESENT, "livepatch": FixState.MISSING},
        {"unsigned": FixState.PRESENT, "test": FixState.PRESENT, "livepatch": FixState.MISSING},
        {"unsigned": FixState.RECONSTRUCTED, "test": FixState.RECONSTRUCTED,
         "livepatch": FixState.MISSING},
        {"unsigned": FixState.CARRIED, "test": FixState.CARRIED, "livepatch": FixState.CARRIED},
        {"unsigned": FixState.PRESENT, "test": FixState.PRESENT, "livepatch": FixState.CARRIED}]
    text = summary.render(doc)
    assert ("## Known bugs of the kernels as shipped\n\n* bookworm-6.1 upstream (as shipped in "
            "bookworm-security 6.1.192-3): "
            "livepatch module tainted K, its trace events missing (e7bb66f79a7b, v6.3")  in text
    assert re.search(r"fix\s+upstream\s+shipped\s+reverted\s+backported\s+patched\n", text)
    assert re.search(r"bookworm-6.1\s+livepatch\s+missing\s+missing\s+missing\s+carried\s+"
                     r"carried\n", text)
    assert "* bookworm-6.1 shipped (the distribution's binary, linux-image-6.1.0-57-amd64 " \
        "6.1.192-3 from bookworm-security): livepatch module tainted K" in text
    assert "## Unexpected and error cells\n\nnone\n" in text
    assert "known bug as shipped: livepatch fix missing" in text
    assert doc.exit_code == 0
    page = htmlpage.render(doc, BOOKWORM, folder.read_log)
    assert 'class="known"' in page and "livepatch module tainted K" in page
    assert '<td class="known-bug"' in page
    # in the cell's checks, the three that show the bug are marked so
    assert len(re.findall(r'<td class="known" title="livepatch\.\w+: known bug as shipped: '
                          r'livepatch missing \(upstream e7bb66f79a7b\)">not ok</td>', page)) == 6
    assert "3 show the known bug" in page
    assert re.search(r'<td class="fix-missing" data-fix="livepatch" data-variant="upstream" '
                     r'title="[^"]*">missing</td>', page)
    xml = ET.fromstring(junit.render(doc))
    suite = next(s for s in xml if s.get("name") == "bookworm-6.1.upstream")
    props = {p.get("name"): p.get("value") for p in suite.find("properties")}
    assert props["status"] == "known-bug" and props["fix.livepatch"] == "missing"
    test = next(t for t in kcidb.report(doc, WHERE)["tests"]
                if t["id"] == "taintport:bookworm-6.1:upstream")
    assert test["misc"]["fixes"]["livepatch"] == "missing"


LIVEPATCH_BUG = ["livepatch.events_present", "livepatch.event_fires",
                 "livepatch.log_no_bad_taint"]


def test_a_known_bug_is_a_fail_linked_to_its_issue_in_kcidb(bookworm):
    """bookworm-6.1 as shipped lacks livepatch: upstream's and shipped's
    verdicts and the checks that show the bug are FAIL, each linked by a
    present incident to one issue (the fix, the code its culprit, the upstream
    commit its report); the rest of the cells' checks stay PASS (or SKIP)."""
    view = kcidb.report(bookworm, WHERE)
    commit = "e7bb66f79a7b19a47b3eff745ea9f7ba1ae76032"
    issue, = view["issues"]
    assert issue["id"] == "taintport:bookworm-6.1:livepatch"
    # KCIDB triages an issue's highest version: the run's start, a later run's higher
    started = datetime.datetime.fromisoformat(bookworm.started.replace("Z", "+00:00"))
    assert issue["version"] == int(started.timestamp()) > 0
    assert issue["culprit"] == {"code": True, "tool": False, "harness": False}
    assert issue["report_url"] == ("https://git.kernel.org/pub/scm/linux/kernel/git/torvalds/"
                                   f"linux.git/commit/?id={commit}")
    assert issue["test_status"] == "FAIL"
    assert "livepatch module tainted K" in issue["comment"] and "6.1.192-3" in issue["comment"]
    assert issue["misc"]["uploads"] == ["bookworm-security 6.1.192-3"]
    assert issue["misc"]["cells"] == ["upstream", "shipped"]
    tests = {t["id"]: t for t in view["tests"]}
    failing = sorted(i for i, t in tests.items() if t["status"] == "FAIL")
    shown = sorted(f"taintport:bookworm-6.1:{variant}{check}" for variant in ("upstream", "shipped")
                   for check in ["", *(":" + c for c in LIVEPATCH_BUG)])
    assert failing == shown
    linked = {i["test_id"]: i for i in view["incidents"]}
    assert sorted(linked) == shown and len(view["incidents"]) == len(shown)
    assert {(i["issue_id"], i["issue_version"], i["present"]) for i in linked.values()} == \
        {(issue["id"], issue["version"], True)}
    assert not any("waived" in t for t in view["tests"]), "waived is for unreliable tests"
    assert tests["taintport:bookworm-6.1:upstream:livepatch.event_fires"]["comment"] == \
        "livepatch.event_fires: known bug as shipped: livepatch missing (upstream e7bb66f79a7b)"
    assert tests["taintport:bookworm-6.1:reverted:livepatch.event_fires"]["status"] == "PASS", \
        "the negative control's bug is the tree taintport made, no known bug"
    assert bookworm.exit_code == 0


def test_a_known_bugs_issue_names_the_releases_whose_users_have_it(bookworm):
    """A run that recorded where each upload came from: the issue says which
    release's users run the tree, with the upload."""
    doc = copy.deepcopy(bookworm)
    for c in doc.cells:
        c.inputs.release, c.inputs.suite = "bookworm", "bookworm-security"
    issue, = kcidb.report(doc, WHERE)["issues"]
    assert issue["comment"].endswith("livepatch module tainted K, its trace events missing; "
                                     "the users of bookworm (bookworm-security 6.1.192-3) "
                                     "have it")
    assert issue["misc"]["users"] == {"bookworm": ["bookworm-security 6.1.192-3"]}


def test_a_later_run_gives_a_known_bugs_issue_a_higher_version(bookworm):
    later = copy.deepcopy(bookworm)
    started = datetime.datetime.fromisoformat(bookworm.started.replace("Z", "+00:00"))
    later.started = (started + datetime.timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    version = kcidb.report(bookworm, WHERE)["issues"][0]["version"]
    assert kcidb.report(later, WHERE)["issues"][0]["version"] == version + 86400
    for started in (None, "yesterday"):
        later.started = started
        view = kcidb.report(later, WHERE)
        assert view["issues"][0]["version"] == 0
        assert {i["issue_version"] for i in view["incidents"]} == {0}


def test_a_known_bug_is_not_passed_in_junit_and_fails_nothing(bookworm):
    """The same checks in junit.xml: <skipped type="known-bug"> naming the fix,
    so Jenkins and GitLab show them as not passed and no failure marks the
    build unstable; every other case of those suites is as before."""
    root = ET.fromstring(junit.render(bookworm))
    message = "known bug as shipped: livepatch missing (upstream e7bb66f79a7b)"
    for variant in ("upstream", "shipped"):
        suite = root.find(f"testsuite[@name='bookworm-6.1.{variant}']")
        known = [case.get("name") for case in suite.iter("testcase")
                 if case.find(f"skipped[@type='{junit.KNOWN_BUG}']") is not None]
        assert known == ["verdict", *LIVEPATCH_BUG], variant
        assert {s.get("message") for s in suite.iter("skipped")
                if s.get("type") == junit.KNOWN_BUG} == {message}
        assert suite.get("failures") == "0" and suite.get("errors") == "0"
        declared = sum(1 for c in cell(bookworm, variant).checks if c.declared_skip)
        assert suite.get("skipped") == str(1 + len(LIVEPATCH_BUG) + declared)
    assert root.get("failures") == "0" and root.get("errors") == "0"
    reverted = root.find("testsuite[@name='bookworm-6.1.reverted']")
    assert reverted.get("skipped") == "0"


def test_each_missing_fix_has_its_issue_and_links_only_its_checks(bookworm):
    """A tree as shipped that lacks every fix (bookworm's upstream with the
    unsigned and test fixes missing too, its checks as the reverted tree
    showed them): an issue per fix, and each check linked to the fix whose
    xfail names it, or whose check the kernel's own sample witnesses."""
    two = copy.deepcopy(cell(bookworm, "upstream"))
    two.fixes = {fix: FixState.MISSING for fix in two.fixes}
    two.checks = copy.deepcopy(cell(bookworm, "reverted").checks)
    view = kcidb.report(Matrix(cells=[two]), WHERE)
    assert [i["id"] for i in view["issues"]] == [f"taintport:bookworm-6.1:{fix}"
                                                 for fix in two.fixes]
    by_fix = {}
    for incident in view["incidents"]:
        by_fix.setdefault(incident["issue_id"].rpartition(":")[2], []).append(
            incident["test_id"].rpartition(":")[2])
    xfail = verdict.load(tuple(two.fixes)).xfail
    for fix, tests in by_fix.items():
        assert tests[0] == "upstream", "the verdict test shows every missing fix"
        witnessed = {w for w, agent in selftests_judge.WITNESSES.items() if agent in xfail[fix]}
        assert set(tests[1:]) == xfail[fix] | witnessed, fix
        assert witnessed <= set(tests), "the sample's witness goes to its own fix only"


def test_compare_known_bug_to_as_expected_is_a_change_not_a_fix(bookworm):
    fixed = with_statuses(bookworm, {"upstream": "as-expected", "shipped": "known-bug",
                                     "reverted": "as-expected", "backported": "as-expected",
                                     "patched": "as-expected"})
    changes = compare.compare(bookworm, fixed)
    assert [(c.variant, c.kind) for c in changes] == [("upstream", "change")]

