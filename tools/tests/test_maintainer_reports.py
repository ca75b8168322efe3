# SPDX-License-Identifier: GPL-2.0
"""What `inspect` and `apply --tree` tell a maintainer about their own tree:
a merge left half-done, a fix taintport itself pushed before, a fix the tree
cannot have; and that a file the layer only reads may hold any bytes and line
ends (old vendor trees carry Latin-1 and EUC-KR comments), while a file the
layer must write is refused for them, by name. Trees are assembled from the
fixtures (test_layer.py); everything runs the real command line, and an
interrupted apply speaks of the tree, not of cells."""
import os
import re
import signal
import subprocess
import time

from test_carry import MAKEFILE, TAINTPORT, lacking_both, lacking_livepatch, snapshot, taintport
from test_layer import _tree

MASK = "livepatch_has-bad-taint.c"  # 5.10's: OOT | CRAP | UNSIGNED
# a 5.4 vendor tree's comment in EUC-KR ("module" in Korean), one byte of it 0xb8
EUC_KR = "/* \ubaa8\ub4c8 */\n".encode("euc-kr")


def test_conflict_markers_around_the_mask_are_named_with_their_line(tmp_path):
    tree = lacking_livepatch(tmp_path / "tree", MASK)
    source = tree / "kernel/tracepoint.c"
    lines = source.read_text().splitlines(True)
    at = next(i for i, line in enumerate(lines) if "return mod->taints" in line)
    lines[at:at + 2] = ["<<<<<<< HEAD\n", *lines[at:at + 2], "=======\n",
                        lines[at], "\t\t\t       (1 << TAINT_UNSIGNED_MODULE) | (1 << 20));\n",
                        ">>>>>>> vendor\n"]
    source.write_text("".join(lines))
    before = snapshot(tree)
    shown = taintport("inspect", "--tree", tree)
    assert re.search(rf"^  livepatch\s+unrecognised\s+kernel/tracepoint.c:{at + 1}\s+a merged "
                     rf"file, found an unresolved conflict marker \(<<<<<<< at line {at + 1}\)",
                     shown.stdout, re.M), shown.stdout
    assert "expected a mask" not in shown.stdout
    refused = taintport("apply", "--tree", tree)
    assert refused.returncode == 2 and "Traceback" not in refused.stderr
    assert (f"kernel/tracepoint.c:{at + 1}: expected a merged file, found an unresolved "
            f"conflict marker (<<<<<<< at line {at + 1}): resolve the merge first") \
        in refused.stderr, refused.stderr
    assert "expected a mask" not in refused.stderr
    assert snapshot(tree) == before


def test_a_second_apply_names_taintports_own_patch_not_upstream(tmp_path):
    tree = lacking_both(tmp_path / "tree")
    first = taintport("apply", "--tree", tree)
    assert first.returncode == 0, first.stderr
    second = taintport("apply", "--tree", tree)
    assert second.returncode == 0, second.stderr
    summary = second.stdout.splitlines()[0]
    assert "already upstream" not in summary, summary
    for fix, name in (("unsigned", "0001-"), ("livepatch", "0002-")):
        assert re.search(rf"{fix}: carried by patches/taintport/{name}\S+\.patch \(pushed "
                         r"before\)", summary), summary


def test_a_fix_that_does_not_apply_lists_no_missing_piece(tmp_path):
    """3.10's tree predates livepatch (v4.0): its mask is no gap."""
    tree = _tree(tmp_path / "tree", ".res")
    (tree / "Makefile").write_text(MAKEFILE)
    shown = taintport("inspect", "--tree", tree)
    assert shown.returncode == 0, shown.stderr
    block = shown.stdout.split("livepatch:", 1)[1]
    assert block.split()[0:2] == ["not", "applicable"], shown.stdout
    assert not re.search(r"^  livepatch\s+missing", shown.stdout, re.M), shown.stdout
    assert re.search(r"^  livepatch\s+not applicable\s+kernel/tracepoint.c:\d+", shown.stdout,
                     re.M), shown.stdout


def test_a_tree_before_module_signing_lists_no_missing_piece_at_all(tmp_path):
    """3.6's tree (no module signing, v3.7; no livepatch, v4.0): neither fix
    applies, so no piece of either is a gap."""
    tree = _tree(tmp_path / "tree", ".c")
    module = tree / "kernel/module.c"
    module.write_text(module.read_text().replace("sig_ok", "verified"))
    (tree / "Makefile").write_text("VERSION = 3\nPATCHLEVEL = 6\nSUBLEVEL = 0\n")
    shown = taintport("inspect", "--tree", tree)
    assert shown.returncode == 0, shown.stderr
    assert re.search(r"^unsigned:\s+not applicable\s.*predates module signing", shown.stdout,
                     re.M), shown.stdout
    assert re.search(r"^livepatch:\s+not applicable", shown.stdout, re.M), shown.stdout
    assert "missing" not in shown.stdout.split("unsigned:", 1)[1].replace(
        "no TAINT_LIVEPATCH", ""), shown.stdout
    assert re.search(r"^  tracepoint\s+not applicable\s+kernel/tracepoint.c:\d+\s*$",
                     shown.stdout, re.M), shown.stdout


