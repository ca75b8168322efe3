# SPDX-License-Identifier: GPL-2.0
"""The patch headers taintport writes, held to DEP-3's field rules and to the
shape the Debian kernel team gives the upstream fixes it carries
(docs/patch-headers.md; consumer_checks.dep3_problems and
team_shape_problems): the committed quilt patches, and what `apply --export`
writes for a maintainer's own tree, into any folder and into a Debian source
package's debian/patches."""
import subprocess
import sys
from pathlib import Path

import pytest

from consumer_checks import LINUS, NOTE, dep3_problems, team_shape_problems
from taintport.layer import debian_patches
from test_layer import _tree_with_livepatch

REPO = Path(__file__).resolve().parents[2]
TAINTPORT = [sys.executable, str(REPO / "tools" / "taintport")]
TEAM = sorted((Path(__file__).parent / "data" / "debian-patches").glob("*.header"))
GENERATED = sorted(p for group in ("backported", "patched")
                   for p in (REPO / "quilt").glob(f"*/{group}/*.patch"))
SENDER = "Jane Maintainer <jane@example.org>"
# the Debian kernel team's series, cut to the blocks around where upstream fixes go
DEBIAN_SERIES = """\
debian/gitignore.patch

# Arch bug fixes
bugfix/x86/perf-tools-fix-unwind-build-on-i386.patch

# Miscellaneous bug fixes
bugfix/all/disable-some-marvell-phys.patch
bugfix/all/fs-add-module_softdep-declarations-for-hard-coded-cr.patch

# Miscellaneous features

# Security fixes
bugfix/all/rxrpc-input-Open-code-skb_unshare.patch

# ABI maintenance
"""


def own_tree(root, series, mask):
    """A tree of one's own with the unsigned fix, the livepatch mask given, and
    a top Makefile of that kernel series."""
    tree = _tree_with_livepatch(root, ".res", mask)
    major, minor = series.split(".")
    (tree / "Makefile").write_text(f"VERSION = {major}\nPATCHLEVEL = {minor}\nSUBLEVEL = 0\n")
    return tree


def export(tree, out, *extra):
    proc = subprocess.run([*TAINTPORT, "apply", "--tree", str(tree), "--export", str(out),
                           *extra], capture_output=True, text=True, timeout=300,
                          cwd=tree.parent, env={"PATH": "/usr/bin:/bin", "HOME": str(out.parent)})
    print(proc.stdout, proc.stderr)
    return proc


@pytest.mark.parametrize("path", TEAM, ids=lambda p: p.stem)
def test_the_rules_accept_the_debian_kernel_teams_own_patches(path):
    """The rules describe the team's shape: a cherry-pick and an adapted backport
    from linux 6.1.176-1's debian/patches pass them."""
    text = path.read_text()
    assert dep3_problems(text) == [] and team_shape_problems(text) == []


def test_the_rules_refuse_the_headers_taintport_wrote_before():
    """What regen wrote at 51a9ccc: Origin after the free text, `Forwarded: no;
    it belongs...` (formally "forwarded"), a note naming our own files."""
    old = subprocess.run(["git", "show", "51a9ccc:quilt/bookworm-6.1/patched/"
                          "0001-tracepoint-Allow-livepatch-module-add-trace-event.patch"],
                         cwd=REPO, capture_output=True, text=True, check=True).stdout
    assert any("Forwarded" in p for p in dep3_problems(old))
    problems = team_shape_problems(old)
    assert any("not From, [Date,] Subject, Origin" in p for p in problems)
    assert any("Signed-off-by chain" in p for p in problems)
    assert any("our own files" in p for p in problems)


@pytest.mark.parametrize("path", GENERATED, ids=lambda p: str(p.relative_to(REPO / "quilt")))
def test_every_committed_generated_patch_has_the_teams_shape(path):
    text = path.read_text()
    assert dep3_problems(text) == [] and team_shape_problems(text) == []
    if path.name.endswith("livepatch-module-add-trace-event.patch"):
        # upstream's own hunk wherever the tree has upstream's mask: all but 5.10
        assert ("Origin: upstream, " in text) == ("bullseye-5.10" not in str(path)), path
    elif path.name.endswith("modules-with-TAINT_TEST.patch"):
        # carried onto the reverted trees' v5.19 mask: upstream's own hunk
        assert "Origin: upstream, " in text and "bullseye-5.10" not in str(path), path
    else:
        # the unsigned fix: two commits folded, only the pieces the tree lacks
        assert "Origin: backport, " in text and "57673c2b0baa" in text


def test_upstreams_word_for_word_is_origin_upstream_with_no_note(tmp_path):
    tree = own_tree(tmp_path / "tree", "6.1", "livepatch_has-bad-taint-test.c")
    proc = export(tree, tmp_path / "out", "--signoff", SENDER)
    assert proc.returncode == 0, proc.stderr
    (patch,) = (tmp_path / "out" / "taintport").glob("*.patch")
    text = patch.read_text()
    assert dep3_problems(text) == [] and team_shape_problems(text, SENDER) == []
    head = text.splitlines()[:5]
    assert head[3] == ("Origin: upstream, https://git.kernel.org/linus/"
                       "e7bb66f79a7b19a47b3eff745ea9f7ba1ae76032")
    assert head[4] == "Forwarded: not-needed"
    assert not NOTE.search(text)
    assert "Link: https://lkml.kernel.org/r/20221102160236.11696-1-iecedge@gmail.com" in text
    assert text.index("Signed-off-by: Steven Rostedt (Google)") < text.index(SENDER)


