# SPDX-License-Identifier: GPL-2.0
"""Bad names on the command line: an error that lists the valid ones, exit 2."""
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from taintport.errors import RunError
from taintport.kernel import boot
from taintport.tree import variants
from taintport.tree.variants import named

from conftest import fake_command
from test_layer import _tree

REPO = Path(__file__).resolve().parents[2]
TAINTPORT = [sys.executable, str(REPO / "tools" / "taintport")]


def taintport(*args):
    return subprocess.run([*TAINTPORT, *args], capture_output=True, text=True, timeout=120)


def test_unknown_version():
    proc = taintport("matrix", "--versions", "wheezy-3.2")
    assert proc.returncode == 2
    assert "unknown version(s) wheezy-3.2; valid: bullseye-5.10, bookworm-6.1" in proc.stderr


def test_unknown_variant():
    proc = taintport("matrix", "--versions", "bookworm-6.1", "--variants", "fixed")
    assert proc.returncode == 2
    assert "unknown variant 'fixed'; valid: upstream, shipped, reverted, backported" in proc.stderr


def test_bad_letter(tmp_path):
    proc = taintport("inspect", "--tree", str(tmp_path), "--letter", "ee")
    assert proc.returncode == 2
    assert "letter" in proc.stderr


def test_not_a_kernel_tree(tmp_path):
    proc = taintport("apply", "--tree", str(tmp_path))
    assert proc.returncode == 2
    assert str(tmp_path) in proc.stderr


def test_help_speaks_the_field():
    """The help names the whole family and every variant, as their files say them."""
    from taintport.layer import fixes
    proc = taintport("--help")
    assert proc.returncode == 0
    for fix in fixes.FIXES:
        assert re.search(rf"^  {fix.name} +{fix.info.title} \(upstream {fix.commit[:12]}",
                         proc.stdout, re.M), fix.name
    for variant in variants.table().booted():
        assert re.search(rf"^  {variant.name} +{re.escape(variant.what)}$", proc.stdout, re.M)
    assert "Exit codes" in proc.stdout


def fake_kvm(tmp_path, monkeypatch, qemu_script):
    """A usable /dev/kvm stand-in and a qemu-system-x86_64 on PATH that
    does what qemu_script says: the probe's KVM path runs on every machine."""
    device = tmp_path / "kvm"
    device.write_bytes(b"")
    monkeypatch.setattr(boot, "KVM_DEVICE", str(device))
    fake_command(tmp_path, monkeypatch, boot.QEMU, qemu_script)
    return tmp_path / "bzImage"


# what QEMU says when KVM fails, e.g. on a host whose module is not loaded
KVM_FAILS = 'echo "Could not access KVM kernel module: No such file or directory" >&2\n' \
            'echo "qemu-system-x86_64: failed to initialize kvm: No such file or directory" >&2\n' \
            "exit 1\n"
# a guest under KVM that reaches the kernel's no-root panic: write it to the console
KVM_WORKS = 'for a in "$@"; do case "$a" in file:*) console="${a#file:}";; esac; done\n' \
            'printf "Kernel panic - not syncing: VFS: Unable to mount root fs\\n" > "$console"\n' \
            "exit 0\n"


def test_kvm_that_fails_falls_back_to_tcg(tmp_path, monkeypatch):
    """KVM usable by its device, but QEMU cannot start a guest with it: TCG, and why."""
    bzimage = fake_kvm(tmp_path, monkeypatch, KVM_FAILS)
    accel = boot.probe(bzimage, tmp_path)
    assert accel == boot.Accel("tcg", "KVM probe boot exited 1 without reaching the kernel")
    # QEMU's own words are kept with the probe's console for whoever reads it
    assert "failed to initialize kvm" in (tmp_path / "kvm-probe.log").read_text()


def test_kvm_guest_that_hangs_falls_back_to_tcg_at_the_probe_timeout(tmp_path, monkeypatch):
    bzimage = fake_kvm(tmp_path, monkeypatch, "exec sleep 60\n")
    monkeypatch.setattr(boot, "PROBE_TIMEOUT", 1)
    accel = boot.probe(bzimage, tmp_path)
    assert accel == boot.Accel("tcg", "KVM probe boot timed out after 1s without reaching "
                                      "the kernel")


