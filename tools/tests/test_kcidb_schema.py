# SPDX-License-Identifier: GPL-2.0
"""KCIDB that KernelCI can ingest: every KCIDB document taintport writes or
prints validates against KCIDB I/O schema v4.3 (schemas/kcidb-v04_03.json,
rules from kcidb-io) with Debian's python3-jsonschema and its format
checker, as kcidb-io validates a submission: the view stored in each
committed fixture's matrix.json, the view computed from it (file:// and
published URLs), the merged CI view, and `report kcidb DIR`."""
import copy
import hashlib
import json
import shutil
from pathlib import Path

import jsonschema
import pytest

from consumer_checks import KCIDB_SCHEMA, format_checker, kcidb_problems
from taintport.errors import InputError
from taintport.results import compare, folder, render
from taintport.results.reports import kcidb
from taintport.tree import series

RESULTS = Path(__file__).parent / "data" / "results"
FIXTURES = [RESULTS / "bookworm-6.1", RESULTS / "trixie-6.12"]
BASE = "https://gitlab.example.org/kernel/taintport/-/jobs/4711/artifacts/raw/results/merged"


def urls(view):
    """Every URL of a KCIDB document."""
    found = []
    for kind in ("checkouts", "builds", "tests"):
        for obj in view.get(kind, []):
            if "log_url" in obj:
                found.append(obj["log_url"])
            for key in ("patchset_files", "input_files", "output_files"):
                found += [resource["url"] for resource in obj.get(key, [])]
    return found


@pytest.fixture
def no_artifacts_env(monkeypatch):
    monkeypatch.delenv(kcidb.ARTIFACTS_ENV, raising=False)


def test_the_validator_enforces_what_kcidb_io_enforces():
    """The checks the schema relies on really run: a relative URL (what the
    views held before, 415 errors on the bookworm fixture), a null, an
    unknown key, an id without its origin, a bad status and a bad time are
    each refused."""
    assert "uri" in format_checker().checkers
    good = {"version": {"major": 4, "minor": 3},
            "checkouts": [{"id": "taintport:x", "origin": "taintport",
                           "start_time": "2026-12-03T10:00:00Z"}],
            "builds": [{"id": "taintport:x:y", "origin": "taintport",
                        "checkout_id": "taintport:x", "log_url": "file:///r/x/y/build.log"}],
            "tests": [{"id": "taintport:x:y", "origin": "taintport", "build_id": "taintport:x:y",
                       "status": "FAIL", "path": "taintport.a.b"}],
            "issues": [{"id": "taintport:x:fix", "version": 1, "origin": "taintport",
                        "report_url": "https://git.kernel.org/x", "culprit": {"code": True},
                        "test_status": "FAIL"}],
            "incidents": [{"id": "taintport:x:y:fix", "origin": "taintport",
                           "issue_id": "taintport:x:fix", "issue_version": 1,
                           "test_id": "taintport:x:y", "present": True}]}
    assert kcidb_problems(good) == []
    for where, key, value in [("builds", "log_url", "x/y/build.log"),
                              ("issues", "version", -1), ("issues", "report_url", "e7bb66f"),
                              ("issues", "culprit", {"code": True, "kernel": True}),
                              ("issues", "test_status", "KNOWN"),
                              ("incidents", "issue_id", "fix"), ("incidents", "present", "yes"),
                              ("incidents", "waived", True),
                              ("builds", "comment", None), ("builds", "colour", "red"),
                              ("tests", "id", "taintport"), ("tests", "status", "XFAIL"),
                              ("checkouts", "start_time", "2026-12-03 10:00")]:
        bad = copy.deepcopy(good)
        bad[where][0][key] = value
        assert kcidb_problems(bad), (where, key, value)
    assert kcidb_problems({**good, "version": {"major": 5}})
    for where, key in [("issues", "version"), ("incidents", "issue_version")]:
        bad = copy.deepcopy(good)
        del bad[where][0][key]
        assert kcidb_problems(bad), (where, key)
    jsonschema.Draft7Validator.check_schema(json.loads(KCIDB_SCHEMA.read_text()))


@pytest.mark.parametrize("results", FIXTURES, ids=lambda f: f.name)
def test_the_committed_fixtures_kcidb_view_validates(results):
    """What the real runs stored in matrix.json under "kcidb"."""
    view = json.loads((results / "matrix.json").read_text())["kcidb"]
    assert kcidb_problems(view) == []
    assert urls(view) and all(u.startswith("https://") for u in urls(view))


@pytest.mark.parametrize("results", FIXTURES, ids=lambda f: f.name)
def test_a_view_without_a_published_place_links_the_folder(results, tmp_path,
                                                           no_artifacts_env):
    """No --artifacts-url, no variable: file:// URLs of the results folder,
    each leading to the file (the logs, and the patches' copies the reports
    step writes)."""
    out = tmp_path / results.name
    shutil.copytree(results, out)
    doc = folder.load_matrix(out)
    copied = render.read_patches(doc)
    render.publish(out, doc, copied, with_document=True)
    view = json.loads((out / "matrix.json").read_text())["kcidb"]
    assert kcidb_problems(view) == []
    prefix = out.resolve().as_uri() + "/"
    assert all(u.startswith(prefix) for u in urls(view))
    # every log, and every patch quilt/ still holds as the run applied it (the
    # trixie fixture's backported run used a changed copy on purpose; quilt/
    # renamed bookworm's patches when the test fix's took its place in order):
    # a patch left out is one quilt/ no longer holds with the run's digest
    applied = {(cell.version, name): digest for cell in doc.cells
               for name, digest in (cell.inputs.series if cell.inputs else {}).items()}
    linked = set()
    for url in urls(view):
        rel = url[len(prefix):]
        version, _, name = rel.partition("/patches/")
        if name and name not in copied.get(version, {}):
            held = series.QUILT_DIR / version / name
            assert not held.is_file() or \
                hashlib.sha256(held.read_bytes()).hexdigest() != applied[version, name], url
            continue
        if name:
            linked.add((version, name))
        assert (out / rel).is_file(), url
        if name:
            assert (out / rel).read_text() == copied[version][name]
    assert linked == {(v, name) for v, names in copied.items() for name in names}


