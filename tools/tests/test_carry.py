# SPDX-License-Identifier: GPL-2.0
"""apply --tree DIR and --export DIR on a maintainer's tree: what is written, what is refused.

The trees are assembled from the fixtures (test_layer.py): a pre-3.15 tree
that lacks both fixes, and one with upstream's v6.1 mask, which lacks only
the livepatch fix. Everything runs the real command line; the faults the
layer must survive (kills, a full disk, an immutable file) are in
test_interrupt.py.
"""
import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from taintport.journal import JOURNAL
from taintport.layer import carry

from test_layer import SEMANTIC_PATCHES, _tree, _tree_with_livepatch

FIXTURES = SEMANTIC_PATCHES / "livepatch" / "tests"  # the mask shapes the livepatch fix knows

REPO = Path(__file__).resolve().parents[2]
TAINTPORT = [sys.executable, str(REPO / "tools" / "taintport")]
MAKEFILE = "VERSION = 3\nPATCHLEVEL = 10\nSUBLEVEL = 0\n"


def taintport(*args, env=None):
    proc = subprocess.run([*TAINTPORT, *map(str, args)], capture_output=True, text=True,
                          timeout=300, env=env)
    print(proc.stdout, proc.stderr)
    return proc


def lacking_both(root):
    """A tree that lacks both fixes: two patches, six files."""
    tree = _tree_with_livepatch(root, ".c", "livepatch_has-bad-taint-test.c")
    (tree / "Makefile").write_text(MAKEFILE)
    return tree


def lacking_livepatch(root, mask="livepatch_has-bad-taint-test.c"):
    """A tree with the unsigned fix whose tracing mask has the given shape."""
    tree = _tree_with_livepatch(root, ".res", mask)
    (tree / "Makefile").write_text(MAKEFILE)
    return tree


