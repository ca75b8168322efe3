# SPDX-License-Identifier: GPL-2.0
"""Child processes: niced builds that go on while a guest boots, and
commands that die, with all they started, when a run is killed outright.

Real processes (sleep), their state read from /proc.
"""
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from process_table import descendants, stat, still_alive
from taintport import process
from taintport.kernel import boot


def spawn_sleep(nice):
    return process.spawn(["sleep", "60"], nice=nice)


def qemu_reading_state(pid, seen):
    """A stand-in for QEMU: writes pid's state letter to seen after 0.3 s
    (a SIGSTOP would have reached the process by then)."""
    return ["sh", "-c", f"sleep 0.3; cut -d' ' -f3 /proc/{pid}/stat > {seen}"]


def end(*procs):
    for proc in procs:
        process.kill_group(proc)
        process.reap(proc)


def niceness(pid):
    """The nice value of pid, from /proc (the 19th field)."""
    return int(stat(Path(f"/proc/{pid}/stat").read_text())[1][16])


def test_a_boot_leaves_the_builds_beside_it_running(tmp_path):
    """A guest's boot does not stop the builds beside it: with every guest
    booted norandmaps a build costs a boot nothing measurable, and a stopped
    build was the other kernel's cold build, the matrix's critical path
    (process.NICE_LEVEL says what was measured)."""
    build = spawn_sleep(process.NICE_LEVEL)
    seen = tmp_path / "seen"
    try:
        code, timed_out, _ = boot.run_qemu(qemu_reading_state(build.pid, seen),
                                           tmp_path / "console.log", 10)
        assert (code, timed_out) == (0, False)
        assert seen.read_text().strip() in ("S", "R")
    finally:
        end(build)


def test_a_build_run_to_its_end_runs_niced():
    """Builds go through process.run(nice=...) (kernel/build.py, kconfig.py):
    the command runs that much nicer than the run, below QEMU."""
    lane = threading.Thread(target=process.run, args=(["sleep", "1"],),
                            kwargs={"stage": "build", "nice": process.NICE_LEVEL})
    lane.start()
    deadline = time.monotonic() + 5
    while not (running := [p for p in list(process.LIVE) if "sleep" in p.args]):
        assert time.monotonic() < deadline, "run() never spawned its command"
        time.sleep(0.01)
    try:
        path = Path(f"/proc/{running[0].pid}/stat")
        while stat(path.read_text())[0] != "sleep":  # nice(1) has not exec'd it yet
            assert time.monotonic() < deadline
            time.sleep(0.01)
        # relative to this test's own (conftest.critical_path_first sets it)
        assert niceness(running[0].pid) == min(19, os.nice(0) + process.NICE_LEVEL)
    finally:
        lane.join(10)


KILLED_RUN = """
import sys
sys.path.insert(0, {lib!r})
from taintport import process
process.run(process.orphan_proof(["sh", "-c", "sleep 300 & echo $! > {pidfile}; wait"]),
            stage="test")
"""


@pytest.mark.skipif(not process._fence(),
                    reason="this machine allows no PID namespace (unshare --pid refused, "
                    "as root and with a user namespace): a command's children have no "
                    "tie to the run here, only the command (docs/faults.md)")
def test_what_a_command_started_dies_with_a_run_killed_outright(tmp_path):
    """A run killed with SIGKILL ends no process group; the command it ran dies
    by its parent-death signal, and what that command forked (here a sleep, as
    apt-get forks its copy method) dies with the command's PID namespace."""
    pidfile = tmp_path / "pid"
    lib = str(Path(process.__file__).resolve().parents[1])
    run = subprocess.Popen([sys.executable, "-c",
                            KILLED_RUN.format(lib=lib, pidfile=pidfile)])
    living = {}
    try:
        deadline = time.monotonic() + 30
        while not pidfile.exists() or not pidfile.read_text().strip():
            assert time.monotonic() < deadline and run.poll() is None, "the command never ran"
            time.sleep(0.02)
        # the file holds the pid the namespace gave the sleep: find it from /proc
        sleeps = {p: name for p, name in descendants(run.pid).items() if name == "sleep"}
        assert sleeps, "the sleep below the run"
        run.kill()
        run.wait()
        living = still_alive(sleeps, 2.0)
        assert not living, "the command's child outlived the run"
    finally:
        run.kill()
        for pid, _ in living:
            os.kill(pid, signal.SIGKILL)


def test_a_machine_that_allows_no_pid_namespace_still_runs_the_command(monkeypatch):
    """Where unshare is refused (a container without CLONE_NEWPID or user
    namespaces), the command still runs, tied by its parent-death signal."""
    monkeypatch.setattr(process, "FENCES", (("/nonexistent/unshare", "--"),))
    process._fence.cache_clear()
    try:
        argv = process.orphan_proof(["true"])
        assert argv == ["setpriv", "--pdeathsig", "KILL", "--", "true"]
        assert process.run(argv, stage="test").returncode == 0
    finally:
        process._fence.cache_clear()
