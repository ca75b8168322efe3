# SPDX-License-Identifier: GPL-2.0
"""A guest boots with the builds beside it stopped, and they go on afterwards.

Real processes (sleep), their state read from /proc: 'T' is stopped.
"""
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from taintport import process
from taintport.kernel import boot


def state(pid, want, seconds=5.0):
    """The process's state letter once it is one of want (or at the deadline)."""
    deadline = time.monotonic() + seconds
    while True:
        # the state follows the name in parentheses
        letter = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        if letter in want or time.monotonic() > deadline:
            return letter
        time.sleep(0.01)


def spawn_sleep(nice):
    return process.spawn(["sleep", "60"], nice=nice)


def qemu_reading_state(pid, seen):
    """A stand-in for QEMU: writes pid's state letter to seen while it runs,
    once it is T or after 2 s (a SIGSTOP reaches a running process a moment
    after it is sent)."""
    return ["sh", "-c", f"for i in $(seq 100); do s=$(cut -d' ' -f3 /proc/{pid}/stat); "
            f"[ \"$s\" = T ] && break; sleep 0.02; done; echo \"$s\" > {seen}"]


def end(*procs):
    for proc in procs:
        process.kill_group(proc)
        process.reap(proc)


def test_a_boot_stops_the_background_groups_and_only_those():
    build = spawn_sleep(process.NICE_LEVEL)
    other = spawn_sleep(0)
    dracut = process.spawn(["sleep", "60"], background=True)  # not niced, but waits
    late = None
    try:
        assert state(build.pid, "S") == "S"
        with process.booting():
            assert state(build.pid, "T") == "T"
            assert state(dracut.pid, "T") == "T"
            late = spawn_sleep(process.NICE_LEVEL)  # a build that starts during the boot
            assert state(late.pid, "T") == "T"
            assert state(other.pid, "S", 0.2) == "S"
        assert state(build.pid, "S") == "S"
        assert state(late.pid, "S") == "S"
        assert state(dracut.pid, "S") == "S"
    finally:
        end(*(p for p in (build, other, dracut, late) if p))


def test_builds_go_on_only_when_the_last_of_two_boots_ends():
    build = spawn_sleep(process.NICE_LEVEL)
    first_ended = threading.Event()
    second_may_end = threading.Event()
    seen = []

    def second_lane():
        with process.booting():
            first_ended.wait(5)
            seen.append(state(build.pid, "S", 0.3))
            second_may_end.wait(5)

    try:
        with process.booting():
            lane = threading.Thread(target=second_lane)
            lane.start()
            time.sleep(0.1)
        first_ended.set()
        lane.join(0.5)
        assert seen == ["T"], "a build went on while the other lane's guest still booted"
        second_may_end.set()
        lane.join(5)
        assert state(build.pid, "S") == "S"
    finally:
        second_may_end.set()
        end(build)


def test_the_boot_stage_stops_builds_while_qemu_runs(tmp_path):
    build = spawn_sleep(process.NICE_LEVEL)
    seen = tmp_path / "seen"
    try:
        code, timed_out, _ = boot.run_qemu(qemu_reading_state(build.pid, seen),
                                           tmp_path / "console.log", 10)
        assert (code, timed_out) == (0, False)
        assert seen.read_text().strip() == "T"
        assert state(build.pid, "S") == "S"
    finally:
        end(build)


def test_a_build_run_to_its_end_waits_too():
    """Builds go through process.run(nice=...) (kernel/build.py, kconfig.py),
    not spawn: there too the niceness makes them wait while a guest boots
    (it did not, and every first boot of a kernel ran beside the next
    kernel's cold build: 6-9 s instead of 4)."""
    lane = threading.Thread(target=process.run, args=(["sleep", "1"],),
                            kwargs={"stage": "build", "nice": process.NICE_LEVEL})
    lane.start()
    deadline = time.monotonic() + 5
    while not (running := [p for p in list(process.LIVE) if "sleep" in p.args]):
        assert time.monotonic() < deadline, "run() never spawned its command"
        time.sleep(0.01)
    try:
        with process.booting():
            assert state(running[0].pid, "T") == "T"
        assert state(running[0].pid, "SZ") in "SZ"
    finally:
        lane.join(10)


KILLED_RUN = """
import sys
sys.path.insert(0, {lib!r})
from taintport import process
process.run(process.orphan_proof(["sh", "-c", "sleep 300 & echo $! > {pidfile}; wait"]),
            stage="test")
"""


def test_what_a_command_started_dies_with_a_run_killed_outright(tmp_path):
    """A run killed with SIGKILL ends no process group; the command it ran dies
    by its parent-death signal, and what that command forked (here a sleep, as
    apt-get forks its copy method) dies with the command's PID namespace."""
    pidfile = tmp_path / "pid"
    lib = str(Path(process.__file__).resolve().parents[1])
    run = subprocess.Popen([sys.executable, "-c",
                            KILLED_RUN.format(lib=lib, pidfile=pidfile)])
    living = []
    try:
        deadline = time.monotonic() + 30
        while not pidfile.exists() or not pidfile.read_text().strip():
            assert time.monotonic() < deadline and run.poll() is None, "the command never ran"
            time.sleep(0.02)
        # the file holds the pid the namespace gave the sleep: find it from /proc
        sleeps = [pid for pid, name in children_of(run.pid) if name == "sleep"]
        assert sleeps, "the sleep below the run"
        run.kill()
        run.wait()
        living = state_after(sleeps, 2.0)
        assert not living, "the command's child outlived the run"
    finally:
        run.kill()
        for pid in living:
            os.kill(pid, signal.SIGKILL)


def children_of(pid):
    """[(pid, name)] of every process below pid, from /proc."""
    table = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue
        table[int(stat.parent.name)] = (int(text.rsplit(")", 1)[1].split()[1]),
                                        text[text.index("(") + 1:text.rindex(")")])
    below, todo = [], [pid]
    while todo:
        parent = todo.pop()
        for child, (ppid, name) in table.items():
            if ppid == parent:
                below.append((child, name))
                todo.append(child)
    return below


def state_after(pids, seconds):
    """The pids still running (not zombies) after up to seconds."""
    deadline = time.monotonic() + seconds
    while True:
        living = []
        for pid in pids:
            try:
                letter = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
            except OSError:
                continue
            if letter != "Z":
                living.append(pid)
        if not living or time.monotonic() > deadline:
            return living
        time.sleep(0.05)


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
