# SPDX-License-Identifier: GPL-2.0
"""The one safe writer (taintport.atomic): old or new bytes whatever kills it,
and the leftovers of a killed run removed by the next write, a live run's never."""
import fcntl
import os
import shutil
import subprocess

import pytest

from conftest import REPO
from taintport import atomic
from taintport.atomic import leftovers, replace_file

LIB = REPO / "tools" / "lib"


def dead_leftover(target, content=b"half"):
    """What a run killed between writing and renaming leaves: a temp file nobody locks."""
    temp = atomic.temp_beside(target)
    temp.write_bytes(content)
    return temp


def test_a_write_replaces_the_file_and_leaves_nothing_beside(tmp_path):
    target = tmp_path / "matrix.json"
    target.write_bytes(b"old")
    replace_file(target, b"new", 0o600)
    assert target.read_bytes() == b"new"
    assert os.stat(target).st_mode & 0o777 == 0o600
    assert sorted(p.name for p in tmp_path.iterdir()) == ["matrix.json"]


def test_a_rerun_removes_what_a_killed_run_left(tmp_path):
    target = tmp_path / "series"
    target.write_bytes(b"old")
    left = [dead_leftover(target), dead_leftover(target)]
    other = dead_leftover(tmp_path / "other")  # another file's: its own write sweeps it
    replace_file(target, b"new")
    assert not any(p.exists() for p in left)
    assert other.exists()
    assert target.read_bytes() == b"new"
    assert leftovers(target) == []


def test_a_live_runs_temp_file_is_left_alone(tmp_path):
    target = tmp_path / "series"
    live = dead_leftover(target)
    with open(live, "rb") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        replace_file(target, b"new")
        assert live.exists()
    replace_file(target, b"newer")
    assert not live.exists()


def test_what_bears_the_name_but_is_no_file_of_ours_is_left_alone(tmp_path):
    target = tmp_path / "series"
    victim = tmp_path / "victim"
    victim.write_bytes(b"keep")
    link = atomic.temp_beside(target)
    link.symlink_to(victim)
    fifo = atomic.temp_beside(target)
    os.mkfifo(fifo)
    replace_file(target, b"new")  # no hang on the FIFO, no write through the link
    assert link.is_symlink() and fifo.exists() and victim.read_bytes() == b"keep"


def test_a_failed_rename_leaves_the_old_file_and_no_temp(tmp_path, monkeypatch):
    target = tmp_path / "bookworm-6.1.toml"
    target.write_bytes(b"old")

    def refuse(src, dst):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(atomic.os, "rename", refuse)
    with pytest.raises(OSError):
        replace_file(target, b"new")
    assert target.read_bytes() == b"old"
    assert leftovers(target) == []


def test_a_write_killed_at_its_rename_leaves_old_bytes_and_the_rerun_cleans_up(tmp_path):
    """SIGKILL at the rename (strace injects it): the file is whole and old, a
    temp file is left; the next write of that file removes it."""
    target = tmp_path / "taintport-matrix.yml"
    target.write_bytes(b"old")
    program = ("import sys; sys.path.insert(0, sys.argv[1]); "
               "from taintport.atomic import replace_file; "
               "replace_file(sys.argv[2], b'new' * 100000)")
    # the interpreter renames nothing else (no bytecode written): the first rename is ours
    proc = subprocess.run(["strace", "-f", "-o", "/dev/null",
                           "-e", "inject=rename,renameat,renameat2:signal=SIGKILL:when=1",
                           "/usr/bin/python3", "-c", program, str(LIB), str(target)],
                          env=dict(os.environ, PYTHONDONTWRITEBYTECODE="1"),
                          capture_output=True, timeout=60)
    assert proc.returncode == 128 + 9 or proc.returncode == -9, proc.stderr
    assert target.read_bytes() == b"old"
    left = leftovers(target)
    assert len(left) == 1 and left[0].read_bytes() == b"new" * 100000
    replace_file(target, b"again")
    assert target.read_bytes() == b"again"
    assert leftovers(target) == []


def test_a_sweep_between_creation_and_lock_is_not_a_lost_write(tmp_path, monkeypatch):
    """A sweep that removes the new temp file before its writer locks it makes
    the write fail loudly, never report a write that went nowhere."""
    target = tmp_path / "series"
    real_flock = fcntl.flock

    def swept_first(fd, op):
        name = os.readlink(f"/proc/self/fd/{fd}")
        os.unlink(name)
        return real_flock(fd, op)
    monkeypatch.setattr(atomic.fcntl, "flock", swept_first)
    with pytest.raises(FileNotFoundError):
        replace_file(target, b"new")
    assert not target.exists()


def test_report_removes_the_temp_files_a_killed_report_left(tmp_path, taintport):
    """issue 34: SIGKILL of `report` at a rename left `.junit.xml.taintport-*`
    files that no rerun removed; the rerun's writes of those files do now."""
    run = tmp_path / "run"
    shutil.copytree(REPO / "tools" / "tests" / "data" / "results" / "bookworm-6.1", run)
    planted = [dead_leftover(run / name) for name in ("junit.xml", "summary.md", "matrix.json")]
    proc = taintport("report", run)
    assert proc.returncode in (0, 1), proc.stderr
    assert not any(p.exists() for p in planted)
    assert not any(atomic.target_of(p.name) for p in run.rglob("*"))
