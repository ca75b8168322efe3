# SPDX-License-Identifier: GPL-2.0
"""The taintport layer: fixtures in the Coccinelle habit, whole trees, failures.

semantic-patches/<fix>/tests/<piece>_<case>.c is an input written in the
shape of one historical form. Its expected outcomes sit next to it:
  <piece>_<case>.res      the output with the default letter E
  <piece>_<case>.<L>.res  the output with letter L
  <piece>_<case>[.<L>].err text the LayerError must contain
Every .res is also run as an input: the fix already there, nothing changes.
"""
import hashlib
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
from conftest import fake_command

from taintport import REPO
from taintport.cache import Cache
from taintport.layer import engine, fixes, spatch
from taintport.layer.model import FixCondition, LayerError, Outcome, Piece, PieceState

SEMANTIC_PATCHES = REPO / "semantic-patches"
INPUTS = sorted(SEMANTIC_PATCHES.glob("*/tests/*.c"))
RESULTS = sorted(SEMANTIC_PATCHES.glob("*/tests/*.res"))
OUTCOMES = RESULTS + sorted(SEMANTIC_PATCHES.glob("*/tests/*.err"))


def fixture(case):
    """A fixture's path by its name (<piece>_<case>), in whichever fix's folder."""
    (path,) = SEMANTIC_PATCHES.glob(f"*/tests/{case}")
    return path


def _outcome(path):
    """(input .c, piece, letter) of an outcome file."""
    stem, _, letter = path.stem.partition(".")
    return path.parent / f"{stem}.c", stem.split("_", 1)[0], letter or "E"


def _defines(spec):
    """The -D values a piece's record gives its semantic patch."""
    return [f"{name}={value}" for name, value in spec.defines]


def _transform(piece, text, letter):
    return engine.transform(fixes.FIXES, piece, text, {"letter": letter})


@pytest.mark.parametrize("outcome", OUTCOMES, ids=lambda p: p.name)
def test_fixture(outcome):
    fixture, piece, letter = _outcome(outcome)
    if outcome.suffix == ".err":
        with pytest.raises(LayerError) as caught:
            _transform(piece, fixture.read_text(), letter)
        assert outcome.read_text().strip() in str(caught.value)
        assert caught.value.piece == piece
    else:
        assert _transform(piece, fixture.read_text(), letter) == outcome.read_text()


@pytest.mark.parametrize("res", RESULTS, ids=lambda p: p.name)
def test_fixture_already_fixed_is_left_alone(res):
    _, piece, letter = _outcome(res)
    assert _transform(piece, res.read_text(), letter) == res.read_text()


def test_every_fixture_has_an_outcome_and_every_outcome_an_input():
    for outcome in OUTCOMES:
        fixture, piece, _ = _outcome(outcome)
        assert fixture.exists() and piece in fixes.SPEC, outcome.name
    assert {p for p in INPUTS} == {_outcome(o)[0] for o in OUTCOMES}


# ---------------------------------------------------------------- whole trees
# A pre-3.15 tree and its 3.15 counterpart, assembled from the fixtures at
# the paths the pieces live in (sigcheck and module-flags share a file).

TREE_310 = {
    "include/linux/kernel.h": ["define_kernel-h"],
    "kernel/panic.c": ["letter_tnt"],
    "kernel/module.c": ["sigcheck_printk-once", "module-flags_explicit-ifs"],
    "kernel/tracepoint.c": ["tracepoint_inline-mask"],
    "include/trace/events/module.h": ["trace-event_pfc"],
}


def _tree(root, suffix):
    for rel, cases in TREE_310.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(fixture(c + suffix).read_text() for c in cases))
    return root


def _digest(root):
    return {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(root.rglob("*"))
            if p.is_file()}


def _generate(tree, **params):
    return engine.generate(tree, fixes.FIXES, params)


def _by_name(patch):
    return {fp.fix.name: fp for fp in patch.patches}


def _inspect(tree, **params):
    return [p for fs in engine.inspect(tree, fixes.FIXES, params) for p in fs.pieces]


