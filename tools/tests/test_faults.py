# SPDX-License-Identifier: GPL-2.0
"""Faults provoked for real: each must end as a named error, never a pass or a fail.

Uses bookworm 6.1 (built by test_e2e; rebuilt incrementally here if needed).
docs/faults.md maps each fault to its test.
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import provoke

from taintport import cli
from taintport.cache import Cache
from taintport.run import stages
from taintport.tree import versions

REPO = Path(__file__).resolve().parents[2]
TAINTPORT = [sys.executable, str(REPO / "tools" / "taintport")]
VERSION = "bookworm-6.1"

pytestmark = [pytest.mark.e2e, pytest.mark.users_cache]


def taintport(*args, timeout=1800):
    proc = subprocess.run([*TAINTPORT, *args], capture_output=True, text=True,
                          timeout=timeout)
    print(proc.stdout, proc.stderr)
    return proc


def qemu_running(where):
    """Is a QEMU whose command line names where (its console log's folder) alive?"""
    return subprocess.run(["pgrep", "-f", f"qemu-system-x86_64.*{where}"],
                          capture_output=True).returncode == 0


def upstream_artifacts():
    return Cache().artifacts(versions.select([VERSION])[0], "upstream")


@pytest.fixture(scope="module")
def built():
    proc = taintport("build", "--version", VERSION, "--variant", "upstream")
    assert proc.returncode == 0


def boot_with(fault, timeout, out):
    return taintport("boot", "--version", VERSION, "--variant", "upstream", "--accel", "tcg",
                     "--append", f"taintport.fault={fault}", "--timeout", str(timeout),
                     "--out", str(out))


def test_hanging_guest_is_killed_at_the_timeout(built, tmp_path):
    start = time.monotonic()
    proc = boot_with("hang", 25, tmp_path)
    assert proc.returncode == 2
    assert "guest killed at the 25s timeout" in proc.stdout
    assert time.monotonic() - start < 120
    assert not qemu_running(upstream_artifacts())


def cell_json(out):
    return json.loads((out / VERSION / "upstream" / "cell.json").read_text())


def test_panicking_guest_is_an_error_with_the_panic_lines(built, tmp_path):
    proc = boot_with("panic", 120, tmp_path)
    assert proc.returncode == 2
    assert f"{VERSION} upstream: error" in proc.stdout
    cell = cell_json(tmp_path)
    assert cell["status"] == "error"
    assert cell["fault"] == "panic"
    assert any("Kernel panic" in line for line in cell["panic"]), cell["panic"]
    assert any("kernel panic" in e for e in cell["errors"]), cell["errors"]


def test_truncated_ktap_is_an_error(built, tmp_path):
    proc = boot_with("truncate", 120, tmp_path)
    assert proc.returncode == 2
    assert "planned results missing" in proc.stdout
    assert cell_json(tmp_path)["fault"] == "truncate"


def stored_cells():
    """The cell store: key -> its cell.json, as the next run would find it."""
    root = Cache().root / "cells"
    return {p.name: (p / "cell.json").read_bytes()
            for p in sorted(root.iterdir()) if (p / "cell.json").exists()} \
        if root.is_dir() else {}


@pytest.fixture
def faulty_agent(monkeypatch):
    """Every chain the matrix makes boots its guests with taintport.fault=truncate
    (the harness's switch, provoke.py: the library's Runner has none)."""
    monkeypatch.setattr(stages.Chain, "__init__", provoke.faulty_chain("truncate"))
    # cli.main makes SIGTERM end a run like Ctrl-C: pytest's own handler comes back after
    monkeypatch.setattr(signal, "signal", lambda signum, handler: None)


def test_fault_in_matrix_is_error_not_stored(tmp_path, built, faulty_agent):
    before = stored_cells()
    # --rerun: the cell stored by an earlier run would otherwise be taken
    code = cli.main(["matrix", "--versions", VERSION, "--variants", "upstream", "--rerun",
                     "--out", str(tmp_path)])
    assert code == 2
    cell = json.loads((tmp_path / "matrix.json").read_text())["cells"][0]
    assert cell["status"] == "error"
    assert cell["fault"] == "truncate"  # matrix.json says this run was a harness test
    assert any("planned results missing" in e for e in cell["errors"]), cell["errors"]
    assert cell["timings"].get("boot") is not None  # it booted: no stored cell was taken
    assert stored_cells() == before  # and nothing of it went into the store


def test_build_failure_is_a_cell_error_and_other_cells_go_on(tmp_path):
    quilt = tmp_path / "quilt"
    shutil.copytree(REPO / "quilt", quilt)
    broken = quilt / VERSION / "reverted" / "0002-break-the-build.patch"
    broken.write_text(
        "Subject: fault test: a kernel that does not compile\n---\n"
        "--- a/kernel/tracepoint.c\n+++ b/kernel/tracepoint.c\n"
        "@@ -1,3 +1,4 @@\n"
        + "".join(" " + line + "\n" for line in
                  (Path(Cache().tree(versions.select([VERSION])[0]))
                   / "kernel" / "tracepoint.c").read_text().splitlines()[:1])
        + "+#error taintport fault test: this kernel must not build\n"
        + "".join(" " + line + "\n" for line in
                  (Path(Cache().tree(versions.select([VERSION])[0]))
                   / "kernel" / "tracepoint.c").read_text().splitlines()[1:3]))
    series = quilt / VERSION / "series"
    series.write_text(series.read_text().replace(
        "forced-again.patch\n", "forced-again.patch\nreverted/0002-break-the-build.patch\n"))
    proc = taintport("matrix", "--versions", VERSION, "--variants", "upstream", "reverted",
                     "--quilt-dir", str(quilt), "--out", str(tmp_path / "out"))
    assert proc.returncode == 2
    cells = {c["variant"]: c for c in
             json.loads((tmp_path / "out" / "matrix.json").read_text())["cells"]}
    assert cells["upstream"]["status"] == "known-bug"  # 6.1 as shipped lacks the livepatch fix
    assert cells["reverted"]["status"] == "error"
    assert "taintport fault test" in cells["reverted"]["errors"][0]
    # the tree went back to a variant that builds for the next run
    ok = taintport("build", "--version", VERSION, "--variant", "upstream")
    assert ok.returncode == 0


def test_sigterm_keeps_finished_cells_and_resume_completes(tmp_path):
    out = tmp_path / "out"
    # two variants: the first cell is finished when the signal comes, the
    # second is building (make must die with the run); the other variants
    # would add minutes of boots to the same proof
    variants = ["upstream", "reverted"]
    proc = subprocess.Popen([*TAINTPORT, "matrix", "--rerun", "--versions", VERSION,
                             "--variants", *variants, "--out", str(out)],
                            stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    first = out / VERSION / "upstream" / "cell.json"
    deadline = time.monotonic() + 900
    while not first.exists() and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.5)
    assert first.exists()
    proc.send_signal(signal.SIGTERM)
    stdout, stderr = proc.communicate(timeout=120)
    print(stdout, stderr)
    assert proc.returncode == 2
    assert "--resume" in stderr
    time.sleep(1)
    assert not qemu_running(out)
    assert subprocess.run(["pgrep", "-f", f"O={Cache().build(versions.select([VERSION])[0])}"],
                          capture_output=True).returncode != 0, "make left running"
    kept = json.loads((out / "matrix.json").read_text())["cells"]
    assert [c["variant"] for c in kept][0] == "upstream"
    resumed = taintport("matrix", "--rerun", "--versions", VERSION, "--variants", *variants,
                        "--resume", str(out))
    assert resumed.returncode == 0
    cells = json.loads((out / "matrix.json").read_text())["cells"]
    assert [c["variant"] for c in cells] == variants
    assert cells[0].get("resumed")


def test_second_run_on_the_same_version_waits_and_says_so(tmp_path):
    cache = Cache()
    with cache.locked(VERSION):
        proc = subprocess.Popen([*TAINTPORT, "fetch", "--versions", VERSION],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        # no timing guess: read what it says until it says it waits (or ends)
        watchdog = threading.Timer(120, proc.kill)
        watchdog.start()
        said = []
        while not any("waiting for pid" in line for line in said):
            line = proc.stderr.readline()
            if not line:
                break
            said.append(line)
        watchdog.cancel()
        assert any(f"waiting for pid {os.getpid()}" in line for line in said), said
        assert proc.poll() is None, "the second run did not wait"
    stdout, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 0


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a small tmpfs needs root")
def test_disk_full_cache_is_a_clear_error_and_results_survive(tmp_path):
    small = tmp_path / "small"
    small.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(small)], check=True)
    try:
        out = tmp_path / "out"
        proc = taintport("matrix", "--versions", VERSION, "--variants", "upstream",
                         "--cache", str(small), "--out", str(out))
        assert proc.returncode == 2
        cell = json.loads((out / "matrix.json").read_text())["cells"][0]
        assert cell["status"] == "error"
        assert "No space left on device" in cell["errors"][0]
    finally:
        subprocess.run(["umount", str(small)], check=True)
