# SPDX-License-Identifier: GPL-2.0
"""All or nothing, proven on the real code: killed, out of disk, denied a write.

`apply --tree` and `apply --export` are run as a user runs them, and killed
with SIGKILL by strace at their own system calls (`-e inject=<call>:signal=
SIGKILL:when=N`: the process dies as it enters the Nth such call, with no hook
in taintport), at every rename, link, mkdir and unlink they make and while
they wait for quilt (and for spatch, when it runs: the whole run first leaves
its answers in the cache, layer/spatch_cache.py, so the killed runs ask none;
test_journal_trust kills a run while spatch runs). After each kill the tree
must be exactly as before, exactly as a whole run leaves it, or mid-change
with the journal that says how to undo it (every file then the old or the new
one, never a part); the next run must roll back what is left and end exactly
as a whole run does. A small tmpfs filled up (ENOSPC), an ext4 image with an
immutable file (chattr +i: EPERM), a read-only folder (EROFS): exit 2, a
message naming the cause, and the tree or folder as it was, checksums
compared. The cache tree's variant switch is killed the same way: its marker
never names a variant the tree is not in.

Mounting needs root, as CI has: these tests fail (they never skip) without it.
They run in `make check` (pytest -m e2e): each kill point is a whole run and
its rerun (make check on a fresh cache, b3aef7b: the apply's 53 points 106 s, the
export's 29 points 49 s; 270 and 116 s before spatch's answers were kept).
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path

import pytest

from taintport.journal import JOURNAL
from taintport.tree import series, variants

from test_carry import TAINTPORT, lacking_both, lacking_livepatch, snapshot
from test_series import ORIGINAL, patch

pytestmark = pytest.mark.e2e
# the journal works beneath a folder's descriptor: its calls are the *at ones
KILLED_AT = ("rename", "renameat", "link", "linkat", "mkdir", "mkdirat", "unlink", "unlinkat",
             "fsync", "wait4")
TEMP = re.compile(r"(^|/)\.[^/]+\.taintport-[0-9a-f]+$")


def _run(args, kill=None):
    """tools/taintport args; with kill=(call, n), SIGKILLed as it enters its
    nth such system call (the main process only: spatch and quilt run on)."""
    cmd = [*TAINTPORT, *map(str, args)]
    if kill:
        call, n = kill
        cmd = ["strace", "-o", "/dev/null", "-e", f"trace={call}",
               "-e", f"inject={call}:signal=SIGKILL:when={n}", *cmd]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300)


def _kill_points(args, folder):
    """Every point of a whole run where a kill can change what folder holds:
    each KILLED_AT call whose arguments name something in it (strace -y
    names an fsync's file), the first and the last wait for a child (quilt;
    spatch where its answer is not kept yet: nothing is written yet), and no
    kill at all past the last rename."""
    with tempfile.NamedTemporaryFile("r", suffix=".strace") as out:
        proc = subprocess.run(["strace", "-y", "-o", out.name, "-e",
                               f"trace={','.join(KILLED_AT)}", *TAINTPORT, *map(str, args)],
                              capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
        counts: dict[str, int] = {}
        points = []
        for line in out.read().splitlines():
            call = line.split("(", 1)[0]
            if call not in KILLED_AT:
                continue
            counts[call] = counts.get(call, 0) + 1
            if str(folder) in line:
                points.append((call, counts[call]))
    assert sum(call.startswith("rename") for call, _ in points) >= 3, points
    points += [("wait4", n) for n in sorted({1, counts.get("wait4", 0)}) if n]
    points.append(("renameat", counts.get("renameat", 0) + 1))
    return points


def _journal_left(tree):
    return any(p.name.startswith(JOURNAL) for p in Path(tree).iterdir())


def _check_mid_change(state, before, after):
    """Every file the old or the new one; the only others the journal's own."""
    for rel, digest in state.items():
        if rel.split("/", 1)[0].startswith(JOURNAL) or TEMP.search(rel):
            continue
        assert digest in (before.get(rel), after.get(rel)), rel
    missing = [rel for rel in before if rel not in state and after.get(rel) is not None]
    assert not missing, missing


