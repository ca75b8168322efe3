# SPDX-License-Identifier: GPL-2.0
"""Boot stage: QEMU with the serial console in a file and a wall-clock timeout.

KVM is used only when a short probe boot under KVM reaches the kernel's
first panic in time; otherwise TCG (on the project's machines /dev/kvm exists
but KVM guests hang or assert). The accelerator is recorded in the results.
"""
import os
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from taintport.errors import RunError
from taintport.process import STOPPING, kill_group, reap, require, spawn

QEMU = "qemu-system-x86_64"
# Under working KVM our kernel reaches its no-root panic in well under a
# second; where KVM guests hang (these machines), the hung guest spins a core
# until the timeout, taken from the kernel building beside it, and the first
# boot waits for it (beside dracut's 2-3 s): make check's matrix runs paid
# 5 s each.
PROBE_TIMEOUT = 3
KVM_DEVICE = "/dev/kvm"  # a name, so a test can stand a file in for it
# MiB: plenty for our tinyconfig builds; a distribution's binary says its own
MEMORY = 512
# Every guest's userspace at fixed addresses. TCG keys its translated code by
# guest virtual address, so with the address space randomized each exec of
# bash, kmod or awk translates its libraries again: the selftests' scripts
# spent most of their time there (7.3: 51 s a stage, 31 s with this; the
# agent's boot 3.5-4.4 s, 2.3-3.0 s). The guests test the kernel, whose own
# layout (KASLR) this leaves alone.
GUEST_APPEND = "norandmaps"


@dataclass(frozen=True)
class Accel:
    name: str  # "kvm" or "tcg"
    reason: str


@dataclass(frozen=True)
class Boot:
    console: Path
    exit_code: int | None  # None when killed at the timeout
    timed_out: bool
    seconds: float
    accel: str
    command: tuple[str, ...]


def command(bzimage: Path, initrd: Path | None, console: Path, append: str, accel: str,
            memory: int = MEMORY) -> list[str]:
    cmd = [QEMU, "-nodefaults", "-nographic", "-no-reboot", "-m", str(memory),
           "-accel", accel, "-nic", "none", "-monitor", "none",
           "-serial", f"file:{console}",
           "-device", "isa-debug-exit,iobase=0xf4,iosize=0x04",
           "-kernel", str(bzimage), "-append", f"{append} {GUEST_APPEND}"]
    if initrd:
        cmd += ["-initrd", str(initrd)]
    return cmd


def run_qemu(cmd: list[str], console: Path,
             timeout: float) -> tuple[int | None, bool, float]:
    """Run QEMU in its own process group; at the timeout the whole group dies."""
    Path(console).unlink(missing_ok=True)
    start = time.monotonic()
    proc = spawn(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                 stderr=subprocess.PIPE)
    try:
        _, err = proc.communicate(timeout=timeout)
        timed_out = False
    except subprocess.TimeoutExpired:
        kill_group(proc)
        _, err = proc.communicate()
        timed_out = True
    except BaseException:
        kill_group(proc)
        raise
    finally:
        reap(proc)
    if STOPPING.is_set():
        raise RunError("boot", "interrupted")
    seconds = time.monotonic() - start
    if err:
        with open(console, "ab") as out:
            out.write(b"\n[qemu stderr]\n" + err)
    return (None if timed_out else proc.returncode), timed_out, seconds


def probe(bzimage: Path, workdir: Path) -> Accel:
    """KVM if a kernel boots to its no-root panic under KVM in time, else TCG."""
    require(QEMU, "qemu-system-x86")
    if not os.access(KVM_DEVICE, os.R_OK | os.W_OK):
        return Accel("tcg", f"{KVM_DEVICE} not usable")
    console = Path(workdir) / "kvm-probe.log"
    code, timed_out, seconds = run_qemu(
        command(bzimage, None, console, "console=ttyS0 panic=-1", "kvm"), console,
        PROBE_TIMEOUT)
    text = console.read_text(errors="replace") if console.exists() else ""
    if not timed_out and "Kernel panic" in text:
        return Accel("kvm", f"probe boot reached the kernel in {seconds:.1f}s")
    why = f"timed out after {PROBE_TIMEOUT}s" if timed_out else f"exited {code}"
    return Accel("tcg", f"KVM probe boot {why} without reaching the kernel")


def boot(bzimage: Path, initrd: Path, console: Path, append: str, accel: str, timeout: float,
         memory: int = MEMORY) -> Boot:
    require(QEMU, "qemu-system-x86")
    cmd = command(bzimage, initrd, console, append, accel, memory)
    code, timed_out, seconds = run_qemu(cmd, console, timeout)
    return Boot(console=Path(console), exit_code=code, timed_out=timed_out,
                seconds=seconds, accel=accel, command=tuple(cmd))