def test_generate_on_a_pre_fix_tree_gives_upstream_byte_for_byte(tmp_path):
    tree = _tree(tmp_path / "tree", ".c")
    before = _digest(tree)
    patch = _generate(tree)
    assert _digest(tree) == before, "generate() must not touch the tree"
    assert not patch.empty
    unsigned, livepatch = _by_name(patch)["unsigned"], _by_name(patch)["livepatch"]
    assert [p.state for p in unsigned.pieces] == [PieceState.MISSING] * 6
    assert unsigned.diff == patch.diff
    # 3.10 has no TAINT_LIVEPATCH (v4.0): that fix is left out, and says why;
    # so is every later fix of the allow-list (no taint of theirs in 3.10)
    assert livepatch.outcome is Outcome.NOT_APPLICABLE
    assert "predates livepatch" in livepatch.not_applicable
    assert all(fp.outcome is Outcome.NOT_APPLICABLE for fp in patch.patches if fp is not unsigned)
    headers = re.findall(r"^--- a/(\S+)\n\+\+\+ b/(\S+)$", patch.diff, re.M)
    assert [a for a, b in headers] == sorted(TREE_310) and all(a == b for a, b in headers)

    work = tmp_path / "work"
    shutil.copytree(tree, work)
    subprocess.run(["patch", "-p1", "--fuzz=0", "--no-backup-if-mismatch"], cwd=work,
                   input=patch.diff, text=True, check=True, capture_output=True)
    expected = _tree(tmp_path / "expected", ".res")
    for rel in TREE_310:
        assert (work / rel).read_text() == (expected / rel).read_text(), rel
    assert patch.after == {rel: (expected / rel).read_text() for rel in TREE_310}


def test_generate_on_a_fixed_tree_is_empty_and_already_upstream(tmp_path):
    patch = _generate(_tree(tmp_path, ".res"))
    assert patch.diff == "" and patch.empty
    assert [fp.outcome for fp in patch.patches] == [Outcome.ALREADY_UPSTREAM] + \
        [Outcome.NOT_APPLICABLE] * (len(fixes.FIXES) - 1)
    assert patch.summary.startswith("unsigned: already upstream; ")
    assert patch.summary.endswith("; livepatch: not applicable")
    assert all(p.state is PieceState.PRESENT for p in patch.patches[0].pieces)


def _tree_with_livepatch(root, suffix, mask, taints=("TAINT_LIVEPATCH\t\t15",)):
    """A 4.x+ tree: TAINT_LIVEPATCH (and the other taints given) defined, the
    mask as given."""
    tree = _tree(root, suffix)
    header = tree / "include/linux/kernel.h"
    header.write_text(header.read_text() + "".join(f"#define {t}\n" for t in taints))
    (tree / "kernel/tracepoint.c").write_text(fixture(mask).read_text())
    return tree


SIX_ONE = ("TAINT_TEST\t\t18", "TAINT_LIVEPATCH\t\t15")  # a 6.1 tree's taints


def test_generate_carries_each_fix_as_its_own_patch_in_upstream_order(tmp_path):
    tree = _tree_with_livepatch(tmp_path / "tree", ".c", "livepatch_has-bad-taint-test.c",
                                SIX_ONE)
    patch = _generate(tree)
    assert [fp.fix.name for fp in patch.patches] == list(fixes.NAMES)
    unsigned, livepatch = _by_name(patch)["unsigned"], _by_name(patch)["livepatch"]
    assert unsigned.outcome is livepatch.outcome is Outcome.CARRIED
    assert "kernel/tracepoint.c" not in unsigned.diff  # the mask already has UNSIGNED
    assert livepatch.diff.count("+++ b/") == 1 and "+++ b/kernel/tracepoint.c" in livepatch.diff
    assert "+\t\t\t\t(1 << TAINT_LIVEPATCH));\n" in livepatch.diff
    assert livepatch.adapted == ()  # the 6.1 mask: upstream's own hunk
    assert patch.summary.startswith("unsigned: carried define, letter, sigcheck, "
                                    "module-flags, trace-event; ")
    assert patch.summary.endswith("; livepatch: carried livepatch")