def test_kvm_that_works_is_chosen(tmp_path, monkeypatch):
    """The positive control: the same stand-ins, a guest that reaches the kernel."""
    bzimage = fake_kvm(tmp_path, monkeypatch, KVM_WORKS)
    accel = boot.probe(bzimage, tmp_path)
    assert accel.name == "kvm", accel
    assert accel.reason.startswith("probe boot reached the kernel in ")


def test_no_kvm_device_is_tcg_without_a_probe(tmp_path, monkeypatch):
    fake_kvm(tmp_path, monkeypatch, "exit 99\n")
    monkeypatch.setattr(boot, "KVM_DEVICE", str(tmp_path / "absent"))
    assert boot.probe(tmp_path / "bzImage", tmp_path) == boot.Accel(
        "tcg", f"{tmp_path / 'absent'} not usable")
    assert not (tmp_path / "kvm-probe.log").exists()


def test_inspect_of_a_tree_that_does_not_exist_is_an_error(tmp_path):
    proc = taintport("inspect", "--tree", str(tmp_path / "nonexistent"))
    assert proc.returncode == 2
    assert f"{tmp_path / 'nonexistent'}: no such folder" in proc.stderr


def test_a_piece_whose_file_is_absent_says_file_not_found(tmp_path):
    tree = _tree(tmp_path / "tree", ".c")
    (tree / "Makefile").write_text("VERSION = 3\nPATCHLEVEL = 10\n")  # a kernel tree
    (tree / "kernel" / "tracepoint.c").unlink()
    proc = taintport("inspect", "--tree", str(tree))
    assert re.search(r"^  tracepoint +no file +kernel/tracepoint.c +file not found$",
                     proc.stdout, re.M)
    proc = taintport("apply", "--tree", str(tree), "--export", str(tmp_path / "out"))
    assert proc.returncode == 2
    assert "kernel/tracepoint.c: expected the file" in proc.stderr
    assert "file not found" in proc.stderr
    assert not (tmp_path / "out").exists()


def test_bench_table_shows_a_taken_build_and_computes_the_targets():
    """The table make bench writes at the end of a two-hour run: a variant
    that took another's build (backported on a tree that ships every fix,
    patched everywhere) has no rebuild of its own and no boot."""
    from types import SimpleNamespace

    from taintport.run import bench
    from taintport.results.cells import Cell
    cells = []
    for name, backported_built in (("old", True), ("new", False)):
        for variant in variants.table().from_tree():
            cell = Cell.new(name, variant, {})
            cell.accelerator = "tcg"
            taken = variant.name == "patched" or (variant.name == "backported"
                                                  and not backported_built)
            if taken:
                cell.reused_from = named("upstream" if variant.name == "backported"
                                         else "backported")
                cell.timings.record("apply", 0.1)
            else:
                cell.timings.record("fetch", 1.0)
                cell.timings.record("build", 500.0 if variant.name == "upstream" else 30.0)
                cell.timings.record("initramfs", 10.0 if variant.name == "upstream" else 0.1)
                cell.timings.record("boot", 5.5)
                cell.timings.record("selftests", 60.0 if variant.name == "upstream" else 50.0)
            cells.append(cell)
    chosen = [SimpleNamespace(name="old"), SimpleNamespace(name="new")]
    text = bench.table(chosen, cells, 1100.0, {"old": 480.0, "new": 480.0},
                       {"old": (2.0, 1.0), "new": (2.0, 1.5)}, {"old": 8.0, "new": 9.0},
                       0.9, 0.9, (1.0, 0), 2)
    assert "| old | 480 | 500 | 30.0 | 30.0 | 10.0 | 5.5 | 60.0 | 3.0 (2.0 + 1.0) | 8.0 | 1.0 |" \
        in text
    assert "| new | 480 | 500 | 30.0 | upstream's | 10.0 | 5.5 | 60.0 | 3.5 (2.0 + 1.5) | 9.0 | 1.0 |" \
        in text
    assert "; 3 of them" in text
    assert "| ratio matrix wall / sum of cold builds | **1.15** | <= 1.10 |" in text
    assert "| worst boot + test of a cell (tcg) | **5.5 s** | <= 6 s |" in text
    assert "| worst layer time of a tree | **3.5 s** | <= 5 s |" in text


