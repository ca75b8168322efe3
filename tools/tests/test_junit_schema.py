# SPDX-License-Identifier: GPL-2.0
"""JUnit that Jenkins' xunit plugin (junit-10.xsd) accepts: every junit.xml
taintport writes validates with xmllint against schemas/junit-10.xsd, and
keeps what GitLab's and GitHub's test views read."""
import copy
import dataclasses
import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from consumer_checks import JUNIT_XSD, junit_problems
from taintport.judge import ktap, verdict
from taintport.judge.verdict import Status
from taintport.results import folder, render
from taintport.results.cells import Matrix, Timings
from taintport.results.reports import junit
from taintport.tree.variants import named

RESULTS = Path(__file__).parent / "data" / "results"
FIXTURES = [RESULTS / "bookworm-6.1", RESULTS / "trixie-6.12"]


def written(tmp_path, doc, name="junit.xml"):
    path = tmp_path / name
    path.write_text(junit.render(doc))
    return path


def test_the_schema_refuses_what_the_xunit_plugin_refuses(tmp_path):
    """The checks the schema makes really run (so the tests below can fail):
    "skipped" on <testsuites> (what taintport wrote before), a suite without
    its counts, a case without a name, text where a time goes."""
    assert subprocess.run(["xmllint", "--noout", str(JUNIT_XSD)]).returncode == 0
    good = ('<testsuites name="t" tests="1" failures="0" errors="0" time="1.50">'
            '<testsuite name="s" tests="1" failures="0" errors="0" skipped="0" time="1.50" '
            'timestamp="2026-12-03T10:00:00"><properties><property name="a" value="b"/>'
            '</properties><testcase classname="s" name="c" time="0.00"><skipped message="m"/>'
            '</testcase></testsuite></testsuites>')
    path = tmp_path / "good.xml"
    path.write_text(good)
    assert junit_problems(path) == []
    for old, new in [('<testsuites name="t"', '<testsuites name="t" skipped="0"'),
                     (' errors="0" skipped="0"', ' skipped="0"'),
                     ('name="c" ', ""), ('time="1.50">', 'time="soon">')]:
        path.write_text(good.replace(old, new, 1))
        assert junit_problems(path), (old, new)


@pytest.mark.parametrize("results", FIXTURES, ids=lambda f: f.name)
def test_every_fixtures_junit_validates(results, tmp_path):
    """junit.xml as `taintport report DIR` writes it for each committed
    fixture: known bugs, an error cell with missing checks, an unexpected
    cell with failures, a merged document."""
    out = tmp_path / results.name
    shutil.copytree(results, out)
    render.publish(out, folder.load_matrix(out))
    assert junit_problems(out / "junit.xml") == []
    root = ET.parse(out / "junit.xml").getroot()
    assert root.get("skipped") is None
    # what GitLab's test report and GitHub's JUnit actions read stays
    suites = root.findall("testsuite")
    assert all(s.get(k) is not None for s in suites for k in ("tests", "failures", "errors",
                                                              "skipped", "time"))
    assert sum(int(s.get("tests")) for s in suites) == int(root.get("tests"))


def test_the_merged_ci_junit_validates(tmp_path, taintport):
    proc = taintport("report", "merge", *FIXTURES, "--out", tmp_path / "merged")
    assert proc.returncode == 2
    assert junit_problems(tmp_path / "merged" / "junit.xml") == []


def test_skips_control_characters_and_a_cell_that_never_booted_validate(tmp_path):
    doc = folder.load_matrix(FIXTURES[0])
    upstream = doc.cells[0]
    ktap_text = ("KTAP version 1\n1..1\n    KTAP version 1\n    # Subtest: signed\n"
                 "    1..1\n    ok 1 loads # SKIP no tracefs\nok 1 signed # SKIP\n"
                 "# taintport-agent: end status=0\n")
    judged = verdict.judge(ktap.parse(ktap_text), {"signed.loads": True})
    skipped = dataclasses.replace(upstream, status=judged.status, checks=judged.checks,
                                  errors=judged.errors + ["\x1b[31m\x00 colour \ud800"])
    never = dataclasses.replace(upstream, variant=named("reverted"), status=Status.ERROR, checks=[],
                                errors=["fetch: 404"], timings=Timings(), inputs=None,
                                kernel_release=None, accelerator=None)
    path = written(tmp_path, Matrix(cells=[skipped, never]))
    assert junit_problems(path) == []
    suite = ET.parse(path).getroot().find("testsuite")
    assert suite.get("skipped") == "1"


def test_empty_document_validates(tmp_path):
    assert junit_problems(written(tmp_path, Matrix(cells=[]))) == []


def test_hand_edited_names_stay_valid(tmp_path):
    doc = copy.deepcopy(folder.load_matrix(FIXTURES[1]))
    doc.cells[0].checks[0] = dataclasses.replace(doc.cells[0].checks[0], name="a\x07b")
    assert junit_problems(written(tmp_path, doc)) == []
