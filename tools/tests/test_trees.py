# SPDX-License-Identifier: GPL-2.0
"""The layer on the five distribution trees and on a maintainer's own tree.

Needs the kernel sources (fetched into the cache on first use, about 15 s
each); no kernel is built here.
"""
import re
import shutil
from contextlib import contextmanager
import subprocess
import sys
from pathlib import Path

import pytest

from consumer_checks import (checkpatch, dep3_problems, git_am, git_repository, mailinfo,
                             send_email, team_shape_problems, upstream_lines)
from taintport import guest
from taintport.cache import Cache
from taintport.layer import fixes
from taintport.tree import fetch, series, versions
from taintport.tree.variants import named

REPO = Path(__file__).resolve().parents[2]
TAINTPORT = [sys.executable, str(REPO / "tools" / "taintport")]
NAMES = [v.name for v in versions.all_versions()]
# the files the pieces live in, for a small tree of one's own
PIECE_FILES = ("include/linux/kernel.h", "include/linux/panic.h", "kernel/panic.c",
               "kernel/module.c", "kernel/module/main.c", "kernel/tracepoint.c",
               "include/trace/events/module.h")

pytestmark = [pytest.mark.e2e, pytest.mark.users_cache]


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
    """regen --check: no drift; on the tree as shipped the layer carries exactly
    what the descriptor says it lacks; reverted + layer == shipped + layer."""
    proc = taintport("regen", "--check", "--versions", name)
    assert proc.returncode == 0
    assert "up to date" in proc.stdout
    ships = versions.select([name])[0].ships
    if set(ships) == set(fixes.NAMES):
        assert "as shipped: already upstream" in proc.stdout
    else:
        assert "unsigned: already upstream" in proc.stdout
        assert "livepatch: carried livepatch" in proc.stdout


@pytest.mark.parametrize("name", NAMES)
def test_inspect_lists_each_fix_as_the_descriptor_ships_it(name):
    ships = versions.select([name])[0].ships
    # the guest data says by hand where a fix has no meaning (5.10 has no TAINT_TEST)
    moot = {fix for fix, data in guest.load().fixes.items() if name in data.not_applicable}
    with held_tree(name) as (cache, tree):
        series.switch(tree, series.load(name), named("upstream"),
                      cache.root / "logs" / "t.log")
        proc = taintport("inspect", "--tree", str(tree))
    # exit 1 when a fix the tree can have is missing (as shipped: 5.10's and 6.1's livepatch)
    assert proc.returncode == (0 if set(ships) | moot == set(fixes.NAMES) else 1)
    for fix in fixes.FIXES:
        state = ("present" if fix.name in ships else
                 "not applicable" if fix.name in moot else "missing")
        assert re.search(rf"^{fix.name}:\s+{state}\s+{fix.commit[:12]}", proc.stdout, re.M)
        for spec in fix.pieces:  # piece by piece, with file:line
            assert re.search(rf"^  {spec.name}\s+{state}\s+\S+:\d+\s", proc.stdout, re.M), \
                spec.name


@pytest.fixture(scope="module")
def small_reverted_tree(tmp_path_factory):
    """bookworm 6.1's piece files, reverted, laid out as a tree of one's own."""
    name = "bookworm-6.1"
    base = tmp_path_factory.mktemp("own")
    with held_tree(name) as (cache, tree):
        for variant in ("upstream", "reverted", "patched"):
            series.switch(tree, series.load(name), named(variant),
                          cache.root / "logs" / "t.log")
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
    # 6.1's reverted state lacks all three fixes: the layer pushes one patch each
    assert proc.returncode == 0 and proc.stdout.count("  pushed: ") == len(fixes.NAMES)
    # 6.1 lacks the livepatch fix: the whole layer gives upstream + that fix
    for rel in PIECE_FILES:
        if (tree / rel).exists():
            assert (tree / rel).read_bytes() == (small_reverted_tree / "patched" / rel).read_bytes()
    again = taintport("apply", "--tree", str(small_reverted_tree / "patched"))
    assert again.returncode == 0 and "already upstream" in again.stdout


def test_export_writes_series_and_leaves_tree(small_reverted_tree, tmp_path):
    tree = small_reverted_tree / "reverted"
    before = snapshot(tree)
    proc = taintport("apply", "--tree", str(tree), "--export", str(tmp_path / "out"))
    assert proc.returncode == 0
    listed = (tmp_path / "out" / "series").read_text().split()
    assert listed == ["taintport/0001-module-add-TAINT_UNSIGNED_MODULE.patch",
                      "taintport/0002-tracepoint-Allow-trace-events-in-modules-with-TAINT_TEST.patch",
                      "taintport/0003-tracepoint-Allow-livepatch-module-add-trace-event.patch"]
    text = (tmp_path / "out" / listed[0]).read_text()
    assert "Origin: backport, https://git.kernel.org/linus/66cc69e34e86" in text
    # the header names the tree's series, and no path of this machine
    assert "Backported to 6.1: " in text and str(tree) not in text
    assert dep3_problems(text) == [] and team_shape_problems(text) == []
    assert snapshot(tree) == before


