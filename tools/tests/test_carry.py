"""apply --tree DIR --export OUT: the layer's patches written, OUT's series kept."""
import subprocess
import sys
from pathlib import Path

from taintport.layer import carry

from test_layer import _tree

REPO = Path(__file__).resolve().parents[2]
TAINTPORT = [sys.executable, str(REPO / "tools" / "taintport")]


def test_export_appends_to_an_existing_series_and_drops_no_line(tmp_path):
    tree = _tree(tmp_path / "tree", ".c")
    (tree / "Makefile").write_text("VERSION = 3\nPATCHLEVEL = 10\n")
    out = tmp_path / "patches"
    out.mkdir()
    (out / "my.patch").write_text("my own change\n")
    (out / "series").write_text("# mine\nmy.patch -p1")  # no newline at the end
    proc = subprocess.run([*TAINTPORT, "apply", "--tree", str(tree), "--export", str(out)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    lines = (out / "series").read_text().splitlines()
    assert lines[:2] == ["# mine", "my.patch -p1"]
    written = sorted(str(p.relative_to(out)) for p in (out / carry.FOLDER).glob("*.patch"))
    assert written and sorted(lines[2:]) == written
    assert (out / "my.patch").read_text() == "my own change\n"


def test_append_series_adds_only_what_is_missing(tmp_path):
    carry.append_series(tmp_path, ["a/1.patch", "a/2.patch"])
    carry.append_series(tmp_path, ["a/2.patch", "a/3.patch"])
    assert (tmp_path / "series").read_text() == "a/1.patch\na/2.patch\na/3.patch\n"