def test_bench_reads_the_machines_cpu_time_from_proc_stat():
    """proc(5)'s cpu line in USER_HZ ticks: user nice system idle iowait irq
    softirq steal; a guest's time is already in user, steal is neither."""
    from taintport.run import bench
    stat = "cpu  1000 3000 500 9000 200 10 40 70 5 0\ncpu0 1 2 3 4 5 6 7 8 9 0\nintr 1\n"
    assert bench.cpu_time(stat, 100) == bench.CpuTime(busy=45.5, idle=92.0)
    assert bench.cpu_time("cpu 100 0 100 400\n", 100) == bench.CpuTime(busy=2.0, idle=4.0)
    with pytest.raises(RunError, match="cpu line"):
        bench.cpu_time("intr 1\n", 100)
    assert bench.CpuTime(10.0, 4.0) - bench.CpuTime(3.0, 1.0) == bench.CpuTime(7.0, 3.0)
    assert bench.CpuTime(10.0, 4.0) + bench.CpuTime(3.0, 1.0) == bench.CpuTime(13.0, 5.0)
    # the real file parses, and time only moves forward
    before = bench.machine_cpu()
    after = bench.machine_cpu()
    assert after.busy >= before.busy and after.idle >= before.idle
    result, seconds, cpu = bench.metered(sum, [1, 2])
    assert result == 3 and seconds >= 0 and cpu.busy >= 0 and cpu.idle >= 0


def test_bench_table_bounds_the_ratio_by_the_work_beside_the_cold_builds():
    """2600 core-seconds on 2 cores cannot take less than 1300 s, whatever
    the schedule: against 1100 s of cold builds the ratio is 1.18 at best."""
    from taintport.run import bench
    work = bench.Work(bench.CpuTime(2600.0, 80.0), bench.CpuTime(2150.0, 90.0), 2)
    assert work.beside == 450.0
    assert work.least_wall() == 1300.0
    text = bench.work_table(work, 1340.0, 1100.0)
    assert "| the matrix (busy / idle) | 2600 / 80 |" in text
    assert "| the standalone cold builds (busy / idle) | 2150 / 90 |" in text
    assert "| **450** |" in text
    assert "| the matrix's least wall on 2 cores, against the sum of cold builds " \
        "| 1300 s: **1.18** (ran 1.22) |" in text


def test_bench_keeps_the_hand_written_part_of_benchmarks_md(tmp_path):
    from taintport.run import bench
    path = tmp_path / "benchmarks.md"
    bench.write("# Benchmarks\n\nold table\n", path)
    text = path.read_text()
    assert text.startswith("# Benchmarks\n\nold table\n\n" + bench.KEPT)
    path.write_text(text + "\n## A cost measured by hand\n\n42 s\n")
    bench.write("# Benchmarks\n\nnew table\n", path)
    text = path.read_text()
    assert "old table" not in text and "new table" in text
    assert text.endswith(bench.KEPT + "\n\n## A cost measured by hand\n\n42 s\n")


def test_a_reader_that_goes_away_is_no_traceback(tmp_path):
    """`taintport versions | head -0`: the pipe is closed before taintport
    writes; it stops quietly with the status SIGPIPE would give, no traceback."""
    import signal
    env = dict(os.environ, TAINTPORT_CACHE=str(tmp_path / "cache"))
    proc = subprocess.Popen([*TAINTPORT, "versions"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    proc.stdout.close()
    said = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 128 + signal.SIGPIPE, said
    assert "Traceback" not in said and "Exception ignored" not in said, said