def test_an_adapted_hunk_is_a_backport_with_a_named_note(tmp_path):
    tree = own_tree(tmp_path / "tree", "5.10", "livepatch_has-bad-taint.c")
    proc = export(tree, tmp_path / "out", "--signoff", SENDER)
    assert proc.returncode == 0, proc.stderr
    (patch,) = (tmp_path / "out" / "taintport").glob("*.patch")
    text = patch.read_text()
    assert dep3_problems(text) == [] and team_shape_problems(text, SENDER) == []
    assert "Origin: backport, https://git.kernel.org/linus/e7bb66f79a7b" in text
    (note,) = NOTE.findall(text)
    assert note.startswith("[Jane Maintainer: Backported to 5.10: upstream's hunk rewraps ")
    lines = text.split("\n---\n")[0].splitlines()
    assert lines[-1] == f"Signed-off-by: {SENDER}", "the note, then the sender's sign-off"


def test_without_an_identity_the_tool_says_what_it_left_out(tmp_path):
    """No --signoff, no git identity (HOME without a .gitconfig): no name on the
    note, no Signed-off-by of the carrier, and the command line says so."""
    tree = own_tree(tmp_path / "tree", "5.10", "livepatch_has-bad-taint.c")
    proc = export(tree, tmp_path / "out")
    assert proc.returncode == 0, proc.stderr
    assert "no identity" in proc.stdout and "left out your Signed-off-by" in proc.stdout
    (patch,) = (tmp_path / "out" / "taintport").glob("*.patch")
    text = patch.read_text()
    assert dep3_problems(text) == [] and team_shape_problems(text) == []
    assert "[Backported to 5.10: " in text
    # the note last: upstream's chain ends before it, no sign-off after it
    assert text.split("\n---\n")[0].endswith("no other line changes]")
    assert text.count("Signed-off-by:") == 2


def test_gits_identity_signs_when_no_signoff_is_given(tmp_path):
    tree = own_tree(tmp_path / "tree", "5.10", "livepatch_has-bad-taint.c")
    subprocess.run(["git", "init", "-q", str(tree)], check=True)
    for key, value in (("user.name", "Git Person"), ("user.email", "git@example.org")):
        subprocess.run(["git", "-C", str(tree), "config", key, value], check=True)
    proc = export(tree, tmp_path / "out")
    assert proc.returncode == 0 and "no identity" not in proc.stdout
    text = next((tmp_path / "out" / "taintport").glob("*.patch")).read_text()
    assert "[Git Person: Backported to 5.10:" in text
    assert team_shape_problems(text, "Git Person <git@example.org>") == []


@pytest.mark.parametrize("bad", ["Jane", "<jane@example.org>", "Jane <jane>", "J <a@b> x"])
def test_a_signoff_that_is_no_identity_is_refused(tmp_path, bad):
    tree = own_tree(tmp_path / "tree", "6.1", "livepatch_has-bad-taint-test.c")
    proc = export(tree, tmp_path / "out", "--signoff", bad)
    assert proc.returncode == 2 and "--signoff" in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "out").exists()


def test_export_into_debian_patches_goes_where_the_team_puts_upstream_fixes(tmp_path):
    """bugfix/all/<subject>.patch, unnumbered, listed at the end of the
    "# Miscellaneous bug fixes" block; every other line kept."""
    tree = own_tree(tmp_path / "tree", "6.1", "livepatch_has-bad-taint-test.c")
    patches = tmp_path / "linux-6.1.176" / "debian" / "patches"
    patches.mkdir(parents=True)
    (patches / "series").write_text(DEBIAN_SERIES)
    proc = export(tree, patches, "--signoff", SENDER)
    assert proc.returncode == 0, proc.stderr
    name = "bugfix/all/tracepoint-Allow-livepatch-module-add-trace-event.patch"
    assert (patches / name).is_file() and not (patches / "taintport").exists()
    lines = (patches / "series").read_text().splitlines()
    misc = lines.index("# Miscellaneous bug fixes")
    assert lines[misc + 1:misc + 4] == [
        "bugfix/all/disable-some-marvell-phys.patch",
        "bugfix/all/fs-add-module_softdep-declarations-for-hard-coded-cr.patch", name]
    assert [line for line in lines if line != name] == DEBIAN_SERIES.splitlines()
    # the same export again (a rerun after a kill) writes nothing and lists nothing twice
    listed = (patches / "series").read_text()
    again = export(tree, patches, "--signoff", SENDER)
    assert again.returncode == 0 and (patches / "series").read_text() == listed
    # a patch changed since is never overwritten
    (patches / name).write_text((patches / name).read_text() + "\n")
    changed = export(tree, patches, "--signoff", SENDER)
    assert changed.returncode == 2 and "exists" in changed.stderr


def test_series_placement_without_the_teams_comment():
    assert debian_patches.listed("a.patch\nbugfix/all/x.patch\n# tools\nt.patch\n",
                                 ["bugfix/all/y.patch"]) == \
        "a.patch\nbugfix/all/x.patch\nbugfix/all/y.patch\n# tools\nt.patch\n"
    assert debian_patches.listed("", ["bugfix/all/y.patch"]) == "bugfix/all/y.patch\n"
    listed = "bugfix/all/y.patch -p1\n"
    assert debian_patches.listed(listed, ["bugfix/all/y.patch"]) == listed


def test_headers_name_no_path_of_the_machine(tmp_path):
    tree = own_tree(tmp_path / "deep" / "home" / "tree", "5.10", "livepatch_has-bad-taint.c")
    proc = export(tree, tmp_path / "out", "--signoff", SENDER)
    assert proc.returncode == 0
    text = next((tmp_path / "out" / "taintport").glob("*.patch")).read_text()
    assert str(tmp_path) not in text and "taintport" not in text.split("\n---\n")[0]
    assert LINUS.search(text)