def test_a_known_bugs_issues_and_incidents_validate():
    """bookworm-6.1 as shipped lacks livepatch: the view's issue and the
    incidents linking its tests meet the schema, each naming a test and an
    issue of the view."""
    view = kcidb.report(folder.load_matrix(FIXTURES[0]), kcidb.Artifacts(BASE))
    assert view["issues"] and view["incidents"]
    assert kcidb_problems(view) == []
    tests, issues = {t["id"] for t in view["tests"]}, {i["id"] for i in view["issues"]}
    assert all(i["test_id"] in tests and i["issue_id"] in issues for i in view["incidents"])
    assert len({i["id"] for i in view["incidents"]}) == len(view["incidents"])


def test_the_variable_a_pipeline_sets_publishes_every_url(tmp_path, monkeypatch):
    monkeypatch.setenv(kcidb.ARTIFACTS_ENV, BASE)
    view = kcidb.report(folder.load_matrix(FIXTURES[0]), kcidb.artifacts(tmp_path))
    assert kcidb_problems(view) == []
    assert "https://gitlab.example.org/kernel/taintport/-/jobs/4711/artifacts/raw/results/" \
        "merged/bookworm-6.1/upstream/build.log" in urls(view)
    assert all(u.startswith(BASE + "/") for u in urls(view))
    given = kcidb.artifacts(tmp_path, "https://example.org/r/")
    assert given.url("a b/c.log") == "https://example.org/r/a%20b/c.log", "the option wins"
    page = kcidb.Artifacts("https://github.com/o/r/actions/runs/9#")
    assert page.url("x/build.log") == "https://github.com/o/r/actions/runs/9#x/build.log"


@pytest.mark.parametrize("base", ["results/run", "ftp://host/x", "https:///x", "https://h/a b",
                                  "javascript:alert(1)", "https://h/\x1b[2J"])
def test_a_base_that_is_no_absolute_url_is_refused(base, tmp_path, monkeypatch):
    with pytest.raises(InputError, match="--artifacts-url"):
        kcidb.artifacts(tmp_path, base)
    monkeypatch.setenv(kcidb.ARTIFACTS_ENV, base)
    with pytest.raises(InputError, match=kcidb.ARTIFACTS_ENV):
        kcidb.artifacts(tmp_path)


def test_the_merged_ci_view_validates(tmp_path, taintport, monkeypatch):
    """`report merge`, as the generated pipelines' report job runs it, with
    the variable they set: the merged matrix.json's view."""
    proc = taintport("report", "merge", *FIXTURES, "--out", tmp_path / "merged")
    assert proc.returncode == 2, "a broken cell in trixie: the merged report fails as it does"
    view = json.loads((tmp_path / "merged" / "matrix.json").read_text())["kcidb"]
    assert kcidb_problems(view) == []
    assert [c["id"] for c in view["checkouts"]] == ["taintport:bookworm-6.1",
                                                    "taintport:trixie-6.12"]
    doc = compare.merge(FIXTURES)
    monkeypatch.setenv(kcidb.ARTIFACTS_ENV, BASE)
    published = kcidb.report(doc, kcidb.artifacts(tmp_path))
    assert kcidb_problems(published) == []
    ids = [t["id"] for t in published["tests"]]
    assert len(ids) == len(set(ids)), "ids unique among the tests of one origin"


def test_a_merged_view_links_the_merged_folder_not_where_it_was_made(tmp_path, taintport,
                                                                     no_artifacts_env):
    """report merge makes its folder beside --out and renames it (folder.replacing):
    the file:// URLs lead into --out, where the files end up."""
    out = tmp_path / "merged"
    taintport("report", "merge", *FIXTURES, "--out", out)
    view = json.loads((out / "matrix.json").read_text())["kcidb"]
    prefix = out.resolve().as_uri() + "/"
    assert urls(view) and all(u.startswith(prefix) for u in urls(view)), urls(view)[:3]


def test_report_kcidb_prints_what_kcidb_submit_reads(tmp_path, taintport):
    proc = taintport("report", "kcidb", FIXTURES[1], "--artifacts-url", BASE,
                     "--origin", "debian_kernel")
    assert proc.returncode == 0, proc.stderr
    view = json.loads(proc.stdout)  # one JSON document on stdout, nothing else
    assert kcidb_problems(view) == []
    assert {o["origin"] for kind in ("checkouts", "builds", "tests") for o in view[kind]} == \
        {"debian_kernel"}
    assert all(t["id"].startswith("debian_kernel:trixie-6.12") for t in view["tests"])
    assert not (tmp_path / "matrix.json").exists(), "printing writes nothing"
    for bad in (["--origin", "Debian Kernel"], ["--artifacts-url", "results/x"]):
        proc = taintport("report", "kcidb", FIXTURES[1], *bad)
        assert proc.returncode == 2 and "Traceback" not in proc.stderr
        assert bad[0] in proc.stderr