def test_on_the_v519_mask_each_later_fix_is_upstreams_own_hunk(tmp_path):
    """Debian's 6.1 with TAINT_TEST taken out: 54be5509422e's hunk, then
    e7bb66f79a7b's on what it gave, each byte for byte (no adaptation)."""
    tree = _tree_with_livepatch(tmp_path / "tree", ".res", "test_has-bad-taint.c", SIX_ONE)
    patch = _by_name(_generate(tree))
    assert patch["test"].outcome is patch["livepatch"].outcome is Outcome.CARRIED
    assert patch["test"].adapted == patch["livepatch"].adapted == ()
    assert ("-\t\t\t       (1 << TAINT_UNSIGNED_MODULE));\n"
            "+\t\t\t       (1 << TAINT_UNSIGNED_MODULE) |\n"
            "+\t\t\t       (1 << TAINT_TEST));\n") in patch["test"].diff


def test_a_tree_without_taint_test_cannot_have_its_bug(tmp_path):
    tree = _tree_with_livepatch(tmp_path / "tree", ".res", "livepatch_has-bad-taint.c")
    test = _by_name(_generate(tree))["test"]
    assert test.outcome is Outcome.NOT_APPLICABLE
    assert test.not_applicable.startswith("no TAINT_TEST (v6.0)")


def test_the_510_mask_is_adapted_and_says_so(tmp_path):
    tree = _tree_with_livepatch(tmp_path / "tree", ".res", "livepatch_has-bad-taint.c")
    patch = _generate(tree)
    assert _by_name(patch)["unsigned"].outcome is Outcome.ALREADY_UPSTREAM
    (note,) = _by_name(patch)["livepatch"].adapted
    assert note.startswith("upstream's hunk rewraps the last two lines")
    assert "a new line holding the new term, indented like it" in note


def test_a_tree_before_module_signing_cannot_have_the_unsigned_bug(tmp_path):
    tree = _tree(tmp_path / "tree", ".c")
    module = tree / "kernel/module.c"
    module.write_text(module.read_text().replace("sig_ok", "verified"))
    fix_state = engine.inspect(tree, fixes.FIXES)[0]
    assert fix_state.condition is FixCondition.NOT_APPLICABLE
    assert "predates module signing (v3.7" in fix_state.not_applicable
    patch = _generate(tree)
    assert patch.empty and patch.patches[0].outcome is Outcome.NOT_APPLICABLE


def test_a_feature_named_only_in_a_comment_is_not_there(tmp_path):
    """Applicability is judged on code: sig_ok in a comment is no module signing."""
    tree = _tree(tmp_path / "tree", ".c")
    module = tree / "kernel/module.c"
    module.write_text(module.read_text().replace("sig_ok", "verified")
                      + "/* one day: mod->sig_ok */\n")
    assert engine.inspect(tree, fixes.FIXES)[0].condition is FixCondition.NOT_APPLICABLE


def test_letter_x_reproduces_the_2014_posting_where_x_is_free(tmp_path):
    patch = _generate(_tree(tmp_path, ".c"), letter="X")
    assert "+\t{ TAINT_UNSIGNED_MODULE,\t'X', ' ' },\n" in patch.diff
    assert "+\t\tbuf[l++] = 'X';\n" in patch.diff
    assert '+\t{ (1UL << TAINT_UNSIGNED_MODULE),\t"X" })\n' in patch.diff
    assert "letter 'X'" in patch.patches[0].fix.info.upstream.body.replace("{letter}", "X")


def test_a_taken_letter_is_an_error_naming_its_owner(tmp_path):
    with pytest.raises(LayerError) as caught:
        _generate(_tree(tmp_path, ".c"), letter="W")
    assert caught.value.piece == "letter"
    assert caught.value.path == "kernel/panic.c:11"
    assert "TAINT_WARN" in caught.value.expected
    assert all(s in str(caught.value) for s in ("letter", "kernel/panic.c:11", "TAINT_WARN"))


