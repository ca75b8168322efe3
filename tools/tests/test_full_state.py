# SPDX-License-Identifier: GPL-2.0
"""The whole layer on the full pre-fix state of the five distribution trees.

quilt/<version>/reverted-full/ removes every fix a tree ships in every piece
(never built or booted); the layer carried onto it must give the tree as
shipped back, byte for byte. Needs the fetched trees (as test_trees.py does);
nothing is built, and the trees themselves are only read: the work happens
on scratch copies.
"""
import dataclasses
import re
import shutil

import pytest

from taintport.errors import InputError
from taintport.layer import fixes, regen
from taintport.tree import series, variants, versions
from taintport.tree.variants import named
from test_trees import NAMES, held_tree

pytestmark = [pytest.mark.e2e, pytest.mark.users_cache]
FULL = variants.table().full_state()
GROUP = FULL.groups[0]

# module-flags is not among them: on these trees module_flags_taint() loops over
# taint_flags[], so the per-module letters come back with the letter piece
UNSIGNED_CARRIED = "unsigned: carried define, letter, sigcheck, tracepoint, trace-event"


def full_state_copy(name, dest, log):
    """Upstream's copies of the files reverted-full/ touches, pushed to the full
    state with quilt --fuzz=0 in dest; returns (series, touched, upstream bytes)."""
    quilt = series.load(name)
    patches = quilt.for_variant(FULL)
    touched = sorted(series.touched_files(quilt.directory / p for p in patches))
    with held_tree(name) as (cache, tree):
        shipped = {rel: series.upstream_copy(tree, rel) for rel in touched}
    for rel, data in shipped.items():
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        (dest / rel).write_bytes(data)
    series.switch(dest, quilt, FULL, log)  # raises unless every push is fuzz-free
    return quilt, touched, shipped


@pytest.mark.parametrize("name", NAMES)
def test_full_state_applies_without_fuzz_and_leaves_no_trace_of_the_fixes(name, tmp_path):
    ships = versions.select([name])[0].ships
    quilt, touched, shipped = full_state_copy(name, tmp_path / "t", tmp_path / "log")
    assert series.current_variant(tmp_path / "t") == FULL.name
    assert set(touched) >= {"kernel/panic.c", "kernel/tracepoint.c",
                            "include/trace/events/module.h"}
    texts = {rel: (tmp_path / "t" / rel).read_text() for rel in touched}
    for rel, text in texts.items():
        assert "TAINT_UNSIGNED_MODULE" not in text, rel
        assert "UNSIGNED_MODULE," not in text, rel  # TAINT_FLAG(UNSIGNED_MODULE, ...)
    sig = [t for rel, t in texts.items() if "module verification failed" in t]
    assert len(sig) == 1 and re.search(r"module verification failed.*?add_taint_module\("
                                       r"mod, TAINT_FORCED_MODULE,", sig[0], re.S)
    flags = re.search(r"#define show_module_flags.*?\)\n", texts["include/trace/events/module.h"],
                      re.S).group(0)
    assert re.findall(r'"(.)" \}', flags) == ["P", "F", "C"]  # as before v3.15
    if "livepatch" in ships:
        assert "TAINT_LIVEPATCH)" not in texts["kernel/tracepoint.c"]
    if "test" in ships:  # the mask's term and the comment 54be5509422e rewrote
        assert "TAINT_TEST)" not in texts["kernel/tracepoint.c"]
        assert "test modules are fine" not in texts["kernel/tracepoint.c"]
    # and quilt pops it back to the tree as shipped
    series.switch(tmp_path / "t", quilt, named("upstream"), tmp_path / "log")
    assert all((tmp_path / "t" / rel).read_bytes() == shipped[rel] for rel in touched)


@pytest.mark.parametrize("name", NAMES)
def test_layer_on_the_full_state_gives_the_tree_as_shipped_back(name, tmp_path):
    version = versions.select([name])[0]
    with held_tree(name) as (cache, tree):
        full = regen.from_full_state(tree, series.load(name), version, tmp_path / "log",
                                     cache)
    print(f"{name}: layer {full.seconds:.1f}s; {full.summary}")
    assert full.summary.startswith(UNSIGNED_CARRIED)
    if "livepatch" in version.ships:
        assert full.summary.endswith("; livepatch: carried livepatch")
    assert ("; test: carried test" in full.summary) == ("test" in version.ships)
    assert {"kernel/panic.c", "kernel/tracepoint.c", "include/trace/events/module.h"} \
        <= set(full.compared)
    assert {"include/linux/panic.h", "include/linux/kernel.h"} & set(full.compared)
    assert {"kernel/module/main.c", "kernel/module.c"} & set(full.compared)


# each piece the full state removes, and the file a layer without it gets wrong
PIECE_FILE = {"define": "include/linux/panic.h", "letter": "kernel/panic.c",
              "sigcheck": "kernel/module/main.c", "tracepoint": "kernel/tracepoint.c",
              "trace-event": "include/trace/events/module.h"}


