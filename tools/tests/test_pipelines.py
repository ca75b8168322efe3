# SPDX-License-Identifier: GPL-2.0
"""The generated GitLab pipeline run for real with gitlab-ci-local, narrowed
to bookworm's 6.1 by its pipeline variable, on the cache the end-to-end test
(test_e2e.py, which runs first) leaves warm: the kernel job reuses its cells.

Each job runs in its own copy of the project (--shell-isolation), so the
report job sees the kernel job's results only as artifacts. Three pipelines:
as the kernels are (exit 0), one cell provoked unexpected (a kernel
regression: the job fails with 1) and one provoked broken (the job exits 2,
allowed to fail; the report job fails). TAINTPORT_TEST_PROVOKE is read by
the test harness (provoke.py), whose tools/taintport the project copy runs;
a provoked cell says so.
"""
import json
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

import provoke
from consumer_checks import junit_problems, kcidb_problems
from taintport import ci
from taintport import REPO

VERSION = "bookworm-6.1"
KERNEL_JOB = f"kernel {VERSION}"
TAINTPORT = [sys.executable, str(REPO / "tools" / "taintport")]

pytestmark = [pytest.mark.e2e, pytest.mark.users_cache]


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    """The working tree as it is (tracked and new files) in a git repository
    of its own: a clean clone of what is being tested."""
    dest = tmp_path_factory.mktemp("project")
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others",
                             "--exclude-standard"], cwd=REPO, capture_output=True,
                            check=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        source = REPO / name
        if source.is_file():  # a deleted, not yet committed file is listed too
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            (dest / name).write_bytes(source.read_bytes())
            (dest / name).chmod(source.stat().st_mode)
    (dest / "tools" / "taintport").write_text(provoke.wrapper())  # the harness's taintport
    git = ["git", "-c", "user.name=taintport", "-c", "user.email=taintport@localhost"]
    for cmd in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "under test"]):
        subprocess.run(git + cmd, cwd=dest, check=True)
    return dest


class Pipeline:
    def __init__(self, project, code, log):
        self.project, self.code, self.log = project, code, log
        # "report   finished in 2.86 s  FAIL 2": each job's own exit code
        self.exits = {m.group(1): int(m.group(3) or 0) for m in re.finditer(
            r"^(\S.*?)\s{2,}finished in [\d.]+ \w+(?:\s+(FAIL|WARN) (\d+))?\s*$", log, re.M)}
        # the closing table: PASS, WARN (allowed to fail) or FAIL per job
        self.verdicts = {m.group(2): m.group(1) for m in re.finditer(
            r"^ (PASS|WARN|FAIL) \s*(.+?)(?:\s+pre_script)?\s*$", log, re.M)}

    def results(self, folder):
        path = self.project / "results" / folder
        doc = json.loads((path / "matrix.json").read_text())
        return path, {c["variant"]: c for c in doc["cells"]}


def run(project, tmp_path, **variables):
    for old in ("results", ".gitlab-ci-local"):
        subprocess.run(["rm", "-rf", str(project / old)], check=True)
    log = tmp_path / "pipeline.log"
    code = ci.run_gitlab(project, {ci.SELECT: VERSION, **variables}, log=log, timeout=600)
    text = log.read_text()
    print(text)
    return Pipeline(project, code, text)


def statuses(cells):
    return {variant: cell["status"] for variant, cell in cells.items()}


def test_pipeline_as_the_kernels_are_matches_a_direct_run(project, tmp_path):
    direct = tmp_path / "direct"
    proc = subprocess.run([*TAINTPORT, "matrix", "--versions", VERSION, "--out", str(direct)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    expected = {c["variant"]: c for c in json.loads((direct / "matrix.json").read_text())["cells"]}

    pipeline = run(project, tmp_path)
    assert pipeline.code == 0
    assert pipeline.verdicts == {KERNEL_JOB: "PASS", "report": "PASS"}, \
        "narrowed to one kernel by the pipeline variable"
    assert pipeline.exits == {KERNEL_JOB: 0, "report": 0}
    # the report job's own copy of the project got the kernel's folder as an artifact
    imported = project / ".gitlab-ci-local" / "builds" / "report" / "results" / VERSION
    assert (imported / "matrix.json").exists()
    assert "[0:00:0" in pipeline.log, "log lines carry the run's elapsed time"

    merged, cells = pipeline.results("merged")
    assert statuses(cells) == statuses(expected)
    assert {v: [c["name"] for c in cell["checks"]] for v, cell in cells.items()} == \
        {v: [c["name"] for c in cell["checks"]] for v, cell in expected.items()}
    for name in ("matrix.json", "junit.xml", "index.html", "summary.md"):
        assert (merged / name).stat().st_size > 0
    cases = ET.parse(merged / "junit.xml").getroot().iter("testcase")
    direct_cases = ET.parse(direct / "junit.xml").getroot().iter("testcase")
    assert sorted(c.get("name") for c in cases) == sorted(c.get("name") for c in direct_cases)
    assert VERSION in (merged / "index.html").read_text()
    # what KernelCI and junit-10.xsd consumers get from the pipeline: the merged
    # view's URLs the report job's artifacts (gitlab-ci-local's CI_JOB_URL), the
    # kernel job's its own
    for folder, job in ((merged, "report"), (project / "results" / VERSION, KERNEL_JOB)):
        view = json.loads((folder / "matrix.json").read_text())["kcidb"]
        assert kcidb_problems(view) == [], folder
        build_log = view["builds"][0]["log_url"]
        assert re.fullmatch(rf"https://\S+/-/jobs/\d+/artifacts/raw/results/{folder.name}/"
                            rf"{VERSION}/upstream/build\.log", build_log), (job, build_log)
        assert junit_problems(folder / "junit.xml") == [], folder


def test_a_kernel_regression_fails_the_kernel_job_with_1(project, tmp_path):
    pipeline = run(project, tmp_path,
                   **{provoke.VARIABLE: f"unexpected:{VERSION}/reverted"})
    assert pipeline.code == 1
    assert pipeline.exits == {KERNEL_JOB: 1, "report": 1}
    assert pipeline.verdicts == {KERNEL_JOB: "FAIL", "report": "FAIL"}
    merged, cells = pipeline.results("merged")
    assert cells["reverted"]["status"] == "unexpected"
    assert cells["reverted"]["checks"][-1]["name"] == "provoked_unexpected"
    assert "test-only" in cells["reverted"]["checks"][-1]["diagnostics"][0]
    assert cells["backported"]["status"] == "as-expected", "only the named cell"
    junit = ET.parse(merged / "junit.xml").getroot()
    failed = [c.get("name") for c in junit.iter("testcase") if c.find("failure") is not None]
    assert any("provoked_unexpected" in name for name in failed)


def test_a_broken_run_exits_2_allowed_to_fail_and_the_report_fails(project, tmp_path):
    pipeline = run(project, tmp_path, **{provoke.VARIABLE: f"error:{VERSION}/upstream"})
    assert pipeline.code == 1, "gitlab-ci-local fails as the report job does"
    assert pipeline.exits == {KERNEL_JOB: 2, "report": 2}
    assert pipeline.verdicts == {KERNEL_JOB: "WARN", "report": "FAIL"}, \
        "a broken run is a warning on its kernel job, never a regression"
    merged, cells = pipeline.results("merged")
    assert cells["upstream"]["status"] == "error"
    assert "test-only" in cells["upstream"]["errors"][-1]
    proc = subprocess.run([*TAINTPORT, "ci", "--annotate", str(merged)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0
    assert proc.stdout.startswith(f"::error title={VERSION} upstream%3A the run broke")
