"""The layer on the five distribution trees and on a maintainer's own tree.

Needs the kernel sources (fetched into the cache on first use, about 15 s
each); no kernel is built here.
"""
import shutil
from contextlib import contextmanager
import subprocess
import sys
from pathlib import Path

import pytest

from taintport import fetch, layer, series, versions
from taintport.cache import Cache

REPO = Path(__file__).resolve().parents[2]
TAINTPORT = [sys.executable, str(REPO / "tools" / "taintport")]
NAMES = [v.name for v in versions.all_versions()]
# the files the pieces live in, for a small tree of one's own
PIECE_FILES = ("include/linux/kernel.h", "include/linux/panic.h", "kernel/panic.c",
               "kernel/module.c", "kernel/module/main.c", "kernel/tracepoint.c",
               "include/trace/events/module.h")

pytestmark = pytest.mark.e2e


@contextmanager
def held_tree(name):
    """The fetched source tree of a version, with the version's lock held."""
    version = versions.select([name])[0]
    cache = Cache()
    with cache.locked(name):
        yield cache, fetch.fetch(cache, version,
                                 cache.root / "logs" / f"fetch-{name}.log").tree


def taintport(*args):
    proc = subprocess.run([*TAINTPORT, *args], capture_output=True, text=True)
    print(proc.stdout, proc.stderr)
    return proc


@pytest.mark.parametrize("name", NAMES)
def test_committed_series_is_fresh_identical_and_idempotent(name):
    """regen --check: no drift, upstream gets an empty change, reverted+layer == upstream."""
    proc = taintport("regen", "--check", "--versions", name)
    assert proc.returncode == 0
    assert "up to date" in proc.stdout and "already upstream" in proc.stdout


@pytest.mark.parametrize("name", NAMES)
def test_inspect_reports_every_piece_present(name):
    with held_tree(name) as (cache, tree):
        series.switch(tree, series.load(name), "upstream", cache.root / "logs" / "t.log")
        proc = taintport("inspect", "--tree", str(tree))
    assert proc.returncode == 0
    assert proc.stdout.count(" present ") == len(layer.PIECES)


@pytest.fixture(scope="module")
def small_reverted_tree(tmp_path_factory):
    """bookworm 6.1's piece files, reverted, laid out as a tree of one's own."""
    name = "bookworm-6.1"
    base = tmp_path_factory.mktemp("own")
    with held_tree(name) as (cache, tree):
        for variant in ("upstream", "reverted"):
            series.switch(tree, series.load(name), variant, cache.root / "logs" / "t.log")
            out = base / variant
            (out / "kernel").mkdir(parents=True)
            shutil.copy2(tree / "Makefile", out / "Makefile")
            for rel in PIECE_FILES:
                if (tree / rel).exists():
                    (out / rel).parent.mkdir(parents=True, exist_ok=True)
                    shutil.copy2(tree / rel, out / rel)
    return base


def snapshot(tree):
    return {p.relative_to(tree): p.read_bytes() for p in sorted(tree.rglob("*"))
            if p.is_file()}


def test_apply_own_tree_gives_upstream_back(small_reverted_tree, tmp_path):
    tree = tmp_path / "t"
    shutil.copytree(small_reverted_tree / "reverted", tree)
    proc = taintport("apply", "--tree", str(tree))
    assert proc.returncode == 0 and "pushed as" in proc.stdout
    for rel in PIECE_FILES:
        if (tree / rel).exists():
            assert (tree / rel).read_bytes() == (small_reverted_tree / "upstream" / rel).read_bytes()
    again = taintport("apply", "--tree", str(small_reverted_tree / "upstream"))
    assert again.returncode == 0 and "already upstream" in again.stdout


def test_export_writes_series_and_leaves_tree(small_reverted_tree, tmp_path):
    tree = small_reverted_tree / "reverted"
    before = snapshot(tree)
    proc = taintport("apply", "--tree", str(tree), "--export", str(tmp_path / "out"))
    assert proc.returncode == 0
    assert (tmp_path / "out" / "series").read_text().startswith("taintport/")
    text = next((tmp_path / "out" / "taintport").glob("*.patch")).read_text()
    assert "Origin: upstream, commit:66cc69e34e86" in text
    assert snapshot(tree) == before


def test_unknown_shape_errors_and_leaves_tree_unchanged(small_reverted_tree, tmp_path):
    tree = tmp_path / "t"
    shutil.copytree(small_reverted_tree / "reverted", tree)
    main = tree / "kernel" / "module" / "main.c"
    # a signature site rewritten beyond recognition
    main.write_text(main.read_text().replace("module verification failed",
                                             "signature check said no"))
    before = snapshot(tree)
    proc = taintport("apply", "--tree", str(tree))
    assert proc.returncode == 2
    assert "sigcheck" in proc.stderr and "kernel/module/main.c" in proc.stderr
    assert snapshot(tree) == before


def test_letter_that_conflicts_is_refused_naming_why(small_reverted_tree, tmp_path):
    """6.1 already shows unsigned modules as 'E' and 'X' is TAINT_AUX: X is refused."""
    tree = small_reverted_tree / "reverted"
    proc = taintport("apply", "--tree", str(tree), "--letter", "X",
                     "--export", str(tmp_path / "out"))
    assert proc.returncode == 2
    assert "layer piece letter: kernel/panic.c" in proc.stderr and "'X'" in proc.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("name", NAMES)
def test_every_patch_passes_the_trees_own_checkpatch(name):
    """Debian patches carry no Signed-off-by, hence --no-signoff; nothing else is waived."""
    with held_tree(name) as (cache, tree):
        for patch in series.load(name).patches:
            proc = subprocess.run(["perl", "scripts/checkpatch.pl", "--no-tree", "--no-signoff",
                                   str(REPO / "quilt" / name / patch)],
                                  cwd=tree, capture_output=True, text=True)
            assert "total: 0 errors, 0 warnings" in proc.stdout, proc.stdout