@pytest.mark.parametrize("piece", sorted(PIECE_FILE))
def test_a_piece_the_layer_does_not_regenerate_fails_naming_its_file(piece, tmp_path,
                                                                     monkeypatch):
    """The layer run with one piece's rule taken out: the check must fail, and
    say which file is not the tree as shipped."""
    name = "bookworm-6.1"
    unsigned = fixes.BY_NAME["unsigned"]
    without = dataclasses.replace(unsigned, pieces=tuple(
        spec for spec in unsigned.pieces if spec.name != piece))
    monkeypatch.setattr(fixes, "FIXES", tuple(without if f is unsigned else f
                                              for f in fixes.FIXES))
    version = versions.select([name])[0]
    with held_tree(name) as (cache, tree):
        with pytest.raises(InputError) as err:
            regen.from_full_state(tree, series.load(name), version, tmp_path / "log", cache)
    message = str(err.value)
    assert "is not byte-identical to the tree as shipped in" in message
    assert message.rsplit(" in ", 1)[1].split(", ") == [PIECE_FILE[piece]]


def test_a_full_state_that_leaves_a_fix_in_place_is_refused(tmp_path):
    """A reverted-full/ group that removes nothing: the layer has nothing to do."""
    name = "bookworm-6.1"
    quilt = tmp_path / "quilt"
    shutil.copytree(series.QUILT_DIR / name, quilt / name)
    keep = [line for line in (quilt / name / "series").read_text().splitlines()
            if not line.startswith(f"{GROUP}/")]
    (quilt / name / "series").write_text("\n".join(keep) + f"\n{GROUP}/0001.patch\n")
    (quilt / name / GROUP / "0001.patch").write_text(
        "Description: a comment only\n---\n--- a/kernel/tracepoint.c\n+++ b/kernel/tracepoint.c\n"
        + _comment_hunk(name))
    version = versions.select([name])[0]
    with held_tree(name) as (cache, tree):
        with pytest.raises(InputError, match=r"nothing to do for unsigned, test on the full "
                                             r"pre-fix state"):
            regen.from_full_state(tree, series.load(name, quilt), version,
                                  tmp_path / "log", cache)


def _comment_hunk(name):
    """A hunk that changes one comment line of the shipped kernel/tracepoint.c."""
    with held_tree(name) as (cache, tree):
        lines = series.upstream_copy(tree, "kernel/tracepoint.c").decode().splitlines(True)
    at = next(i for i, line in enumerate(lines) if "modules are fine" in line)
    return (f"@@ -{at + 1},1 +{at + 1},1 @@\n-{lines[at]}"
            f"+{lines[at].replace('are fine', 'are fine here')}")


def test_check_all_point_releases_runs_the_whole_layer_on_the_full_state(tmp_path):
    """`check --all-point-releases` on bookworm's pinned linux-source-6.1, as it
    checks every point release of that series: the layer as shipped, then
    carried onto the full pre-fix state, byte-identical to the files shipped."""
    from taintport.tree.archive.published import Published
    from taintport.layer import pointreleases
    from taintport.cache import Cache

    version = versions.select(["bookworm-6.1"])[0]
    published = Published(version.package, version.version, version.sha256,
                                version.size, version.suite)
    outcome = pointreleases.check_one(Cache(), version, published, tmp_path / "log",
                                      pointreleases.quilt_for(version.package, version.release,
                                                              [version]))
    print(outcome.verdict)
    assert not outcome.verdict.startswith("error"), outcome.verdict
    assert "unsigned: already upstream" in outcome.verdict
    assert re.search(r"; full pre-fix state: identical in \d+ files$", outcome.verdict)


def test_check_says_when_the_full_state_does_not_apply_to_a_point_release(tmp_path):
    """Another point release that moved the files: not checked, said so, not an error."""
    from taintport.layer import engine, fixes, pointreleases

    name = "bookworm-6.1"
    quilt = series.load(name)
    with held_tree(name) as (cache, tree):
        files = {rel: series.upstream_copy(tree, rel)
                 for rel in regen.full_state_files(quilt) if (tree / rel).is_file()}
    for rel, data in files.items():
        (tmp_path / "t" / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "t" / rel).write_bytes(data)
    panic = tmp_path / "t" / "kernel" / "panic.c"
    text = panic.read_text()
    assert text.count("{ 'I', ' ', false },") == 1
    # a context line of the reverted-full/ hunk changed, as a later point release might
    panic.write_text(text.replace("{ 'I', ' ', false },", "{ 'I', ' ', false }, /* moved */"))
    said = pointreleases.full_state(tmp_path / "t", quilt, name,
                                    engine.generate(tmp_path / "t", fixes.FIXES, None, cache),
                                    tmp_path / "log", cache)
    assert said.startswith(f"full pre-fix state not checked: reverted-full/ of {name} "
                           "does not apply"), said