def test_a_parameter_is_checked_before_anything_runs(tmp_path):
    with pytest.raises(LayerError, match="expected one capital letter, got 'ee'"):
        _generate(_tree(tmp_path, ".c"), letter="ee")
    with pytest.raises(Exception, match="unknown parameter"):
        _generate(_tree(tmp_path, ".c"), colour="red")


def test_an_unknown_shape_is_an_error_and_nothing_is_generated(tmp_path):
    tree = _tree(tmp_path, ".c")
    path = tree / "kernel/tracepoint.c"
    path.write_text(path.read_text().replace("(1 << TAINT_CRAP)", "(1 << TAINT_WARN)"))
    assert _inspect(tree)[3] == Piece("tracepoint", "kernel/tracepoint.c", 0,
                                      PieceState.UNRECOGNISED, fixes.SPEC["tracepoint"].expected)
    with pytest.raises(LayerError) as caught:
        _generate(tree)
    assert (caught.value.piece, caught.value.path) == ("tracepoint", "kernel/tracepoint.c")
    assert "TAINT_CRAP" in caught.value.expected


def test_a_missing_file_says_so(tmp_path):
    tree = _tree(tmp_path, ".c")
    (tree / "kernel/tracepoint.c").unlink()
    assert _inspect(tree)[3] == Piece("tracepoint", "kernel/tracepoint.c", 0,
                                      PieceState.NO_FILE, "file not found")
    with pytest.raises(LayerError, match="tracepoint.c: expected the file .*file not found"):
        _generate(tree)


def test_a_missing_file_is_named_where_the_trees_version_keeps_it(tmp_path):
    """A 6.1 tree without kernel/module/main.c is told about that file, never
    about kernel/module.c, where older kernels keep load_module()."""
    tree = _tree(tmp_path, ".c")
    (tree / "Makefile").write_text("VERSION = 6\nPATCHLEVEL = 1\nSUBLEVEL = 0\n")
    (tree / "kernel/module.c").unlink()
    by_name = {p.name: p for p in _inspect(tree)}
    assert (by_name["sigcheck"].path, by_name["sigcheck"].state) == (
        "kernel/module/main.c", PieceState.NO_FILE)
    with pytest.raises(LayerError) as caught:
        _generate(tree)
    assert caught.value.path == "kernel/module/main.c" and "kernel/module.c" not in str(caught.value)


def test_inspect_reports_file_line_and_state(tmp_path):
    pieces = _inspect(_tree(tmp_path, ".c"))
    # the unsigned fix's pieces, then the livepatch mask (and any other fix's between)
    rows = [(p.name, p.path, p.line, p.state.value) for p in pieces]
    assert rows[:6] + rows[-1:] == [
        ("define", "include/linux/kernel.h", 12, "missing"),
        ("letter", "kernel/panic.c", 14, "missing"),
        ("sigcheck", "kernel/module.c", 34, "missing"),
        ("tracepoint", "kernel/tracepoint.c", 15, "missing"),
        ("module-flags", "kernel/module.c", 60, "missing"),
        ("trace-event", "include/trace/events/module.h", 9, "missing"),
        ("livepatch", "kernel/tracepoint.c", 15, "missing"),
    ]


# ------------------------------------------------------------- spatch failures

def _fake_spatch(tmp_path, monkeypatch, script):
    fake_command(tmp_path, monkeypatch, "spatch", script)


def test_spatch_exn_with_exit_0_is_an_error(tmp_path, monkeypatch):
    _fake_spatch(tmp_path, monkeypatch,
                 'echo "EXN: Failure(\\"boom\\") in kernel/module.c" >&2\n'
                 'echo "An error occurred when attempting to transform some files." >&2\n'
                 "exit 0\n")
    with pytest.raises(LayerError) as caught:
        _transform("sigcheck", fixture("sigcheck_printk-once.c").read_text(), "E")
    assert "EXN" in caught.value.expected


