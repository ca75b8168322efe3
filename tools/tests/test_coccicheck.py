# SPDX-License-Identifier: GPL-2.0
"""The semantic patches as a spatch user runs them: the kernel's `make coccicheck`.

On bookworm's 6.1 (fetched into the cache with `taintport fetch` when absent;
no kernel is built), each of our .cocci files goes through the tree's own
scripts/coccicheck in every mode, COCCI= that file, M= the directory its
piece lives in, on two scratch copies of what coccicheck reads:

  lacking  quilt/bookworm-6.1/reverted/ applied (the sigcheck and tracepoint
           pieces gone; 6.1 never had the livepatch fix) and, here, the define
           and the letter entry taken out too, so that every file has
           something to find;
  fixed    the tree as Debian ships it plus quilt/bookworm-6.1/patched/ (the
           livepatch fix it lacks): every fix of the family.

The cached tree itself is only read: another run may be switching its quilt
variants, so the files quilt patches are taken from quilt's backups.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import NamedTuple

import pytest

from taintport import REPO
from taintport.cache import Cache
from taintport.family import SEMANTIC_PATCHES
from taintport.layer import engine, fixes, spatch
from taintport.layer.model import PieceState
from taintport.tree import series, versions
from taintport.tree.variants import named
from test_layer import DIFF_LINE, removed_lines

VERSION = "bookworm-6.1"
TAINTPORT = [sys.executable, str(REPO / "tools" / "taintport")]
MODES = ("patch", "report", "context", "org")
PIECES = [spec for spec in fixes.PIECES if spec.cocci]
# What coccicheck reads besides the directories it checks: the top Makefile
# (which wants the arch's), scripts/coccicheck, the tree's .cocciconfig and
# the headers it gives spatch with --include (include/linux/kconfig.h, ...).
COCCICHECK_NEEDS = ("Makefile", ".cocciconfig", "scripts", "arch/x86/Makefile", "include/linux")
# Taken out by hand, on top of the reverted patch: the kernel would not build
# without them, but coccicheck does not build.
TAKEN_OUT = {"include/linux/panic.h": "#define TAINT_UNSIGNED_MODULE\t\t13\n",
             "kernel/panic.c": "\t[ TAINT_UNSIGNED_MODULE ]\t= { 'E', ' ', true },\n"}
# scripts/coccicheck's own first lines, before spatch's output
BANNER = ('\nPlease check for false positives in the output before submitting a patch.\n'
          'When using "patch" mode, carefully review the patch before submitting it.\n\n')
# what the kernel's Makefile or coccicheck would read from the environment
KBUILD_ENV = ("V", "C", "O", "W", "SPFLAGS", "SPATCH", "sub_make_done")

pytestmark = [pytest.mark.e2e, pytest.mark.users_cache]


class Run(NamedTuple):
    out: str      # spatch's stdout, coccicheck's banner taken off
    err: str      # the spatch command and its stderr (coccicheck's DEBUG_FILE)


def _cached_tree():
    version = versions.select([VERSION])[0]
    tree = Cache().tree(version)
    if not (tree / "Makefile").is_file():   # extraction renames a whole tree into place
        subprocess.run([*TAINTPORT, "fetch", "--versions", VERSION], check=True)
    return tree


def _checked_dir(tree, spec):
    """M=: the directory of the file the piece lives in on this tree."""
    return next(str(Path(rel).parent) for rel in spec.paths if (tree / rel).is_file())


def _copy(tree, dest, rels):
    for rel in rels:
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        if (tree / rel).is_dir():
            shutil.copytree(tree / rel, dest / rel, symlinks=True)
        else:
            shutil.copy2(tree / rel, dest / rel)


def _outermost(rels):
    return sorted(r for r in rels if not any(Path(r).is_relative_to(o) and r != o for o in rels))


def _patch(tree, patch_text, *options):
    return subprocess.run(["patch", "-p1", "--fuzz=0", "--no-backup-if-mismatch", *options],
                          cwd=tree, input=patch_text, text=True, capture_output=True)


@pytest.fixture(scope="module")
def scratch():
    # two copies of ~45 MB each: gone after the module, not kept with pytest's tmp dirs
    with tempfile.TemporaryDirectory(prefix="taintport-coccicheck-") as top:
        yield Path(top)


@pytest.fixture(scope="module")
def states(scratch):
    tree = _cached_tree()
    fixed = scratch / "fixed"
    _copy(tree, fixed, _outermost(set(COCCICHECK_NEEDS) | {_checked_dir(tree, s) for s in PIECES}))
    quilt = series.load(VERSION)
    for rel in series.touched_files(quilt.directory / p for p in quilt.patches):
        if (fixed / rel).is_file():
            (fixed / rel).write_bytes(series.upstream_copy(tree, rel))
    reverted = "".join((quilt.directory / p).read_text()
                       for p in quilt.for_variant(named("reverted")))
    lacking = fixed.with_name("lacking")
    shutil.copytree(fixed, lacking, symlinks=True)
    # the reverted patches must apply (for real: a --dry-run of two patches to
    # one file checks the second against the unpatched file): else the copy
    # caught the cached tree mid-switch
    proc = _patch(lacking, reverted)
    assert proc.returncode == 0, f"the copy of {tree} is not upstream:\n{proc.stdout}"
    shipped = fixed.with_name("shipped")
    shutil.copytree(fixed, shipped, symlinks=True)
    patched = "".join((quilt.directory / p).read_text()
                      for p in quilt.for_variant(named("patched")))
    assert _patch(fixed, patched).returncode == 0
    for rel, line in TAKEN_OUT.items():
        text = (lacking / rel).read_text()
        assert text.count(line) == 1, (rel, line)
        (lacking / rel).write_text(text.replace(line, ""))
    return {"fixed": fixed, "lacking": lacking, "shipped": shipped}


def _coccicheck(tree, spec, mode, debug_file):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("MAKE", "MFLAGS", "KBUILD_")) and k not in KBUILD_ENV}
    proc = subprocess.run(
        ["make", "-s", "--no-print-directory", "-C", str(tree), "ARCH=x86_64", "coccicheck",
         f"MODE={mode}", f"COCCI={SEMANTIC_PATCHES / spec.cocci}",
         f"M={_checked_dir(tree, spec)}", "J=1", f"DEBUG_FILE={debug_file}",
         "SPFLAGS=" + " ".join([*spatch.SPATCH_PYTHON,
                                *(f"-D {name}={value}" for name, value in spec.defines)])],
        env=env, capture_output=True, text=True)
    err = debug_file.read_text() if debug_file.exists() else ""
    assert proc.returncode == 0, proc.stdout + proc.stderr + err
    assert proc.stdout.startswith(BANNER), proc.stdout
    return Run(proc.stdout[len(BANNER):], err + proc.stderr)


@pytest.fixture(scope="module")
def runs(states, scratch):
    """{(state, piece, mode): Run}, all run at once: one spatch job each."""
    logs = scratch / "debug"
    logs.mkdir()
    keys = [(state, spec.name, mode) for state in ("lacking", "fixed") for spec in PIECES
            for mode in MODES]
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        done = pool.map(lambda key: _coccicheck(states[key[0]], fixes.SPEC[key[1]], key[2],
                                                logs / "-".join(key)), keys)
        return dict(zip(keys, done))


def _places(mode, out):
    """(file, line) of every place a report, org or context output names."""
    if mode == "report":
        return {(f, int(n)) for f, n in re.findall(r"^(\S+?):(\d+):\d+-\d+: ", out, re.M)}
    if mode == "org":
        return {(f, int(n)) for f, n in
                re.findall(r"^\* TODO \[\[view:(\S+?)::face=ovl-face1::linb=(\d+)::", out, re.M)}
    return removed_lines(out)


def _missing(tree):
    """{piece: (file, line)} of the pieces a semantic patch carries that tree lacks."""
    return {p.name: (p.path, p.line) for fs in engine.inspect(tree, fixes.FIXES)
            for p in fs.pieces if p.state is PieceState.MISSING and fixes.SPEC[p.name].cocci}


def test_the_lacking_state_lacks_every_piece_6_1_has_a_semantic_patch_for(states):
    assert set(_missing(states["lacking"])) == {"define", "letter", "sigcheck", "tracepoint",
                                                "test", "livepatch"}
    assert _missing(states["fixed"]) == {}


@pytest.mark.parametrize("spec", PIECES, ids=[s.name for s in PIECES])
@pytest.mark.parametrize("mode", MODES)
def test_spatch_runs_cleanly(runs, spec, mode):
    for state in ("lacking", "fixed"):
        err = runs[state, spec.name, mode].err
        assert not [s for s in err.splitlines() if any(f in s for f in spatch.SPATCH_FAILURES)], err


@pytest.mark.parametrize("spec", PIECES, ids=[s.name for s in PIECES])
def test_patch_mode_prints_a_diff_and_nothing_else_that_applies(runs, states, spec):
    out = runs["lacking", spec.name, "patch"].out
    assert all(DIFF_LINE.match(s) for s in out.splitlines()), out
    assert bool(out) == (spec.name in _missing(states["lacking"]))
    proc = _patch(states["lacking"], out, "--dry-run")
    assert proc.returncode == 0, proc.stdout


def test_the_patches_together_give_upstream_s_code(states, scratch):
    """The fixes' patches, each made by coccicheck on the tree the fixes
    before it gave (upstream order: their hunks on the tracing mask would
    overlap otherwise), give the code of a tree that has them; only layout
    differs. The fixes 6.1 ships go from the lacking state to the tree as
    shipped; the fix it lacks from the tree as shipped to the fixed state."""
    ships = versions.select([VERSION])[0].ships
    for base, goal, chain in (("lacking", "shipped", [f for f in fixes.FIXES if f.name in ships]),
                              ("shipped", "fixed", [f for f in fixes.FIXES
                                                    if f.name not in ships])):
        work = scratch / f"together-{base}"
        shutil.copytree(states[base], work, symlinks=True)
        files = set()
        for fix in chain:
            for spec in (spec for spec in PIECES if spec in fix.pieces):
                diff = _coccicheck(work, spec, "patch", scratch / f"debug-{base}-{spec.name}").out
                files |= set(re.findall(r"^\+\+\+ b/(\S+)", diff, re.M))
                assert _patch(work, diff).returncode == 0, (fix.name, spec.name, diff)
        assert files, (base, goal)
        for rel in sorted(files):
            want = (states[goal] / rel).read_text()
            assert re.sub(r"\s", "", (work / rel).read_text()) == re.sub(r"\s", "", want), rel
        shutil.rmtree(work)


@pytest.mark.parametrize("spec", PIECES, ids=[s.name for s in PIECES])
@pytest.mark.parametrize("mode", ("report", "org", "context"))
def test_every_missing_piece_is_named_by_file_and_line(runs, states, spec, mode):
    missing = _missing(states["lacking"])
    expected = {missing[spec.name]} if spec.name in missing else set()
    out = runs["lacking", spec.name, mode].out
    assert _places(mode, out) == expected, out
    if mode == "context":
        assert all(DIFF_LINE.match(s) for s in out.splitlines()), out


@pytest.mark.parametrize("spec", PIECES, ids=[s.name for s in PIECES])
@pytest.mark.parametrize("mode", MODES)
def test_the_fixed_tree_prints_nothing(runs, spec, mode):
    assert runs["fixed", spec.name, mode].out == ""
