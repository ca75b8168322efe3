# SPDX-License-Identifier: GPL-2.0
"""A guest boots with the builds beside it stopped, and they go on afterwards.

Real processes (sleep), their state read from /proc: 'T' is stopped.
"""
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