def test_a_rule_that_does_not_fire_is_an_error(tmp_path, monkeypatch):
    """spatch judges the piece missing, then changes nothing when asked to fix it."""
    _fake_spatch(tmp_path, monkeypatch,
                 'echo "taintport: missing find kernel/module.c:34:2-34:18 TAINT_FORCED_MODULE"'
                 "\nexit 0\n")
    with pytest.raises(LayerError) as caught:
        _transform("sigcheck", fixture("sigcheck_printk-once.c").read_text(), "E")
    assert "to fix the place it reported (line 34); fired: none" in caught.value.expected


# ------------------------------------------------------ the .cocci files alone
# As a spatch user runs them: no -D taintport, each mode on its own. The
# fixtures are ones whose .res differs from the .c only where spatch edits
# code (no comment for a scripted edit to rewrite).

# (piece, fixture, line): the piece's semantic patch with its record's -D values
ALONE = [
    ("define", "define_kernel-h", 12),
    ("letter", "letter_designated", 7),
    ("sigcheck", "sigcheck_augment-taints", 28),
    ("tracepoint", "tracepoint_has-bad-taint-test", 4),
    ("module-flags", "module-flags_explicit-ifs", 12),
    ("livepatch", "livepatch_has-bad-taint-test", 4),
]
# the lines of a unified diff, with the "diff -u -p" line spatch --patch writes
DIFF_LINE = re.compile(r"^(diff |--- |\+\+\+ |@@ -\d+(,\d+)? \+\d+(,\d+)? @@|[ +\-\\])")


def _alone(piece, path, *defines):
    """spatch's stdout for one file, as a user runs it (Options: of the header)
    with the -D values the piece's record gives."""
    return _plain(piece, [path], *defines)


def _plain(piece, paths, *defines):
    """spatch's stdout for files, as a user runs it (Options: of the header)."""
    spec = fixes.SPEC[piece]
    args = [a for d in (*_defines(spec), *defines) for a in ("-D", d)]
    proc = subprocess.run(["spatch", *spatch.SPATCH_PYTHON, "--sp-file",
                           SEMANTIC_PATCHES / spec.cocci, *args,
                           "--very-quiet", "--no-includes", "--include-headers", *paths],
                          capture_output=True, text=True, check=True)
    assert not [line for line in proc.stderr.splitlines()
                if any(f in line for f in spatch.SPATCH_FAILURES)], proc.stderr
    return proc.stdout


def _no_space(text):
    return re.sub(r"\s", "", text)


@pytest.mark.parametrize("cocci", sorted({s.cocci for s in fixes.PIECES if s.cocci}))
@pytest.mark.parametrize("mode", ["patch", "report", "context", "org"])
def test_spatch_parses_only_files_that_name_what_a_rule_looks_for(cocci, mode):
    # Without a grep query spatch parses every file of the tree: a python
    # rule that depends on no matching rule, or a rule with nothing but
    # metavariables, costs a coccicheck minutes instead of seconds.
    proc = subprocess.run(["spatch", "--parse-cocci", SEMANTIC_PATCHES / cocci,
                           "-D", mode], capture_output=True, text=True, check=True)
    assert "\nGrep query\n" in proc.stdout, proc.stdout[-300:]


@pytest.mark.parametrize("piece,case,line", ALONE, ids=[r[0] for r in ALONE])
def test_patch_mode_prints_only_a_diff_that_gives_the_fix(piece, case, line, tmp_path):
    out = _alone(piece, fixture(f"{case}.c"), "patch")
    assert out and all(DIFF_LINE.match(s) for s in out.splitlines()), out
    work = tmp_path / f"{case}.c"
    shutil.copyfile(fixture(f"{case}.c"), work)
    subprocess.run(["patch", "--fuzz=0", work], input=out, text=True, check=True,
                   capture_output=True)
    # the code is upstream's; only spatch's layout may differ (see the header)
    assert _no_space(work.read_text()) == _no_space(fixture(f"{case}.res").read_text())
    assert _alone(piece, fixture(f"{case}.res"), "patch") == ""