def test_the_61_livepatch_patch_is_upstreams_hunk_and_a_stable_mail(small_reverted_tree,
                                                                     tmp_path):
    """bookworm 6.1 as shipped: one patch, e7bb66f79a7b's own two lines."""
    tree = small_reverted_tree / "upstream"
    proc = taintport("apply", "--tree", str(tree), "--export", str(tmp_path / "q"))
    assert proc.returncode == 0
    (patch,) = (tmp_path / "q" / "taintport").glob("*.patch")
    text = patch.read_text()
    assert text.splitlines()[2:5] == [
        "Subject: tracepoint: Allow livepatch module add trace event",
        "Origin: upstream, https://git.kernel.org/linus/e7bb66f79a7b19a47b3eff745ea9f7ba1ae76032",
        "Forwarded: not-needed"]
    added = [line for line in text.splitlines() if line.startswith("+") and "<<" in line]
    assert added == ["+\t\t\t\t(1 << TAINT_UNSIGNED_MODULE) | (1 << TAINT_TEST) |",
                     "+\t\t\t\t(1 << TAINT_LIVEPATCH));"]
    assert "Backported" not in text
    assert dep3_problems(text) == [] and team_shape_problems(text) == []


SENDER = "Jane Maintainer <jane@example.org>"


@pytest.mark.parametrize("name", ["bookworm-6.1", "bullseye-5.10"])
def test_the_stable_mails_pass_the_trees_checkpatch_git_am_and_send_email(name, tmp_path):
    """The mail for each Debian tree that lacks the livepatch fix, through the
    tree's own scripts/checkpatch.pl, `git am -3` onto a git repository of the
    tree's files, `git mailinfo` and `git send-email` (dummy SMTP)."""
    with held_tree(name) as (cache, tree):
        series.switch(tree, series.load(name), named("upstream"), cache.root / "logs" / "t.log")
        proc = taintport("apply", "--tree", str(tree), "--export", str(tmp_path / "m"),
                         "--mail", "--signoff", SENDER)
        assert proc.returncode == 0, proc.stderr
        (mail,) = (tmp_path / "m").glob("*.patch")
        findings, output = checkpatch(tree, mail)
        files = {rel: (tree / rel).read_bytes() for rel in PIECE_FILES + ("Makefile",)
                 if (tree / rel).exists()}
    # only the stable rules' own "commit <sha> upstream." line is questioned
    assert {line for _, _, line in findings} <= upstream_lines(), output
    assert len(findings) <= 2, output
    text = mail.read_text()
    kernel = name.split("-")[1]
    assert f"Subject: [PATCH {kernel}.y] tracepoint: Allow livepatch module add trace event" \
        in text
    am = git_am(git_repository(tmp_path / "repo", files), mail)
    assert am.returncode == 0, am.stdout + am.stderr
    info, message, _ = mailinfo(mail)
    assert info["Author"] == "Jianlin Lv" and message.rstrip().endswith(SENDER)
    dry, sent, _ = send_email(mail, SENDER, tmp_path)
    assert dry.returncode == 0 and "Result: OK" in dry.stdout + dry.stderr
    assert sent is not None and f"Signed-off-by: {SENDER}" in sent


@pytest.mark.parametrize("name", ["bookworm-6.1", "bullseye-5.10"])
def test_exported_into_debian_patches_the_series_pushes_with_fuzz_0(name, tmp_path):
    """The tree as Debian ships it is its source package with debian/patches
    applied: the layer exported into a debian/patches-shaped folder after them
    lands in bugfix/all/ and `quilt push -a --fuzz=0` applies it there."""
    with held_tree(name) as (cache, tree):
        series.switch(tree, series.load(name), named("upstream"), cache.root / "logs" / "t.log")
        package = tmp_path / "linux"
        for rel in PIECE_FILES + ("Makefile",):
            if (tree / rel).exists():
                (package / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(tree / rel, package / rel)
    patches = package / "debian" / "patches"
    patches.mkdir(parents=True)
    (patches / "series").write_text("# Miscellaneous bug fixes\n\n# ABI maintenance\n")
    proc = taintport("apply", "--tree", str(package), "--export", str(patches),
                     "--signoff", SENDER)
    assert proc.returncode == 0, proc.stderr
    name_in_series = "bugfix/all/tracepoint-Allow-livepatch-module-add-trace-event.patch"
    assert (patches / "series").read_text().splitlines()[1] == name_in_series
    push = subprocess.run(["quilt", "--quiltrc=-", "push", "-a", "--fuzz=0"], cwd=package,
                          env={"QUILT_PATCHES": "debian/patches", "LC_ALL": "C",
                               "PATH": "/usr/bin:/bin"}, capture_output=True, text=True)
    assert push.returncode == 0, push.stdout + push.stderr
    assert "offset" not in push.stdout and "fuzz" not in push.stdout.lower()
    assert "(1 << TAINT_LIVEPATCH)" in (package / "kernel" / "tracepoint.c").read_text()


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
    """The hand-written groups (reverted/, reverted-full/) carry no Signed-off-by,
    hence --no-signoff for them (the generated ones keep upstream's); checkpatch may question only upstream's own message, which
    a patch keeps word for word (66cc69e's NAKed-by:); nothing else is waived."""
    with held_tree(name) as (cache, tree):
        for patch in series.load(name).patches:
            hand_written = patch.startswith(("reverted/", "reverted-full/"))
            findings, output = checkpatch(tree, REPO / "quilt" / name / patch,
                                          *(["--no-signoff"] if hand_written else []))
            assert {line for _, _, line in findings} <= upstream_lines(), output
