"""apply --tree DIR --export OUT: the layer written as a quilt series, the series kept."""
import subprocess
import sys
from pathlib import Path

from taintport import carry

from test_layer import _tree

REPO = Path(__file__).resolve().parents[2]
TAINTPORT = [sys.executable, str(REPO / "tools" / "taintport")]


def export(tree, out):
    proc = subprocess.run([*TAINTPORT, "apply", "--tree", str(tree), "--export", str(out)],
                          capture_output=True, text=True, timeout=300)
    print(proc.stdout, proc.stderr)
    return proc


def test_export_appends_to_an_existing_series_and_drops_no_line(tmp_path):
    tree = _tree(tmp_path / "tree", ".c")
    out = tmp_path / "patches"
    out.mkdir()
    (out / "my.patch").write_text("my own change\n")
    (out / "series").write_text("# mine\nmy.patch -p1")  # no newline at the end
    assert export(tree, out).returncode == 0
    assert (out / "series").read_text() == f"# mine\nmy.patch -p1\n{carry.PATCH_NAME}\n"
    assert export(tree, out).returncode == 0  # again: the line is there once
    assert (out / "series").read_text().count(carry.PATCH_NAME) == 1
    assert (out / carry.PATCH_NAME).is_file() and (out / "my.patch").is_file()


def test_append_series_starts_a_series_where_there_is_none(tmp_path):
    carry.append_series(tmp_path, ["a/1.patch", "a/2.patch"])
    carry.append_series(tmp_path, ["a/2.patch", "a/3.patch"])
    assert (tmp_path / "series").read_text() == "a/1.patch\na/2.patch\na/3.patch\n"
