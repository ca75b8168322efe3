# SPDX-License-Identifier: GPL-2.0
"""quilt variants on a small tree of our own: real quilt, real patch."""
import io
import os

import pytest

from taintport.errors import InputError
from taintport.judge import verdict
from taintport.tree import series, variants
from taintport.tree.variants import named

FULL = variants.table().full_state()

ORIGINAL = "int a;\nint b;\nint c;\nint d;\nint e;\n"


def patch(path, old, new, name="f.c"):
    import difflib
    diff = difflib.unified_diff(old.splitlines(True), new.splitlines(True),
                                f"a/{name}", f"b/{name}")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("Subject: test\n---\n" + "".join(diff))


@pytest.fixture
def setup(tmp_path):
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "f.c").write_text(ORIGINAL)
    qdir = tmp_path / "quilt" / "v"
    reverted = ORIGINAL.replace("int c;", "int c_reverted;")
    patch(qdir / "reverted" / "0001.patch", ORIGINAL, reverted)
    patch(qdir / "backported" / "0001.patch", reverted, ORIGINAL)
    (qdir / "series").write_text("# c\nreverted/0001.patch\n\nbackported/0001.patch\n")
    return tree, series.load("v", tmp_path / "quilt"), tmp_path / "log"


def test_variants_are_prefixes(setup):
    tree, s, log = setup
    assert s.for_variant(named("upstream")) == ()
    assert s.for_variant(named("reverted")) == ("reverted/0001.patch",)
    assert len(s.for_variant(named("backported"))) == 2


def test_switch_round_trip_and_identity(setup):
    tree, s, log = setup
    series.switch(tree, s, named("reverted"), log)
    assert "c_reverted" in (tree / "f.c").read_text()
    assert series.upstream_copy(tree, "f.c") != (tree / "f.c").read_bytes()
    before = os.stat(tree / "f.c").st_mtime
    touched = series.switch(tree, s, named("backported"), log)
    assert touched == {"f.c"}
    assert (tree / "f.c").read_text() == ORIGINAL
    assert series.upstream_copy(tree, "f.c") == (tree / "f.c").read_bytes()
    assert os.stat(tree / "f.c").st_mtime >= before
    series.switch(tree, s, named("upstream"), log)
    assert (tree / "f.c").read_text() == ORIGINAL
    assert series.current_variant(tree) == "upstream"


def test_patch_needing_fuzz_is_refused_with_hunk_and_tree_untouched(setup):
    tree, s, log = setup
    (tree / "f.c").write_text(ORIGINAL.replace("int b;", "int B;"))
    before = (tree / "f.c").read_bytes()
    with pytest.raises(InputError) as err:
        series.switch(tree, s, named("reverted"), log)
    assert "without fuzz" in str(err.value)
    assert "f.c, hunk #1" in str(err.value)
    assert "-int c;" in str(err.value)
    assert (tree / "f.c").read_bytes() == before
    assert series.current_variant(tree) == "", "nothing pushed"


def test_unknown_variant_lists_valid():
    with pytest.raises(InputError, match="valid: upstream, shipped, reverted, backported"):
        named("fixed")
    with pytest.raises(InputError, match="unknown variant"):
        named(FULL.name)  # never built: no cell, no --variant


def test_series_line_outside_groups_is_named(tmp_path):
    qdir = tmp_path / "v"
    qdir.mkdir()
    (qdir / "x.patch").write_text("")
    (qdir / "series").write_text("x.patch\n")
    with pytest.raises(InputError, match=r"series:1: 'x.patch' is not in a group"):
        series.load("v", tmp_path)


def test_missing_patch_file_is_named(tmp_path):
    qdir = tmp_path / "v"
    qdir.mkdir()
    (qdir / "series").write_text("reverted/gone.patch\n")
    with pytest.raises(InputError, match=r"series:1: patch file .*gone.patch does not exist"):
        series.load("v", tmp_path)


def test_repository_series_load():
    s = series.load("bookworm-6.1")
    assert s.for_variant(named("reverted"))


def test_full_group_is_a_state_no_variant_builds_and_a_switch_leaves_its_files_alone(tmp_path):
    """reverted-full/ loads and pushes like any group, but no variant applies it:
    a switch between the matrix's variants gives its file (panic.h in the real
    trees, which nearly every object includes) no fresh mtime."""
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "f.c").write_text(ORIGINAL)
    (tree / "h.h").write_text(ORIGINAL)
    qdir = tmp_path / "quilt" / "v"
    reverted = ORIGINAL.replace("int c;", "int c_reverted;")
    patch(qdir / "reverted" / "0001.patch", ORIGINAL, reverted)
    patch(qdir / "backported" / "0001.patch", reverted, ORIGINAL)
    group = FULL.groups[0]
    patch(qdir / group / "0001.patch", ORIGINAL, ORIGINAL.replace("int a;\n", ""),
          name="h.h")
    (qdir / "series").write_text("reverted/0001.patch\nbackported/0001.patch\n"
                                 f"{group}/0001.patch\n")
    s = series.load("v", tmp_path / "quilt")
    log = tmp_path / "log"
    assert s.for_variant(FULL) == (f"{group}/0001.patch",)
    booted = variants.table().booted()
    assert not any(p.startswith(group) for v in booted for p in s.for_variant(v))
    assert FULL not in booted
    old = 1_000_000_000
    os.utime(tree / "h.h", (old, old))
    assert series.switch(tree, s, named("reverted"), log) == {"f.c"}
    series.switch(tree, s, named("backported"), log)
    assert os.stat(tree / "h.h").st_mtime == old
    assert "h.h" not in series.sources(tree, s, named("backported"))
    series.switch(tree, s, FULL, log)
    assert "int a;" not in (tree / "h.h").read_text()
    # back from the full state, its file changed back: that one is touched
    assert "h.h" in series.switch(tree, s, named("upstream"), log)
    assert (tree / "h.h").read_text() == ORIGINAL