def vendor_54(root):
    """A 5.4-shaped vendor tree: the unsigned fix there, the livepatch term
    missing from kernel/tracepoint.c."""
    tree = lacking_livepatch(root, MASK)
    (tree / "Makefile").write_text("VERSION = 5\nPATCHLEVEL = 4\nSUBLEVEL = 0\n")
    return tree


def carries_livepatch(tree, tmp_path):
    """inspect and apply both carry the livepatch term; only tracepoint.c changes."""
    shown = taintport("inspect", "--tree", tree)
    assert shown.returncode == 1, shown.stderr  # a fix the tree can have is not there
    assert re.search(r"^unsigned:\s+present", shown.stdout, re.M), shown.stdout
    assert re.search(r"^livepatch:\s+missing", shown.stdout, re.M), shown.stdout
    before = snapshot(tree)
    done = taintport("apply", "--tree", tree)
    assert done.returncode == 0, done.stderr
    assert "livepatch: carried livepatch" in done.stdout
    after = snapshot(tree)
    changed = {rel for rel in before if before[rel] != after.get(rel)}
    assert changed == {"kernel/tracepoint.c"}, changed
    assert "(1 << TAINT_LIVEPATCH)" in (tree / "kernel/tracepoint.c").read_text()


def test_an_euc_kr_comment_in_a_file_only_read_stops_nothing(tmp_path):
    tree = vendor_54(tmp_path / "tree")
    module = tree / "kernel/module.c"
    data = module.read_bytes()
    module.write_bytes(EUC_KR + data)
    carries_livepatch(tree, tmp_path)
    assert module.read_bytes() == EUC_KR + data


def test_crlf_in_a_file_only_read_stops_nothing(tmp_path):
    tree = vendor_54(tmp_path / "tree")
    header = tree / "include/linux/kernel.h"
    data = header.read_bytes().replace(b"\n", b"\r\n")
    header.write_bytes(data)
    carries_livepatch(tree, tmp_path)
    assert header.read_bytes() == data


def test_a_file_the_layer_must_write_is_refused_for_bytes_it_cannot_give_back(tmp_path):
    for name, mangle, said in (
            ("euc-kr", lambda data: EUC_KR + data,
             "kernel/tracepoint.c: expected UTF-8 text, found byte 0xb8 at line 1"),
            ("crlf", lambda data: data.replace(b"\n", b"\r\n"),
             "kernel/tracepoint.c: expected LF line ends, found CR (CRLF) at line 1")):
        tree = vendor_54(tmp_path / name)
        source = tree / "kernel/tracepoint.c"
        source.write_bytes(mangle(source.read_bytes()))
        before = snapshot(tree)
        refused = taintport("apply", "--tree", tree)
        assert refused.returncode == 2 and said in refused.stderr, refused.stderr
        assert snapshot(tree) == before
        shown = taintport("inspect", "--tree", tree)  # only reads: says what it sees
        assert shown.returncode == 1, shown.stderr  # the livepatch fix is not there
        assert re.search(r"^livepatch:\s+missing", shown.stdout, re.M), shown.stdout


def as_in_a_terminal():
    """Ctrl-C reaches a command a terminal runs: a test run started in the
    background of a shell without job control (nohup make check &) passes SIGINT
    down ignored, and an ignored SIGINT is no interruption to prove anything with."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_an_interrupted_apply_says_what_it_left_not_cells(tmp_path):
    """Ctrl-C while the layer is judged (a spatch on PATH that waits): the
    run speaks of the tree and its journal; there are no cells here."""
    tree = lacking_both(tmp_path / "tree")
    before = snapshot(tree)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    started = tmp_path / "spatch-started"
    interrupted = tmp_path / "interrupted"
    spatch = bin_dir / "spatch"
    # waits until Ctrl-C: one started a moment after it (two run at once, and
    # the signal reaches only the processes there when it is sent) ends then,
    # as a real spatch ends in seconds; a run that waited for it would not
    spatch.write_text(f"#!/bin/sh\ntouch {started}\nfor i in $(seq 600); do\n"
                      f"  [ -e {interrupted} ] && exit 1\n  sleep 0.1\ndone\n")
    spatch.chmod(0o755)
    proc = subprocess.Popen([*TAINTPORT, "apply", "--tree", str(tree)], text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={**os.environ, "PATH": f"{bin_dir}:/usr/bin:/bin"},
                            start_new_session=True, preexec_fn=as_in_a_terminal)
    deadline = time.monotonic() + 60
    while not started.exists() and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.1)
    os.killpg(proc.pid, signal.SIGINT)  # as Ctrl-C does: the whole foreground group
    interrupted.touch()
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 2, err
    assert "finished cells" not in err, err
    assert "taintport: interrupted; the tree (or --export folder) is as before" in err, err
    assert snapshot(tree) == before