def _kill_everywhere(tmp_path, make, args_for, target):
    """Kill a real run at every point; each time, the state and the rerun."""
    pristine = make(tmp_path / "pristine")
    work = tmp_path / "work"
    shutil.copytree(pristine, work, symlinks=True)
    before = snapshot(target(work))
    whole = _run(args_for(work))
    assert whole.returncode == 0, whole.stderr
    after = snapshot(target(work))
    assert after != before
    points = _kill_points(args_for(_fresh(pristine, work)), target(work))
    seen = {"before": 0, "after": 0, "journal": 0}
    for point in points:
        _fresh(pristine, work)
        killed = _run(args_for(work), kill=point)
        state = snapshot(target(work))
        if state == before:
            seen["before"] += 1
            continue  # the same input as the whole run above
        if state == after:
            seen["after"] += 1
        else:
            assert _journal_left(target(work)), (point, killed.returncode, killed.stderr)
            _check_mid_change(state, before, after)
            seen["journal"] += 1
        again = _run(args_for(work))
        assert again.returncode == 0, (point, again.stderr)
        assert snapshot(target(work)) == after, point
        if state not in (before, after):
            assert re.search(r"rolled back an interrupted run|removed the journal of an "
                             r"interrupted run|removed the journal an interrupted run",
                             again.stdout), (point, again.stdout)
    print(f"{len(points)} kill points: {seen}")
    return seen


def _fresh(pristine, work):
    shutil.rmtree(work)
    shutil.copytree(pristine, work, symlinks=True)
    return work


def test_apply_killed_anywhere_is_before_after_or_rolled_back(tmp_path):
    seen = _kill_everywhere(tmp_path, lacking_livepatch, lambda tree: ["apply", "--tree", tree],
                            lambda tree: tree)
    # the kills landed in every phase: before any write, mid-change, after the last
    assert seen["before"] and seen["journal"] and seen["after"], seen


def test_export_killed_anywhere_leaves_no_part_written(tmp_path):
    def make(root):
        tree = lacking_both(root / "tree")
        (root / "out").mkdir()
        (root / "out" / "series").write_text("# mine\nmine.patch\n")
        return root

    seen = _kill_everywhere(tmp_path, make,
                            lambda root: ["apply", "--tree", root / "tree", "--export",
                                          root / "out"],
                            lambda root: root / "out")
    assert seen["before"] and seen["journal"], seen


# -------------------------------------------------------------- mounts (root)

@contextmanager
def mounted(target, *args):
    target.mkdir(parents=True, exist_ok=True)
    assert os.geteuid() == 0, "mounting a file system for this test needs root (CI is root)"
    subprocess.run(["mount", *args, str(target)], check=True)
    try:
        yield target
    finally:
        subprocess.run(["umount", "-l", str(target)], check=True)


def _fill(folder, leave):
    """Fill a file system up to `leave` bytes free."""
    st = os.statvfs(folder)
    free = st.f_bavail * st.f_frsize
    with open(folder / "filler", "wb") as out:
        out.write(b"\0" * max(0, free - leave))


def test_a_full_disk_leaves_the_tree_as_it_was(tmp_path):
    results = {}
    with mounted(tmp_path / "small", "-t", "tmpfs", "-o", "size=2m", "tmpfs") as small:
        for leave in range(0, 96 * 1024, 4096):
            tree = lacking_both(small / "t")
            (small / "filler").unlink(missing_ok=True)
            before = snapshot(tree)
            _fill(small, leave)
            proc = _run(["apply", "--tree", tree])
            if proc.returncode == 0:
                results[leave] = "carried"
                assert (tree / ".pc" / "applied-patches").exists()
            else:
                assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
                assert "No space left on device" in proc.stderr, proc.stderr
                assert f"{tree} is unchanged (checksums of" in proc.stderr, proc.stderr
                assert snapshot(tree) == before, leave
                assert not any(p.stat().st_size == 0 and p.name != ".timestamp"
                               for p in tree.rglob("*") if p.is_file())
                results[leave] = "rolled back" if "rolled back" in proc.stderr else "refused"
            shutil.rmtree(tree)
    print(results)
    # out of space before the journal was in place, and in the middle of the change
    assert {"refused", "rolled back", "carried"} <= set(results.values()), results


def test_an_immutable_file_leaves_the_tree_as_it_was(tmp_path):
    image = tmp_path / "ext4.img"
    subprocess.run(["truncate", "-s", "16M", str(image)], check=True)
    subprocess.run(["mkfs.ext4", "-q", "-F", str(image)], check=True)
    with mounted(tmp_path / "ext4", "-o", "loop", str(image)) as disk:
        for immutable in ("kernel/tracepoint.c", "kernel/panic.c", "kernel"):
            tree = lacking_both(disk / "t")
            before = snapshot(tree)
            subprocess.run(["chattr", "+i", str(tree / immutable)], check=True)
            try:
                proc = _run(["apply", "--tree", tree])
            finally:
                subprocess.run(["chattr", "-i", str(tree / immutable)], check=True)
            assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
            assert "Operation not permitted" in proc.stderr, proc.stderr
            # the file the user must look at, not the name written beside it
            named = immutable if immutable != "kernel" else "kernel/"
            assert f"Operation not permitted: {tree / named}" in proc.stderr, proc.stderr
            assert ".taintport-" not in proc.stderr, proc.stderr
            assert f"{tree} is unchanged (checksums of" in proc.stderr, proc.stderr
            assert snapshot(tree) == before, immutable
            assert not (tree / ".pc").exists() and not (tree / "patches").exists()
            shutil.rmtree(tree)