def chain_and_cells(tmp_path, ships):
    from types import SimpleNamespace

    from taintport.layer import fixes
    from taintport.cache import Cache
    from taintport.results.cells import Cell
    from taintport.run.progress import Progress
    from taintport.run.stages import Chain
    chain = Chain(Cache(tmp_path / "cache"), tmp_path / "out", verdict.load(fixes.NAMES),
                  Progress(0, stream=io.StringIO()), jobs=1, timeout=10)
    version = SimpleNamespace(name="v", ships=tuple(fixes.NAMES if ships else ()))
    upstream = Cell.new("v", named("upstream"), {})
    upstream.status = verdict.Status.AS_EXPECTED
    upstream.checks = [verdict.Check(name="signed.loads", expected=True, observed=True)]
    upstream.kernel_release = "6.12.0"
    return chain, version, upstream, Cell.new("v", named("backported"), {})


def test_backported_byte_identical_to_upstream_takes_its_cell(setup, tmp_path):
    """On a tree that ships every fix, reverted + the layer is upstream's
    kernel again: its build and boot are taken, with both host checks."""
    tree, s, log = setup
    chain, version, upstream, backported = chain_and_cells(tmp_path, ships=True)
    assert chain.reuse_identical(version, tree, s, backported, lambda: {"upstream": upstream})
    assert backported.reused_from == named("upstream")
    assert backported.status is upstream.status
    assert backported.kernel_release == "6.12.0"
    assert [c.name for c in backported.checks] == [
        "backported_sources_identical_to_upstream",
        "backported_sources_identical_to_patched", "signed.loads"]
    assert all(c.matches for c in backported.checks)


def test_backported_is_built_when_it_differs_or_is_judged_otherwise(setup, tmp_path):
    tree, s, log = setup
    chain, version, upstream, backported = chain_and_cells(tmp_path, ships=False)
    assert not chain.reuse_identical(version, tree, s, backported,
                                     lambda: {"upstream": upstream}), \
        "a tree that lacks the fixes: upstream is expected to fail, backported to pass"
    chain, version, upstream, backported = chain_and_cells(tmp_path, ships=True)
    upstream.status = verdict.Status.ERROR
    assert not chain.reuse_identical(version, tree, s, backported, lambda: {"upstream": upstream})
    assert not chain.reuse_identical(version, tree, s, backported, lambda: {"upstream": None})
    chain, version, upstream, backported = chain_and_cells(tmp_path, ships=True)
    layer = s.directory / "backported" / "0001.patch"
    patch(layer, ORIGINAL.replace("int c;", "int c_reverted;"),
          ORIGINAL.replace("int c;", "int c_layer;"))
    asked = []
    assert not chain.reuse_identical(version, tree, s, backported,
                                     lambda: asked.append(1) or {"upstream": upstream})
    assert backported.reused_from is None and not backported.checks
    assert not asked, "a variant that differs waits for no other cell's boot"



def test_a_switch_keeps_the_applied_prefix_and_pops_a_changed_patch(setup):
    """reverted -> backported pushes only the layer; a reverted patch that
    changed since it was pushed is popped and pushed again as it is now."""
    tree, s, log = setup
    series.switch(tree, s, named("reverted"), log)
    log.write_text("")
    series.switch(tree, s, named("backported"), log)
    pushes = [line for line in log.read_text().splitlines() if line.startswith("$ quilt")]
    assert pushes == ["$ quilt push --fuzz=0"], "reverted/0001 stays applied"
    assert (tree / "f.c").read_text() == ORIGINAL
    series.switch(tree, s, named("reverted"), log)
    assert "c_reverted" in (tree / "f.c").read_text()
    again = ORIGINAL.replace("int c;", "int c_reverted_again;")
    patch(s.directory / "reverted" / "0001.patch", ORIGINAL, again)
    patch(s.directory / "backported" / "0001.patch", again, ORIGINAL)
    series.switch(tree, s, named("backported"), log)
    assert (tree / "f.c").read_text() == ORIGINAL
    series.switch(tree, s, named("reverted"), log)
    assert "c_reverted_again" in (tree / "f.c").read_text()
    series.switch(tree, s, named("upstream"), log)
    assert (tree / "f.c").read_text() == ORIGINAL