# every expected output of a piece a semantic patch carries, one per shape and letter
SPATCH_OUTCOMES = [o for o in RESULTS if fixes.SPEC[_outcome(o)[1]].cocci]


@pytest.mark.parametrize("res", SPATCH_OUTCOMES, ids=lambda p: p.name)
def test_patch_mode_on_every_shape_prints_only_diff_lines(res):
    fixture, piece, letter = _outcome(res)
    out = _alone(piece, fixture, "patch", f"letter={letter}")
    assert all(DIFF_LINE.match(s) for s in out.splitlines()), out


@pytest.mark.parametrize("piece,case,line", ALONE, ids=[r[0] for r in ALONE])
def test_taintport_asks_for_the_fired_lines(piece, case, line):
    out = _alone(piece, fixture(f"{case}.c"), "patch", "taintport")
    assert re.search(rf"^taintport: fired \w+ {re.escape(str(fixture(f'{case}.c')))}:{line}$",
                     out, re.M)


@pytest.mark.parametrize("piece,case,line", ALONE, ids=[r[0] for r in ALONE])
def test_report_mode_names_file_and_line_and_is_quiet_when_fixed(piece, case, line):
    assert re.search(rf"^{re.escape(str(fixture(f'{case}.c')))}:{line}:\S* .*missing",
                     _alone(piece, fixture(f"{case}.c"), "report"), re.M)
    assert _alone(piece, fixture(f"{case}.res"), "report") == ""


def removed_lines(diff):
    """(file, line in the old file) of every '-' line of a unified diff."""
    removed, path, line = set(), None, 0
    for text in diff.splitlines():
        if text.startswith("--- "):
            path = text[4:].split("\t")[0]
        elif text.startswith("@@ "):
            line = int(re.match(r"@@ -(\d+)", text).group(1))
        elif text.startswith("-"):
            removed.add((path, line))
            line += 1
        elif text.startswith(" "):
            line += 1
    return removed


@pytest.mark.parametrize("piece,case,line", ALONE, ids=[r[0] for r in ALONE])
def test_context_mode_marks_the_line_and_is_quiet_when_fixed(piece, case, line):
    out = _alone(piece, fixture(f"{case}.c"), "context")
    assert out and all(DIFF_LINE.match(s) for s in out.splitlines()), out
    assert not [s for s in out.splitlines() if s.startswith("+") and not s.startswith("+++ ")]
    assert (str(fixture(f"{case}.c")), line) in removed_lines(out)
    assert _alone(piece, fixture(f"{case}.res"), "context") == ""


@pytest.mark.parametrize("piece,case,line", ALONE, ids=[r[0] for r in ALONE])
def test_org_mode_names_file_and_line_and_is_quiet_when_fixed(piece, case, line):
    out = _alone(piece, fixture(f"{case}.c"), "org")
    assert re.fullmatch(rf"\* TODO \[\[view:{re.escape(str(fixture(f'{case}.c')))}::"
                        rf"face=ovl-face1::linb={line}::colb=\d+::cole=\d+\]\[.*missing.*\]\]\n",
                        out), out
    assert _alone(piece, fixture(f"{case}.res"), "org") == ""


# A bit or a letter another flag owns: named in report and org, never patched.
TAKEN = [
    ("define", "define_bit-13-taken", (), 3,
     "bit 13 belongs to TAINT_SOFTLOCKUP"),
    ("letter", "letter_tnt", ("letter=W",), 11,
     "letter 'W' already belongs to TAINT_WARN"),
]


@pytest.mark.parametrize("piece,case,letter,line,owner", TAKEN, ids=[r[1] for r in TAKEN])
def test_a_taken_bit_or_letter_is_reported_and_never_patched(piece, case, letter, line, owner):
    path = fixture(f"{case}.c")
    report = _alone(piece, path, "report", *letter)
    org = _alone(piece, path, "org", *letter)
    assert f"{path}:{line}:" in report and owner in report
    assert f"linb={line}::" in org and owner in org
    assert _alone(piece, path, "patch", *letter) == ""