def test_export_into_a_read_only_or_full_folder_is_a_clear_error(tmp_path):
    tree = lacking_both(tmp_path / "tree")
    with mounted(tmp_path / "ro", "-t", "tmpfs", "-o", "size=1m,ro", "tmpfs") as ro:
        proc = _run(["apply", "--tree", tree, "--export", ro])
        assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
        assert f"{ro}: cannot write there (Read-only file system" in proc.stderr
    with mounted(tmp_path / "full", "-t", "tmpfs", "-o", "size=1m", "tmpfs") as full:
        for leave in range(0, 32 * 1024, 4096):
            out = full / "out"
            out.mkdir()
            (out / "series").write_text("mine.patch\n")
            _fill(full, leave)
            proc = _run(["apply", "--tree", tree, "--export", out])
            if proc.returncode:
                assert proc.returncode == 2 and "No space left" in proc.stderr, proc.stderr
                assert sorted(p.name for p in out.iterdir()) == ["series"], leave
                assert (out / "series").read_text() == "mine.patch\n"
            shutil.rmtree(out)
            (full / "filler").unlink()


# ------------------------------------------------------- the cache tree's switch

SWITCH = """
import sys
from pathlib import Path
sys.path.insert(0, {lib!r})
from taintport.tree import series, variants
series.switch(Path({tree!r}), series.load("v", Path({quilt!r})), variants.named({variant!r}),
              Path({log!r}))
"""


def _switch_setup(tmp_path):
    tree = tmp_path / "tree"
    tree.mkdir()
    files = {f"f{i}.c": ORIGINAL.replace("int a;", f"int a{i};") for i in range(3)}
    for name, text in files.items():
        (tree / name).write_text(text)
    qdir = tmp_path / "quilt" / "v"
    lines = []
    for group in ("reverted", "backported"):
        for name, text in files.items():
            reverted = text.replace("int c;", "int c_reverted;")
            base, after = (text, reverted) if group == "reverted" else (reverted, text)
            patch(qdir / group / f"{name}.patch", base, after, name)
            lines.append(f"{group}/{name}.patch")
    (qdir / "series").write_text("\n".join(lines) + "\n")
    return tree, qdir.parent, files


def _switch(tmp_path, tree, quilt, variant, kill=None):
    code = SWITCH.format(lib=str(Path(__file__).resolve().parents[1] / "lib"), tree=str(tree),
                         quilt=str(quilt), variant=variant, log=str(tmp_path / "log"))
    cmd = [sys.executable, "-c", code]
    if kill:
        call, n = kill
        cmd = ["strace", "-o", "/dev/null", "-e", f"trace={call}",
               "-e", f"inject={call}:signal=SIGKILL:when={n}", *cmd]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


def test_a_switch_killed_anywhere_leaves_no_marker_it_does_not_deserve(tmp_path):
    """reverted -> backported killed at every rename, unlink and wait: the
    marker is the variant only when quilt has exactly that variant applied,
    and the next switch always ends in the variant asked for."""
    tree, quilt, files = _switch_setup(tmp_path)
    pristine = tmp_path / "pristine"
    assert _switch(tmp_path, tree, quilt, "reverted").returncode == 0
    shutil.copytree(tree, pristine, symlinks=True)
    loaded = series.load("v", quilt)
    points = [(call, n) for call in ("rename", "unlink", "wait4") for n in range(1, 9)]
    untrusted = 0
    for point in points:
        shutil.rmtree(tree)
        shutil.copytree(pristine, tree, symlinks=True)
        _switch(tmp_path, tree, quilt, "backported", kill=point)
        said = series.current_variant(tree)
        applied_list = tree / ".pc" / "applied-patches"
        applied = applied_list.read_text().split() if applied_list.exists() else []
        if said:
            assert applied == list(loaded.for_variant(variants.named(said))), \
                (point, said, applied)
        else:
            untrusted += 1
        done = _switch(tmp_path, tree, quilt, "backported")
        assert done.returncode == 0, (point, done.stderr)
        assert series.current_variant(tree) == "backported"
        assert all((tree / name).read_text() == text for name, text in files.items()), point
    assert untrusted, "no kill landed inside a switch"