def snapshot(tree):
    return {str(p.relative_to(tree)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(Path(tree).rglob("*")) if p.is_file() or p.is_symlink()}


def test_export_appends_to_an_existing_series_and_drops_no_line(tmp_path):
    tree = _tree(tmp_path / "tree", ".c")
    (tree / "Makefile").write_text("VERSION = 3\nPATCHLEVEL = 10\n")
    out = tmp_path / "patches"
    out.mkdir()
    (out / "my.patch").write_text("my own change\n")
    (out / "series").write_text("# mine\nmy.patch -p1")  # no newline at the end
    proc = taintport("apply", "--tree", tree, "--export", out)
    assert proc.returncode == 0, proc.stderr
    lines = (out / "series").read_text().splitlines()
    assert lines[:2] == ["# mine", "my.patch -p1"]
    written = sorted(str(p.relative_to(out)) for p in (out / carry.FOLDER).glob("*.patch"))
    assert written and sorted(lines[2:]) == written
    assert (out / "my.patch").read_text() == "my own change\n"
    assert not (out / JOURNAL).exists()


def test_series_after_adds_only_what_is_missing():
    once = carry.series_after("", ["a/1.patch", "a/2.patch"])
    assert carry.series_after(once, ["a/2.patch", "a/3.patch"]) == \
        "a/1.patch\na/2.patch\na/3.patch\n"
    assert carry.series_after("# mine\nmy.patch -p1", ["a/1.patch"]) == \
        "# mine\nmy.patch -p1\na/1.patch\n"


def test_apply_pushes_the_layer_with_quilt_and_quilt_pops_it_back(tmp_path):
    tree = lacking_both(tmp_path / "t")
    before = snapshot(tree)
    proc = taintport("apply", "--tree", tree)
    assert proc.returncode == 0 and proc.stdout.count("  pushed: ") == 2
    expected = _tree_with_livepatch(tmp_path / "want", ".res", "livepatch_has-bad-taint-test.res")
    (expected / "Makefile").write_text(MAKEFILE)
    for rel in ("kernel/panic.c", "kernel/module.c", "include/trace/events/module.h"):
        assert (tree / rel).read_text() == (expected / rel).read_text(), rel
    assert (tree / ".pc" / "applied-patches").read_text().split() == \
        (tree / "patches" / "series").read_text().split()
    assert not (tree / JOURNAL).exists()
    env = {k: v for k, v in os.environ.items() if not k.startswith("QUILT_")}
    subprocess.run(["quilt", "--quiltrc=-", "pop", "-a"], cwd=tree, check=True, env=env,
                   capture_output=True)
    shutil.rmtree(tree / "patches")
    shutil.rmtree(tree / ".pc")
    assert snapshot(tree) == before
    assert "already upstream" in taintport("apply", "--tree", expected).stdout


# -------------------------------------------------- the smallest change, each shape
# A vendor's mask in each shape the semantic patch knows: apply --tree
# carries the livepatch fix alone (the unsigned fix is there in every one)
# and the file is the fixture's .res: only the lines the term needs change.

SHAPES = sorted(p.stem.split("_", 1)[1] for p in FIXTURES.glob("livepatch_*.c")
                if p.with_suffix(".res").exists() and "inline" not in p.stem)


@pytest.mark.parametrize("shape", SHAPES)
def test_apply_carries_each_mask_shape_changing_only_the_lines_it_needs(shape, tmp_path):
    tree = lacking_livepatch(tmp_path / "t", f"livepatch_{shape}.c")
    before = {p: p.read_bytes() for p in tree.rglob("*") if p.is_file()}
    proc = taintport("apply", "--tree", tree)
    assert proc.returncode == 0, proc.stderr
    assert "unsigned: already upstream; " in proc.stdout
    assert "; livepatch: carried livepatch" in proc.stdout
    assert (tree / "kernel/tracepoint.c").read_text() == \
        (FIXTURES / f"livepatch_{shape}.res").read_text()
    changed = [str(p.relative_to(tree)) for p, data in before.items() if p.read_bytes() != data]
    assert changed == ["kernel/tracepoint.c"]
    (patch,) = (tree / "patches" / carry.FOLDER).glob("*.patch")
    text = patch.read_text()
    hunk = [line for line in text.split("\n---\n", 1)[1].splitlines()
            if line[:1] in "+-" and not line.startswith(("+++", "---"))]
    removed = [line for line in hunk if line.startswith("-")]
    # upstream's hunk rewrites two lines; every other shape gives up one line
    upstreams = "Origin: upstream, " in text
    assert len(removed) == (2 if upstreams else 1), hunk
    assert upstreams == (shape in ("bool-own-line", "has-bad-taint-test", "comments")), text
    assert upstreams or "Backported to 3.10: upstream's hunk rewraps the last two lines" in \
        " ".join(text.split())


# ---------------------------------------------------------- clear refusals
# Each is exit 2, names the file, the piece and the cause, and leaves the tree
# byte for byte as it was: no .pc/, no patches/, no journal.

def _refused(tree, *words):
    before = snapshot(tree)
    proc = taintport("apply", "--tree", tree)
    assert proc.returncode == 2, proc.stdout
    assert "Traceback" not in proc.stderr
    for word in words:
        assert word in proc.stderr, (word, proc.stderr)
    assert "is unchanged (checksums of" in proc.stderr
    assert snapshot(tree) == before
    return proc


def test_a_crlf_file_is_refused_naming_file_piece_and_cause(tmp_path):
    tree = lacking_livepatch(tmp_path / "t")
    path = tree / "kernel/tracepoint.c"
    path.write_bytes(path.read_bytes().replace(b"\n", b"\r\n"))
    # the piece that must write the file is named (the present one only reads it)
    _refused(tree, "kernel/tracepoint.c", "layer piece livepatch", "CRLF")


def test_a_symlinked_file_is_refused_and_never_written_through(tmp_path):
    tree = lacking_livepatch(tmp_path / "t")
    outside = tmp_path / "elsewhere.c"
    shutil.move(tree / "kernel/tracepoint.c", outside)
    (tree / "kernel/tracepoint.c").symlink_to(outside)
    kept = outside.read_bytes()
    _refused(tree, "kernel/tracepoint.c", "symbolic link", "layer piece")
    assert outside.read_bytes() == kept


def test_a_file_that_is_not_utf8_is_refused_without_a_traceback(tmp_path):
    tree = lacking_livepatch(tmp_path / "t")
    path = tree / "kernel/tracepoint.c"
    path.write_bytes(b"/* Copyright J\xe9r\xf4me */\n" + path.read_bytes())
    _refused(tree, "kernel/tracepoint.c", "UTF-8", "0xe9 at line 1", "layer piece")


def test_a_missing_file_is_named_where_the_trees_version_keeps_it(tmp_path):
    tree = lacking_livepatch(tmp_path / "t")
    (tree / "Makefile").write_text("VERSION = 6\nPATCHLEVEL = 1\nSUBLEVEL = 0\n")
    (tree / "kernel/module").mkdir()
    shutil.move(tree / "kernel/module.c", tree / "kernel/module/main.c")
    (tree / "kernel/module/main.c").unlink()
    proc = _refused(tree, "kernel/module/main.c", "file not found")
    assert "kernel/module.c" not in proc.stderr


def test_unapplied_user_patches_before_the_layer_are_refused(tmp_path):
    tree = lacking_livepatch(tmp_path / "t")
    (tree / "patches").mkdir()
    (tree / "patches" / "mine.patch").write_text(
        "--- a/Makefile\n+++ b/Makefile\n@@ -1 +1 @@\n-VERSION = 3\n+VERSION = 3\n")
    (tree / "patches" / "series").write_text("mine.patch\n")
    _refused(tree, "lists patches quilt has not applied: mine.patch", "push them")


def test_quilt_variables_of_the_caller_move_nothing_out_of_the_tree(tmp_path):
    tree = lacking_livepatch(tmp_path / "t")
    elsewhere = tmp_path / "elsewhere"
    env = dict(os.environ, QUILT_PC=str(elsewhere / "pc"), QUILT_PATCHES=str(elsewhere / "p"),
               QUILT_SERIES=str(elsewhere / "series"), QUILT_PATCH_OPTS="--fuzz=3 -R")
    proc = taintport("apply", "--tree", tree, env=env)
    assert proc.returncode == 0, proc.stderr
    assert not elsewhere.exists()
    assert (tree / ".pc" / "applied-patches").read_text().split() == \
        ["taintport/0001-tracepoint-Allow-livepatch-module-add-trace-event.patch"]
    assert (tree / "kernel/tracepoint.c").read_text() == \
        (FIXTURES / "livepatch_has-bad-taint-test.res").read_text()


def test_export_refuses_to_write_through_a_link(tmp_path):
    tree = lacking_livepatch(tmp_path / "t")
    out = tmp_path / "out"
    out.mkdir()
    target = tmp_path / "their-series"
    target.write_text("theirs.patch\n")
    (out / "series").symlink_to(target)
    proc = taintport("apply", "--tree", tree, "--export", out)
    assert proc.returncode == 2 and "symbolic link" in proc.stderr
    assert target.read_text() == "theirs.patch\n"
    assert sorted(p.name for p in out.iterdir()) == ["series"]