def test_the_matrix_refuses_a_descriptor_that_disagrees_with_its_tree(tmp_path):
    from dataclasses import replace
    from taintport.tree import versions
    from taintport.layer.ships import check_ships
    from taintport.errors import InputError
    tree = _tree_with_livepatch(tmp_path / "tree", ".res", "livepatch_has-bad-taint-test.c",
                                SIX_ONE)
    bookworm = versions.select(["bookworm-6.1"])[0]
    cache = Cache(tmp_path / "cache")
    check_ships(bookworm, tree, cache)  # ships every fix but livepatch: agrees
    with pytest.raises(InputError) as caught:
        check_ships(replace(bookworm, ships=(*bookworm.ships, "livepatch")), tree, cache)
    assert "bookworm-6.1.toml: ships says fix 'livepatch' is in bookworm-6.1" in str(caught.value)
    assert "livepatch missing at kernel/tracepoint.c:4" in str(caught.value)
    assert "the layer finds it missing in the fetched tree" in str(caught.value)


def test_the_guest_datas_not_applicable_is_the_layers_judgement_of_the_tree(tmp_path):
    """bullseye's 5.10 has no TAINT_TEST: the layer judges the test fix not
    applicable on such a tree, as the guest's [not_applicable] says; a table
    that says otherwise for the version is refused, naming the layer's reason."""
    from taintport.errors import InputError
    from taintport.judge import verdict
    from taintport.layer.ships import check_ships
    from taintport.tree import versions
    expect = verdict.load(fixes.NAMES)
    tree = _tree_with_livepatch(tmp_path / "tree", ".res", "livepatch_has-bad-taint.c")
    bullseye = versions.select(["bullseye-5.10"])[0]
    judged = check_ships(bullseye, tree, Cache(tmp_path / "cache"))
    assert set(judged) == {"test"} and "no TAINT_TEST" in judged["test"]
    expect.check_applicable(bullseye.name, judged)
    with pytest.raises(InputError, match=re.escape(
            "says bookworm-6.1 cannot have fix(es) none, but the layer judges its fetched "
            "tree's: test: no TAINT_TEST")):
        expect.check_applicable("bookworm-6.1", judged)
    with pytest.raises(InputError, match=re.escape(
            "says bullseye-5.10 cannot have fix(es) test, but the layer judges its fetched "
            "tree's: none")):
        expect.check_applicable(bullseye.name, {})


# ------------------------------------------------- one judge: inspect == spatch
# Every fixture, .c and .res alike, at the path its piece lives in: what
# `inspect` says of each piece a semantic patch judges there must be what
# that semantic patch says on its own (report mode: where, and whether the
# piece is missing or something is in its way; patch mode: whether it
# changes anything). Nothing in Python may decide otherwise.

def _plain_each(piece, paths, *defines):
    """spatch's stdout for each file on its own, as coccicheck runs it (--dir:
    one file at a time), for files named <fixture>.c in a folder of copies."""
    spec = fixes.SPEC[piece]
    with tempfile.TemporaryDirectory(prefix="taintport-plain-") as folder:
        for path in paths:
            shutil.copyfile(path, Path(folder) / f"{path.name}.c")
        args = [a for d in (*_defines(spec), *defines) for a in ("-D", d)]
        proc = subprocess.run(["spatch", *spatch.SPATCH_PYTHON, "--sp-file",
                               SEMANTIC_PATCHES / spec.cocci, *args, "--very-quiet",
                               "--no-includes", "--include-headers", "--dir", folder],
                              capture_output=True, text=True, check=True)
        assert not [line for line in proc.stderr.splitlines()
                    if any(f in line for f in spatch.SPATCH_FAILURES)], proc.stderr
        return proc.stdout.replace(folder + "/", "")


