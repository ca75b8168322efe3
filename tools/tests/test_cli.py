"""Bad names on the command line: an error that lists the valid ones, exit 2."""
import re
import subprocess
import sys
from pathlib import Path

from taintport import boot

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
    proc = taintport("--help")
    assert proc.returncode == 0
    for word in ("TAINT_UNSIGNED_MODULE", "upstream", "reverted", "backported", "Exit codes"):
        assert word in proc.stdout


def test_kvm_that_fails_falls_back_to_tcg(tmp_path):
    """A kernel image KVM cannot boot: the probe must pick TCG and say why."""
    bogus = tmp_path / "bzImage"
    bogus.write_bytes(b"\0" * 4096)
    accel = boot.probe(bogus, tmp_path)
    assert accel.name == "tcg"
    assert accel.reason


def test_inspect_of_a_tree_that_does_not_exist_is_an_error(tmp_path):
    proc = taintport("inspect", "--tree", str(tmp_path / "nonexistent"))
    assert proc.returncode == 2
    assert f"{tmp_path / 'nonexistent'}: no such folder" in proc.stderr


def test_a_piece_whose_file_is_absent_says_file_not_found(tmp_path):
    tree = _tree(tmp_path / "tree", ".c")
    (tree / "kernel" / "tracepoint.c").unlink()
    proc = taintport("inspect", "--tree", str(tree))
    assert re.search(r"^  tracepoint +missing +kernel/tracepoint.c +file not found$",
                     proc.stdout, re.M)
    proc = taintport("apply", "--tree", str(tree), "--export", str(tmp_path / "out"))
    assert proc.returncode == 2
    assert "kernel/tracepoint.c: expected the file" in proc.stderr
    assert "file not found" in proc.stderr
    assert not (tmp_path / "out").exists()


def test_bench_keeps_the_hand_written_part_of_benchmarks_md(tmp_path):
    from taintport import bench
    path = tmp_path / "benchmarks.md"
    bench.write("# Benchmarks\n\nold table\n", path)
    text = path.read_text()
    assert text.startswith("# Benchmarks\n\nold table\n\n" + bench.KEPT)
    path.write_text(text + "\n## A cost measured by hand\n\n42 s\n")
    bench.write("# Benchmarks\n\nnew table\n", path)
    text = path.read_text()
    assert "old table" not in text and "new table" in text
    assert text.endswith(bench.KEPT + "\n\n## A cost measured by hand\n\n42 s\n")
