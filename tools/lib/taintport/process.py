# SPDX-License-Identifier: GPL-2.0
"""Run external tools with their output in a log and failures named.

Each command runs in its own process group, so that an interrupted run
(Ctrl-C, SIGTERM, a timeout) takes make's compilers or QEMU down with it
instead of leaving them running.
"""
import functools
import os
import shlex
import shutil
import signal
import subprocess
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, TextIO

from taintport.errors import RunError

TAIL_LINES = 20

# Every child process group still running, so that an interrupted run can end
# them all from the main thread while worker threads wait on them.
LIVE: "set[subprocess.Popen[Any]]" = set()
STOPPING = threading.Event()

# Kernel compiles (and their kconfig, and trees fetched ahead) run at a lower
# priority than QEMU and dracut: a boot is one TCG thread waited on by its cell
# (8.3 s instead of 3-4 s when it shared the cores evenly with two builds),
# while make has parallel work to spare. Alone, a niced build is as fast as any.
#
# Builds are not stopped while a guest boots. They were (SIGSTOP, from
# 2026-12-04) when TCG beside a niced -j3 build took 4.9-7.2 s against 4.0 s
# alone; with every guest booted norandmaps, 7.3's agent boot took 2.4-3.5 s
# alone and 2.4-3.1 s beside one or two niced -j3 cold builds, while each
# stop held the other kernel's cold build, the matrix's critical path, for
# the whole boot (docs/benchmarks.md).
NICE_LEVEL = 10


def require(tool: str, package: str) -> str:
    """Fail early, naming the Debian package, when a tool is missing."""
    path = shutil.which(tool)
    if not path:
        raise RunError("setup", f"'{tool}' not found; install the Debian package '{package}' "
                       "(make deps installs everything)")
    return path


# unshare's ways to give a command a PID namespace of its own, tried in turn:
# root's, then an unprivileged user's (or root's in a container that denies
# CLONE_NEWPID but allows user namespaces).
FENCES = (
    ("unshare", "--pid", "--fork", "--kill-child", "--"),
    ("unshare", "--user", "--map-current-user", "--pid", "--fork", "--kill-child", "--"),
)


@functools.cache
def _fence() -> tuple[str, ...]:
    """The first of FENCES this machine allows, or () where it allows none
    (then a command's own children outlive a SIGKILL by the work at hand)."""
    for fence in FENCES:
        try:
            done = subprocess.run([*fence, "true"], stdin=subprocess.DEVNULL,
                                  capture_output=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            continue
        if done.returncode == 0:
            return fence
    return ()


def orphan_proof(argv: Sequence[str]) -> list[str]:
    """argv run so that it, and everything it starts, dies with the thread
    that started it: a run killed outright (SIGKILL), which can end no process
    group, leaves no tar, xz, apt-get, spatch or quilt behind writing into the
    cache or a user's tree. setpriv --pdeathsig ends the command (its parent is
    the thread waiting for it), but what the command forked has no such tie:
    apt-get's copy method went on writing a 300 MB download for over a second
    after apt-get died. So the command is the first process of a PID namespace
    of its own (unshare --kill-child), and the kernel ends all of a namespace
    when its first process dies."""
    return ["setpriv", "--pdeathsig", "KILL", "--", *_fence(), *argv]


def tail(path: Path | str, lines: int = TAIL_LINES) -> str:
    try:
        text = Path(path).read_text(errors="replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


def appending(log: Path | str) -> TextIO:
    """Open a log for appending, making its folder first."""
    Path(log).parent.mkdir(parents=True, exist_ok=True)
    return open(log, "a")


def kill_group(proc: "subprocess.Popen[Any]") -> None:
    _signal_group(proc, signal.SIGKILL)
    proc.wait()


def stop_all() -> None:
    """End every child group now; workers then see STOPPING and give up."""
    STOPPING.set()
    for proc in list(LIVE):
        kill_group(proc)


def niced(argv: Sequence[str], nice: int) -> list[str]:
    return ["nice", "-n", str(nice), *argv] if nice else list(argv)


def spawn(argv: Sequence[str], nice: int = 0, **kwargs: Any) -> "subprocess.Popen[Any]":
    """Popen in a new process group, tracked in LIVE until reaped; nice > 0
    runs it at that niceness (nice(1), since preexec_fn is unsafe in threads).

    A process group, not a session: with sched_autogroup (on in Debian's
    kernels) every session gets an equal share of the CPU whatever its
    niceness, so builds in sessions of their own, niced or not, took as much
    as QEMU and the boots beside them slowed to 6-8 s.
    """
    if STOPPING.is_set():
        raise RunError("run", "interrupted")
    proc = subprocess.Popen(niced(argv, nice), process_group=0, **kwargs)
    LIVE.add(proc)
    return proc


def reap(proc: "subprocess.Popen[Any]") -> None:
    LIVE.discard(proc)


def _signal_group(proc: "subprocess.Popen[Any]", signum: int) -> None:
    try:
        os.killpg(proc.pid, signum)
    except ProcessLookupError:
        pass


def run(cmd: Sequence[object], *, stage: str, cwd: Path | str | None = None,
        env: Mapping[str, str | None] | None = None, log: Path | str | None = None,
        timeout: float | None = None, check: bool = True,
        nice: int = 0) -> "subprocess.CompletedProcess[str]":
    """Run cmd; stdout+stderr go to log (appended) or are captured.

    Returns a CompletedProcess. On a non-zero exit (when check) raises
    RunError naming the command and quoting the last lines of its output.
    """
    full_env = dict(os.environ)
    for key, value in (env or {}).items():
        if value is None:  # the caller wants it unset (quilt's QUILT_* variables)
            full_env.pop(key, None)
        else:
            full_env[key] = value
    argv = [str(c) for c in cmd]
    shown = shlex.join(niced(argv, nice))  # the log shows the niceness too
    out = None
    if log:
        out = appending(log)
        out.write(f"$ {shown}\n")
        out.flush()
    try:
        proc = spawn(argv, nice=nice, cwd=cwd, env=full_env,
                     stdin=subprocess.DEVNULL,
                     stdout=out or subprocess.PIPE,
                     stderr=subprocess.STDOUT if out else subprocess.PIPE, text=True)
    except FileNotFoundError:
        if out:
            out.close()
        raise RunError(stage, f"command not found: {argv[0]}") from None
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        kill_group(proc)
        raise RunError(stage, f"timed out after {timeout}s: {shown}",
                       tail(log) if log else "") from None
    except BaseException:
        kill_group(proc)
        raise
    finally:
        reap(proc)
        if out:
            out.close()
    if STOPPING.is_set():
        raise RunError(stage, f"interrupted: {shown}")
    result = subprocess.CompletedProcess(argv, proc.returncode, stdout or "", stderr or "")
    if check and proc.returncode != 0:
        detail = tail(log) if log else "\n".join(
            (result.stdout + result.stderr).splitlines()[-TAIL_LINES:])
        raise RunError(stage, f"exit {proc.returncode}: {shown}", detail)
    return result