def _report_lines(piece, files, letter):
    """{fixture name: [(line, kind)]} of a plain report run; kind is "missing"
    when the message says the piece is missing, else "taken"."""
    found = {}
    out = _plain_each(piece, files, "report", f"letter={letter}")
    for name, line, message in re.findall(r"^(\S+?)\.c:(\d+):\S+ (.*)$", out, re.M):
        kind = "missing" if " missing" in message else "taken"
        found.setdefault(name, []).append((int(line), kind))
    return found


def _patched(piece, files, letter):
    """The fixture names a plain patch run changes."""
    out = _plain_each(piece, files, "patch", f"letter={letter}")
    return {name for name in re.findall(r"^--- (?:a/)?(\S+?)\.c$", out, re.M)}


FIXTURE_INPUTS = INPUTS + RESULTS


def test_inspect_and_plain_spatch_agree_on_every_fixture(tmp_path):
    by_letter = {}
    for path in FIXTURE_INPUTS:
        by_letter.setdefault(_outcome(path)[2], []).append(path)
    checked = 0
    for letter, paths in by_letter.items():
        plain = {}
        for spec in (s for s in fixes.PIECES if s.cocci):
            plain[spec.name] = (_report_lines(spec.name, paths, letter),
                                _patched(spec.name, paths, letter))
        for n, path in enumerate(paths):
            piece = fixes.SPEC[_outcome(path)[1]]
            tree = tmp_path / f"{letter}{n}"
            (tree / piece.paths[-1]).parent.mkdir(parents=True)
            shutil.copyfile(path, tree / piece.paths[-1])
            for found in _inspect(tree, letter=letter):
                spec = fixes.SPEC[found.name]
                if found.path != piece.paths[-1] or not spec.cocci:
                    continue
                report, patched = plain[spec.name]
                said = report.get(path.name, [])
                where = (path.name, found.name, found.state, said)
                if found.state is PieceState.MISSING:
                    assert (found.line, "missing") in said, where
                    assert path.name in patched, where
                elif found.state is PieceState.CONFLICTING:
                    assert (found.line, "taken") in said and all(k == "taken" for _, k in said), where
                    assert path.name not in patched, where
                else:
                    assert found.state in (PieceState.PRESENT, PieceState.UNRECOGNISED), where
                    assert said == [] and path.name not in patched, where
                checked += 1
    assert checked >= len(FIXTURE_INPUTS)


# ------------------------------------------ the one check that is not SmPL's

def test_every_piece_is_judged_by_smpl_or_its_record_says_why_not():
    """A piece without a semantic patch is the exception its record names."""
    for spec in fixes.PIECES:
        assert bool(spec.cocci) != bool(spec.not_smpl), spec.name
        assert (spec.judge is None) == bool(spec.cocci), spec.name


def test_plain_spatch_cannot_see_the_pieces_smpl_does_not_judge(tmp_path):
    """The reason holds: spatch, given the piece's fixture with a rule that
    matches any initializer entry, finds nothing in the #define body, while
    the record's rule judges every fixture."""
    rule = tmp_path / "any.cocci"
    rule.write_text("@r@\nexpression E;\nposition p;\n@@\n (1UL << E)@p\n\n"
                    "@script:python@\np << r.p;\n@@\nprint(\"seen\", p[0].line)\n")
    plain = tmp_path / "plain.c"
    plain.write_text("int x = (1UL << TAINT_CRAP);\n")  # the rule does see code

    def seen(path):
        return "seen" in subprocess.run(["spatch", *spatch.SPATCH_PYTHON, "--sp-file", rule,
                                         "--very-quiet", "--no-includes", "--include-headers",
                                         path], capture_output=True, text=True,
                                        check=True).stdout
    assert seen(plain)
    for spec in (s for s in fixes.PIECES if s.not_smpl):
        cases = [p for p in INPUTS + RESULTS if _outcome(p)[1] == spec.name]
        assert cases, spec.name
        for case in cases:
            assert not seen(case), case
            assert spec.judge is not None and spec.judge(case.read_text(), spec.paths[0],
                                                         {"letter": "E"}) is not None, case
