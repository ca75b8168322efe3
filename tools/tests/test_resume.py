# SPDX-License-Identifier: GPL-2.0
"""Results that must not be lost or wrongly reused: --out, --resume, an interrupted fetch.

No kernel is built: the runs here find every cell they need already done
(keyed with the inputs of now), or are stopped while fetching a small
package from a local archive (as in test_fetch.py). Each uses a private
cache. docs/faults.md ("The run") maps each case here.
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from taintport import cli
from taintport.cache import Cache
from taintport.kernel import kconfig
from taintport.process import STOPPING
from taintport.results import folder
from taintport.run import matrix, store
from taintport.run.sources import of
from taintport.tree import fetch, series, variants, versions
from taintport.tree.variants import named

from test_fetch import make_deb, publish, sha, version
from test_results_input import listing

BOOKWORM = Path(__file__).parent / "data" / "results" / "bookworm-6.1"
VERSION = "bookworm-6.1"
VARIANTS = list(variants.table().booted())  # the fixture's cells: a default run


def inputs(version, quilt_series, variant):
    return of(variant).inputs(version, quilt_series, variant)



def keyed(tmp_path):
    """The bookworm fixture folder, each cell keyed with the inputs of now, and a
    Runner resuming it."""
    out = tmp_path / "run"
    shutil.copytree(BOOKWORM, out)
    runner = matrix.Runner(Cache(tmp_path / "cache"), out, resume=True)
    pinned = versions.select([VERSION])[0]
    quilt_series = series.load(VERSION)
    for variant in VARIANTS:
        path = out / VERSION / variant.name / "cell.json"
        cell = json.loads(path.read_text())
        cell["key"] = store.cell_key(variant, inputs(pinned, quilt_series, variant),
                                     runner.tools, runner.timeout)
        path.write_text(json.dumps(cell))
    return out, runner, pinned


# 7. --out and --resume never lose cells

def test_an_out_folder_holding_results_is_refused(tmp_path, taintport):
    out = tmp_path / "run"
    shutil.copytree(BOOKWORM, out)
    before = listing(out)
    proc = taintport("matrix", "--versions", VERSION, "--out", out)
    assert proc.returncode == 2
    assert "already holds results" in proc.stderr and f"--resume {out}" in proc.stderr
    assert listing(out) == before


def test_a_results_folder_being_written_is_refused_to_a_second_run(tmp_path, taintport):
    out = tmp_path / "run"
    with folder.writing(out):
        proc = taintport("matrix", "--versions", VERSION, "--out", out)
    assert proc.returncode == 2
    assert f"pid {os.getpid()} is writing this results folder" in proc.stderr
    assert [p.name for p in out.iterdir()] == [folder.LOCK]


def test_default_results_folders_started_in_one_second_differ(tmp_path):
    stem = time.strftime("%Y%m%dT%H%M%S")
    first, second = (folder.unique_folder(tmp_path, stem) for _ in range(2))
    assert first != second and first.is_dir() and second.is_dir()


def test_resume_of_one_version_keeps_the_other_versions_cells(tmp_path):
    out, runner, pinned = keyed(tmp_path)
    other = out / "bullseye-5.10" / "upstream"
    shutil.copytree(out / VERSION / "upstream", other)
    cell = json.loads((other / "cell.json").read_text())
    cell.update(version="bullseye-5.10",
                logs={"build": "bullseye-5.10/upstream/build.log",
                      "console": "bullseye-5.10/upstream/console.log"})
    (other / "cell.json").write_text(json.dumps(cell))
    assert runner.run([pinned], VARIANTS) == 0
    cells = json.loads((out / "matrix.json").read_text())["cells"]
    assert [(c["version"], c["variant"]) for c in cells] == \
        [(VERSION, v.name) for v in VARIANTS] + [("bullseye-5.10", "upstream")]
    assert all(c.get("resumed") for c in cells[:len(VARIANTS)])


# 8. --resume reuses only cells whose inputs are the ones of now

def test_resume_runs_again_the_cells_whose_inputs_changed(tmp_path, monkeypatch):
    out, runner, pinned = keyed(tmp_path)
    runner.folder.read_earlier()
    _, done, todo = runner.plan(pinned, VARIANTS)
    assert [d.variant for d in done] == VARIANTS and not todo
    # kconfigs/base.config edited after the interrupted run
    edited = tmp_path / "kconfigs"
    shutil.copytree(kconfig.KCONFIG_DIR, edited)
    with open(edited / "base.config", "a") as out_file:
        out_file.write("CONFIG_PRINTK_TIME=y\n")
    fragments = kconfig.fragments
    monkeypatch.setattr(kconfig, "fragments", lambda name: fragments(name, edited))
    _, done, todo = runner.plan(pinned, VARIANTS)
    # Debian's binary is not built from our fragments: its cell stays
    assert [d.variant for d in done] == [named("shipped")]
    assert [t.variant for t in todo] == list(variants.table().from_tree())


def test_the_report_says_which_cells_were_resumed(tmp_path, taintport):
    out, runner, pinned = keyed(tmp_path)
    runner.run([pinned], VARIANTS)
    proc = taintport("report", out)
    assert proc.returncode == 0
    assert (out / "summary.md").read_text().count("resumed: kept from the earlier run") == len(VARIANTS)


# 9. a stop while fetching writes no cell

def stop_mid_fetch(tmp_path: Path) -> None:
    """The run stopped by SIGTERM while it extracts, in a process of its own:
    SIGTERM handled as `taintport matrix` handles it."""
    signal.signal(signal.SIGTERM, cli.on_sigterm)
    deb = make_deb(tmp_path, "9.9.1-1", "good")
    publish(tmp_path / "archive", [deb])
    small = version(tmp_path / "archive", "9.9.1-1", sha(deb))
    quilt = tmp_path / "quilt"
    (quilt / small.name).mkdir(parents=True)
    (quilt / small.name / "series").write_text("")
    extract = fetch.extract

    def stopped_mid_fetch(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGTERM)
        STOPPING.wait(30)  # the main thread ends every child, as on a real stop
        return extract(*args, **kwargs)

    fetch.extract = stopped_mid_fetch
    out = tmp_path / "run"
    runner = matrix.Runner(Cache(tmp_path / "cache"), out, quilt_dir=quilt)
    built = list(variants.table().from_tree())  # a version of our own has no binary to boot
    with pytest.raises(KeyboardInterrupt):
        runner.run([small], built)
    assert STOPPING.is_set()
    assert not list(out.rglob("cell.json")) and not (out / "matrix.json").exists()
    STOPPING.clear()
    # --resume has all of them to run
    resumed = matrix.Runner(Cache(tmp_path / "cache"), out, quilt_dir=quilt, resume=True)
    resumed.folder.read_earlier()
    _, done, todo = resumed.plan(small, built)
    assert not done and [t.variant for t in todo] == built


def test_sigterm_while_fetching_writes_no_cell(tmp_path):
    # Only a process's main thread may set a signal handler, and pytest-xdist
    # 3.1 (execnet 1.9) runs a test in another thread when the worker's main
    # thread is not yet waiting for it (CI met it): the run is a fresh
    # interpreter's, as a stopped `taintport matrix` is.
    here = Path(__file__).parent
    child = ("import sys; sys.path[:0] = sys.argv[1:3]; import test_resume; "
             "test_resume.stop_mid_fetch(__import__('pathlib').Path(sys.argv[3]))")
    proc = subprocess.run([sys.executable, "-c", child, str(here.parent / "lib"), str(here),
                           str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr


def test_variants_with_the_same_inputs_never_share_a_stored_cell():
    """A series whose backported/ patches were dropped (the e2e mutation test)
    builds what reverted builds; its unexpected backported cell must not be
    stored where a later run looks up reverted."""
    pinned = versions.select([VERSION])[0]
    reverted, backported = named("reverted"), named("backported")
    same = inputs(pinned, series.load(VERSION), reverted)
    assert store.cell_key(reverted, same, {}, 180) != store.cell_key(backported, same, {}, 180)
    assert store.cell_key(reverted, same, {}, 180) == \
        store.cell_key(reverted, inputs(pinned, series.load(VERSION), reverted), {}, 180)
