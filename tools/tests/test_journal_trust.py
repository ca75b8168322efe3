# SPDX-License-Identifier: GPL-2.0
"""The journal is input: what a tree holds never makes taintport act for someone else.

A journal (journal.py) found in a tree is acted on only when this user's
key authenticates it, and even then touches nothing outside the tree and
follows no link. Each hostile journal below is planted in a tree under
tmp_path beside a victim file outside it, and the real command line must
refuse it: exit 2, a message naming the journal, the victim and the tree
untouched. Then the journal's own guarantees, each against the fault that
would break it (a write that fails or writes short, a tampered copy, a
leftover journal, a rollback killed halfway), the one-run-per-tree lock,
children and scratch copies after SIGKILL, and the reader fuzzed.
"""
import hashlib
import json
import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from taintport import journal
from taintport.cache import Cache
from taintport.journal import JOURNAL, Change, JournalError, Untrusted, commit, recover

from conftest import REPO, fake_command
from test_carry import lacking_livepatch

# A fixed seed and a budget of seconds in the default run; longer by hand:
# TAINTPORT_FUZZ_EXAMPLES=20000 /usr/bin/python3 -m pytest tools/tests/test_journal_trust.py -k fuzz
FUZZ = settings(max_examples=int(os.environ.get("TAINTPORT_FUZZ_EXAMPLES", "150")),
                derandomize=True, deadline=2000, database=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture,
                                       HealthCheck.too_slow])
SECRET = "attacker's key\n"


class Killed(BaseException):
    """SIGKILL at a chosen point: nothing after it runs, no handler sees it."""


def small_tree(root):
    """What apply --tree checks before it reads a journal: a Makefile and kernel/."""
    (root / "kernel").mkdir(parents=True)
    (root / "Makefile").write_text("VERSION = 6\nPATCHLEVEL = 1\n")
    (root / "kernel" / "panic.c").write_text("int x;\n")
    return root


def key_of(tmp_path):
    return Cache(tmp_path / "cache").journal_key()


def plant(root, plan, key=None, orig=None):
    """A journal in root with plan (bytes or a document), sealed with key
    (None: not authenticated, a MAC of another key), orig/ files as given."""
    folder = root / JOURNAL
    folder.mkdir()
    data = plan if isinstance(plan, bytes) else json.dumps(plan).encode()
    (folder / journal.PLAN).write_bytes(data)
    sealer = key or journal.Key(b"not this user's" * 2, Path("elsewhere"))
    (folder / journal.MAC).write_bytes(journal._seal(sealer, data))
    for rel, data in (orig or {}).items():
        (folder / journal.ORIG / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / journal.ORIG / rel).write_bytes(data)
    return folder


def entry(path, before=None, after="0" * 64, mode=0o644):
    return {"path": path, "before": before, "after": after, "mode": mode}


def plan_of(*files, folders=(), nonce="0123456789ab"):
    return {"id": nonce, "files": list(files), "folders": list(folders)}


def snapshot(root):
    """Every name under root (walked without following a link) and what it is:
    a file's checksum, a link's target, a folder, a special file."""
    found = {}
    for top, dirs, files in os.walk(root):
        for name in dirs + files:
            path = Path(top) / name
            info = path.lstat()
            found[str(path.relative_to(root))] = (
                f"-> {os.readlink(path)}" if stat.S_ISLNK(info.st_mode) else
                "folder" if stat.S_ISDIR(info.st_mode) else
                sha(path.read_bytes()) if stat.S_ISREG(info.st_mode) else
                f"special {stat.S_IFMT(info.st_mode)}")
    return found


def sha(data):
    return hashlib.sha256(data).hexdigest()


def refused(taintport, tree, victim, *words, args=()):
    """apply --tree refuses: exit 2, no traceback, the journal named, the
    victim and the tree as they were."""
    kept = victim.read_bytes() if victim.exists() else None
    before = snapshot(tree)
    proc = taintport("apply", "--tree", tree, *args)
    assert proc.returncode == 2, proc.stdout
    assert "Traceback" not in proc.stderr
    assert JOURNAL in proc.stderr
    for word in words:
        assert word in proc.stderr, (word, proc.stderr)
    assert (victim.read_bytes() if victim.exists() else None) == kept
    assert snapshot(tree) == before
    return proc


# ------------------------------------------------------ hostile journals, CLI

@pytest.fixture
def scene(tmp_path):
    """A tree, a victim file outside it, and this user's key."""
    tree = small_tree(tmp_path / "t")
    outside = tmp_path / "outside"
    outside.mkdir()
    victim = outside / "authorized_keys"
    victim.write_text("the user's own key\n")
    return tree, victim, key_of(tmp_path)


def test_an_unauthenticated_well_formed_journal_is_refused_with_how_to_remove_it(
        taintport, scene):
    tree, victim, _ = scene
    (tree / "h").symlink_to(victim.parent)
    plant(tree, plan_of(entry("h/authorized_keys", before=sha(SECRET.encode()))),
          orig={"h/authorized_keys": SECRET.encode()})
    proc = refused(taintport, tree, victim, "not authenticated", "rm -r", "ls -la")
    assert "rolled back" not in proc.stdout


def test_the_issue_plant_is_refused_even_with_this_users_key(taintport, scene):
    """h/authorized_keys through a symlink to another folder, and an orig/
    copy with the attacker's bytes: never restored through the link."""
    tree, victim, key = scene
    (tree / "h").symlink_to(victim.parent)
    plant(tree, plan_of(entry("h/authorized_keys", before=sha(SECRET.encode()))), key,
          orig={"h/authorized_keys": SECRET.encode()})
    refused(taintport, tree, victim, "h/authorized_keys", "not a folder")


@pytest.mark.parametrize("path", ["../outside/authorized_keys", "/tmp/x", "", 7, None,
                                  "kernel/../../outside/authorized_keys", "./kernel/panic.c",
                                  "kernel//panic.c", ".taintport-journal/plan.json"])
def test_a_plan_path_outside_the_tree_or_not_a_path_is_refused(taintport, scene, path):
    tree, victim, key = scene
    plant(tree, plan_of(entry(path)), key)
    refused(taintport, tree, victim, "a damaged journal")


@pytest.mark.parametrize("nonce", ["../../x", "a/b", 12, "0123456789AB"])
def test_an_id_that_is_not_ours_is_refused(taintport, scene, nonce):
    tree, victim, key = scene
    plant(tree, plan_of(entry("kernel/panic.c"), nonce=nonce), key)
    refused(taintport, tree, victim, "a damaged journal", "id")


def test_a_symlink_in_a_folder_the_plan_creates_is_never_removed_through(taintport, scene):
    tree, victim, key = scene
    (tree / "d").symlink_to(victim.parent)
    plant(tree, plan_of(entry("d/authorized_keys"), folders=["d"]), key)
    refused(taintport, tree, victim, "not a folder")
    assert (tree / "d").is_symlink()


def test_an_orig_folder_that_is_a_symlink_moves_nothing_into_the_tree(taintport, scene):
    tree, victim, key = scene
    panic = (tree / "kernel" / "panic.c").read_bytes()
    folder = plant(tree, plan_of(entry("kernel/panic.c", before=sha(victim.read_bytes()))),
                   key)
    (victim.parent / "kernel").mkdir()
    os.link(victim, victim.parent / "kernel" / "panic.c")
    (folder / journal.ORIG).symlink_to(victim.parent)
    refused(taintport, tree, victim, "gone or changed")
    assert (tree / "kernel" / "panic.c").read_bytes() == panic
    assert (victim.parent / "kernel" / "panic.c").exists()


def test_a_fifo_plan_is_refused_without_blocking(scene, tmp_path):
    tree, victim, key = scene
    folder = plant(tree, b"{}", key)
    (folder / journal.PLAN).unlink()
    os.mkfifo(folder / journal.PLAN)

    def briefly(*args):  # a run that blocks on the FIFO fails here, in seconds
        return subprocess.run([sys.executable, str(REPO / "tools" / "taintport"),
                               *map(str, args)], capture_output=True, text=True, timeout=30,
                              env=dict(os.environ, TAINTPORT_CACHE=str(tmp_path / "cache")))
    refused(briefly, tree, victim, "special file")


@pytest.mark.parametrize("sealed", [False, True])
def test_a_huge_plan_is_refused_before_it_is_read_whole(taintport, scene, sealed):
    tree, victim, key = scene
    plant(tree, b" " * (journal.MAX_PLAN + 1), key if sealed else None)
    refused(taintport, tree, victim, "more than the")


def test_the_plan_reader_bounds_size_and_nesting_before_parsing():
    with pytest.raises(ValueError, match="more than the"):
        journal.parse_plan(b" " * (journal.MAX_PLAN + 1))
    with pytest.raises(ValueError, match="nested deeper"):
        journal.parse_plan(b"[" * 200_000)
    lone = json.dumps(plan_of(entry("\ud800"))).encode()
    with pytest.raises(ValueError, match="not a name a file can have"):
        journal.parse_plan(lone)


@pytest.mark.parametrize("sealed", [False, True])
def test_200000_nested_brackets_are_refused_without_a_traceback(taintport, scene, sealed):
    tree, victim, key = scene
    plant(tree, b"[" * 200_000, key if sealed else None)
    refused(taintport, tree, victim, "nested deeper" if sealed else "not authenticated")


@pytest.mark.parametrize("name,make", [
    (f"{JOURNAL}.done", lambda p, v: p.write_text("x")),
    (f"{JOURNAL}.new-x", lambda p, v: p.symlink_to(v.parent)),
    (f"{JOURNAL}.done", lambda p, v: p.mkdir()),
    (f"{JOURNAL}", lambda p, v: p.symlink_to(v.parent)),
    (f"{JOURNAL}", lambda p, v: p.write_text("{}")),
])
def test_leftovers_that_are_not_ours_are_refused_and_never_removed(taintport, scene, name,
                                                                    make):
    tree, victim, _ = scene
    make(tree / name, victim)
    refused(taintport, tree, victim, name)
    assert os.path.lexists(tree / name)


def test_a_leftover_named_with_another_keys_tag_is_refused(taintport, scene):
    tree, victim, key = scene
    other = journal.Key(b"x" * 32, Path("k"))
    name = journal._leftover("0123456789ab", journal._tag(other, "0123456789ab"), journal.DONE)
    (tree / name).mkdir()
    refused(taintport, tree, victim, name, "not authenticated")


def test_a_journal_planted_in_an_export_folder_is_refused(taintport, scene, tmp_path):
    tree, victim, key = scene
    tree = lacking_livepatch(tmp_path / "full")
    out = tmp_path / "out"
    out.mkdir()
    (out / "h").symlink_to(victim.parent)
    plant(out, plan_of(entry("h/authorized_keys", before=sha(SECRET.encode()))),
          orig={"h/authorized_keys": SECRET.encode()})
    before = snapshot(out)
    proc = taintport("apply", "--tree", tree, "--export", out)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert f"{out / JOURNAL}" in proc.stderr and "not authenticated" in proc.stderr
    assert victim.read_text() == "the user's own key\n" and snapshot(out) == before


# ------------------------------------------------- the journal's own guarantees

FILES = {"a/one.c": b"one\n", "a/two.c": b"two\n", "b/three.c": b"three\n"}


@pytest.fixture
def folder(tmp_path):
    root = tmp_path / "f"
    for rel, data in FILES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
    return root


def changes():
    return [Change(rel, data.upper()) for rel, data in FILES.items()] + \
        [Change("new/dir/four.c", b"FOUR\n")]


def contents(root):
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file()}


def killed_at(monkeypatch, function, when):
    """journal.function raising Killed on the call when(*args) says."""
    real = getattr(journal, function)

    def fake(*args, **kwargs):
        if when(*args):
            raise Killed
        return real(*args, **kwargs)
    monkeypatch.setattr(journal, function, fake)


def test_commit_then_a_rerun_finds_nothing_to_recover(folder, tmp_path):
    key = key_of(tmp_path)
    commit(folder, changes(), key)
    assert contents(folder) == {c.path: c.data for c in changes()}
    assert recover(folder, key) == ""


def test_a_write_that_writes_short_is_caught_by_the_checksums_and_rolled_back(
        folder, tmp_path, monkeypatch):
    key = key_of(tmp_path)
    real = journal._write

    def short(name, data, mode, dir_fd=None):
        real(name, data[:2] if ".taintport-" in name else data, mode, dir_fd)
    monkeypatch.setattr(journal, "_write", short)
    before = contents(folder)
    with pytest.raises(JournalError, match="not as written"):
        commit(folder, changes(), key)
    assert contents(folder) == before and not (folder / "new").exists()
    assert not any(p.name.startswith(JOURNAL) for p in folder.iterdir())


def test_a_write_that_fails_partway_is_rolled_back_at_once(folder, tmp_path, monkeypatch):
    key = key_of(tmp_path)
    real = journal._write
    calls = []

    def full(name, data, mode, dir_fd=None):
        if ".taintport-" in name:
            calls.append(name)
            if len(calls) == 3:
                raise OSError(28, "No space left on device", name)
        real(name, data, mode, dir_fd)
    monkeypatch.setattr(journal, "_write", full)
    before = contents(folder)
    with pytest.raises(JournalError, match="No space left.*rolled back"):
        commit(folder, changes(), key)
    assert contents(folder) == before and not (folder / "new").exists()


def test_a_leftover_journal_is_refused_by_commit(folder, tmp_path, monkeypatch):
    key = key_of(tmp_path)
    killed_at(monkeypatch, "_replace_at", lambda fd, entry, *_: entry.path == "a/two.c")
    with pytest.raises(Killed):
        commit(folder, changes(), key)
    monkeypatch.undo()
    with pytest.raises(JournalError, match="interrupted run's journal"):
        commit(folder, changes(), key)
    assert "1 files restored, 0 removed" in recover(folder, key)
    assert contents(folder) == FILES


def test_a_tampered_copy_in_orig_is_never_restored(folder, tmp_path, monkeypatch):
    key = key_of(tmp_path)
    killed_at(monkeypatch, "_replace_at", lambda fd, entry, *_: entry.path == "b/three.c")
    with pytest.raises(Killed):
        commit(folder, changes(), key)
    (folder / JOURNAL / "orig" / "a/one.c").write_bytes(b"planted\n")
    with pytest.raises(JournalError, match="a/one.c: cannot be restored.*gone or changed"):
        recover(folder, key)
    assert (folder / "a/one.c").read_bytes() == b"ONE\n"
    assert (folder / JOURNAL).is_dir()


def test_a_journal_sealed_by_another_key_is_untrusted_and_untouched(folder, tmp_path,
                                                                     monkeypatch):
    key = key_of(tmp_path)
    killed_at(monkeypatch, "_replace_at", lambda fd, entry, *_: entry.path == "b/three.c")
    with pytest.raises(Killed):
        commit(folder, changes(), key)
    before = contents(folder)
    other = journal.Key(os.urandom(32), tmp_path / "other.key")
    with pytest.raises(Untrusted, match="not authenticated"):
        recover(folder, other)
    assert contents(folder) == before


def test_a_rollback_killed_after_it_was_done_is_not_taken_for_a_finished_run(
        folder, tmp_path, monkeypatch):
    key = key_of(tmp_path)
    killed_at(monkeypatch, "_replace_at", lambda fd, entry, *_: entry.path == "b/three.c")
    with pytest.raises(Killed):
        commit(folder, changes(), key)
    monkeypatch.undo()
    real = journal.shutil.rmtree

    def killed_removing(path, *args, **kwargs):
        if ".undone-" in str(path):
            raise Killed
        real(path, *args, **kwargs)
    monkeypatch.setattr(journal.shutil, "rmtree", killed_removing)
    with pytest.raises(Killed):
        recover(folder, key)
    monkeypatch.undo()
    said = recover(folder, key)
    assert "rolled back" in said and "written every file" not in said
    assert contents(folder) == FILES


def test_a_rollback_killed_halfway_finishes_on_the_next_run(folder, tmp_path, monkeypatch):
    key = key_of(tmp_path)
    killed_at(monkeypatch, "_finish", lambda *_: True)
    with pytest.raises(Killed):
        commit(folder, changes(), key)
    monkeypatch.undo()
    killed_at(monkeypatch, "_restore", lambda root, fd, jfd, entry: entry.path == "a/one.c")
    with pytest.raises(Killed):
        recover(folder, key)
    monkeypatch.undo()
    assert "rolled back an interrupted run" in recover(folder, key)
    assert contents(folder) == FILES


def test_the_key_is_this_users_alone(tmp_path):
    cache = Cache(tmp_path / "cache")
    key = cache.journal_key()
    info = key.where.lstat()
    assert stat.S_IMODE(info.st_mode) == 0o600 and len(key.secret) == 32
    assert cache.journal_key() == key
    key.where.chmod(0o644)
    with pytest.raises(journal.InputError, match="mode 0600"):
        cache.journal_key()
    key.where.unlink()
    key.where.symlink_to(tmp_path / "elsewhere")
    with pytest.raises(journal.InputError, match="journal key"):
        cache.journal_key()


# ------------------------------------------------------------ one run per tree

def test_a_second_run_on_a_tree_is_refused_naming_the_holder(taintport, tmp_path):
    tree = small_tree(tmp_path / "t")
    before = snapshot(tree)
    with Cache(tmp_path / "cache").folder_locked(tree):
        proc = taintport("apply", "--tree", tree)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert f"another taintport run (pid {os.getpid()})" in proc.stderr
    assert snapshot(tree) == before


# ------------------------------------------- children and scratch after SIGKILL

def _kill_mid(tmp_path, monkeypatch, tree, tool="spatch"):
    """apply --tree killed with SIGKILL while a (fake, slow) tool runs: the
    pids of those that started (the layer runs two spatches at once)."""
    started = tmp_path / f"{tool}.pid"
    # the pid as this test sees it: $$ is the one the tool's PID namespace gives it
    fake_command(tmp_path, monkeypatch, tool,
                 f'read -r stat < /proc/self/stat\necho "${{stat%% *}}" >> {started}\n'
                 'exec sleep 120\n')
    env = dict(os.environ, TAINTPORT_CACHE=str(tmp_path / "cache"),
               TMPDIR=str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    run = subprocess.Popen([sys.executable, str(REPO / "tools" / "taintport"), "apply",
                            "--tree", str(tree)], env=env, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while not started.exists() or not started.read_text().strip():
        assert time.monotonic() < deadline and run.poll() is None
        time.sleep(0.05)
    time.sleep(0.5)  # the second spatch starts too
    run.send_signal(signal.SIGKILL)
    run.wait()
    return [int(pid) for pid in started.read_text().split()]


def _alive(pids):
    """Which of pids still run (a zombie has ended), killed now: a failing
    test leaves no process behind either."""
    alive = []
    for pid in pids:
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except FileNotFoundError:
            continue
        if "\nState:\tZ" not in status:
            alive.append(pid)
    return alive


def _none_left(pids):
    deadline = time.monotonic() + 10
    while _alive(pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    alive = _alive(pids)
    for pid in alive:
        os.kill(pid, signal.SIGKILL)
    return not alive


def test_no_spatch_outlives_a_killed_run_and_no_copy_is_left_outside_the_cache(
        tmp_path, monkeypatch):
    tree = lacking_livepatch(tmp_path / "t")
    assert _none_left(_kill_mid(tmp_path, monkeypatch, tree)), "spatch outlived the run"
    assert list((tmp_path / "tmp").iterdir()) == []
    assert [p.name[:6] for p in (tmp_path / "cache" / "scratch").glob("layer-*")] == ["layer-"]


def test_no_quilt_outlives_a_killed_run(tmp_path, monkeypatch):
    tree = lacking_livepatch(tmp_path / "t")
    assert _none_left(_kill_mid(tmp_path, monkeypatch, tree, "quilt")), \
        "quilt outlived the run"
    assert list((tmp_path / "tmp").iterdir()) == []


def test_a_later_run_removes_the_scratch_copy_a_killed_run_left(tmp_path, monkeypatch,
                                                                 taintport):
    tree = lacking_livepatch(tmp_path / "t")
    _none_left(_kill_mid(tmp_path, monkeypatch, tree))
    monkeypatch.undo()  # the real spatch again
    live = tmp_path / "cache" / "scratch"
    from taintport.cache import scratch
    with scratch(live, "layer-") as held:  # a live run's: never removed
        proc = taintport("inspect", "--tree", tree)
        assert proc.returncode == 1, proc.stderr  # the tree lacks the livepatch fix
        proc = taintport("apply", "--tree", tree, "--export", tmp_path / "out")
        assert proc.returncode == 0, proc.stderr
        assert [p for p in live.glob("layer-*")] == [held]
    assert list((tmp_path / "tmp").iterdir()) == []


# --------------------------------------------------- carry: foreign quilt state

def test_a_quilt_folder_named_elsewhere_is_refused(taintport, tmp_path):
    tree = lacking_livepatch(tmp_path / "t")
    (tree / ".pc").mkdir()
    (tree / ".pc" / ".quilt_patches").write_text("debian/patches\n")
    proc = taintport("apply", "--tree", tree)
    assert proc.returncode == 2 and "'debian/patches', taintport writes 'patches'" in \
        proc.stderr


def test_a_quilt_series_named_elsewhere_is_refused(taintport, tmp_path):
    tree = lacking_livepatch(tmp_path / "t")
    (tree / ".pc").mkdir()
    (tree / ".pc" / ".quilt_series").write_text("other-series\n")
    proc = taintport("apply", "--tree", tree)
    assert proc.returncode == 2 and "'other-series', taintport writes 'series'" in proc.stderr


def test_applied_patches_that_are_not_the_start_of_the_series_are_refused(taintport,
                                                                           tmp_path):
    tree = lacking_livepatch(tmp_path / "t")
    (tree / "patches").mkdir()
    (tree / "patches" / "series").write_text("one.patch\ntwo.patch\n")
    (tree / ".pc").mkdir()
    (tree / ".pc" / "applied-patches").write_text("two.patch\n")
    before = snapshot(tree)
    proc = taintport("apply", "--tree", tree)
    assert proc.returncode == 2 and "not the start of" in proc.stderr
    assert snapshot(tree) == before


def test_a_quilt_that_succeeds_and_changes_nothing_is_caught(tmp_path, monkeypatch):
    tree = lacking_livepatch(tmp_path / "t")
    fake_command(tmp_path, monkeypatch, "quilt", "exit 0\n")
    before = snapshot(tree)
    # the taintport fixture's environment is taken before the fake is on PATH
    proc = subprocess.run([sys.executable, str(REPO / "tools" / "taintport"), "apply",
                           "--tree", str(tree)], capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, TAINTPORT_CACHE=str(tmp_path / "cache")))
    assert proc.returncode == 2 and "is not the layer's" in proc.stderr, proc.stderr
    assert snapshot(tree) == before


def test_an_export_never_overwrites_a_different_patch(taintport, tmp_path):
    tree = lacking_livepatch(tmp_path / "t")
    out = tmp_path / "out"
    name = "taintport/0001-tracepoint-Allow-livepatch-module-add-trace-event.patch"
    (out / name).parent.mkdir(parents=True)
    (out / name).write_text("the user's own patch\n")
    proc = taintport("apply", "--tree", tree, "--export", out)
    assert proc.returncode == 2 and "exists: the layer was exported there before" in \
        proc.stderr
    assert (out / name).read_text() == "the user's own patch\n"
    assert not (out / "series").exists()


@pytest.mark.skipif(os.geteuid() != 0, reason="runs the tool as nobody: needs root")
def test_an_export_into_a_folder_nobody_may_not_write_is_a_named_error(tmp_path):
    import tempfile
    top = Path(tempfile.mkdtemp(prefix="taintport-nobody-", dir="/tmp"))
    try:
        top.chmod(0o755)
        tree = lacking_livepatch(top / "t")
        out = top / "out"
        out.mkdir()  # root's, 0755: nobody may not write it
        cache = top / "cache"
        cache.mkdir()
        os.chown(cache, 65534, 65534)
        proc = subprocess.run(
            ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--",
             sys.executable, str(REPO / "tools" / "taintport"), "apply", "--tree", str(tree),
             "--export", str(out)],
            capture_output=True, text=True, timeout=300, cwd=top,
            env=dict(os.environ, TAINTPORT_CACHE=str(cache), HOME=str(cache)))
        print(proc.stdout, proc.stderr)
        assert proc.returncode == 2 and "Traceback" not in proc.stderr
        assert f"{out}: cannot write there (Permission denied" in proc.stderr
        assert list(out.iterdir()) == []
    finally:
        subprocess.run(["rm", "-rf", "--", str(top)], check=True)


# ------------------------------------------------------------------ fuzzed

NAMES = st.sampled_from(["kernel/panic.c", "a", "../x", "/etc/passwd", "", ".", "a/./b",
                         "a//b", "a/", ".taintport-journal/x", "x\0y", "\ud800", "k/../k"])
LEAVES = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True),
                   NAMES, st.text(max_size=20), st.sampled_from(["0" * 64, "0123456789ab"]))
JSON = st.recursive(LEAVES, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.sampled_from(
        ["id", "files", "folders", "path", "before", "after", "mode", "x"]), inner,
        max_size=6)), max_leaves=30)
ENTRIES = st.fixed_dictionaries({"path": NAMES, "before": st.sampled_from([None, "0" * 64]),
                                 "after": st.sampled_from(["0" * 64, "x"]),
                                 "mode": st.sampled_from([0o644, -1, True, 0o10000])})
PLANS = st.fixed_dictionaries({"id": st.sampled_from(["0123456789ab", "../x", 1]),
                               "files": st.lists(ENTRIES, max_size=4),
                               "folders": st.lists(NAMES, max_size=3)})


def _parsed_or_named(data):
    start = time.monotonic()
    try:
        plan = journal.parse_plan(data)
    except ValueError as err:
        assert str(err)
        return None
    finally:
        assert time.monotonic() - start < 1
    for path in [e.path for e in plan.files] + list(plan.folders):
        assert not path.startswith("/") and ".." not in path.split("/") and path
    return plan


@FUZZ
@given(st.binary(max_size=4096))
def test_fuzz_arbitrary_bytes_give_a_plan_or_a_named_error(data):
    _parsed_or_named(data)


@FUZZ
@given(st.one_of(JSON, PLANS))
def test_fuzz_adversarial_json_gives_a_plan_or_a_named_error(doc):
    _parsed_or_named(json.dumps(doc).encode())


@FUZZ
@given(PLANS)
def test_fuzz_a_sealed_plan_never_touches_what_is_outside_the_tree(tmp_path, doc):
    root = tmp_path / "fuzz"
    if root.exists():
        subprocess.run(["rm", "-rf", "--", str(root)], check=True)
    tree = small_tree(root / "t")
    victim = root / "x"
    victim.write_text("victim\n")
    key = journal.Key(b"k" * 32, root / "key")
    plant(tree, doc, key, orig={"kernel/panic.c": b"planted\n"})
    try:
        said = recover(tree, key)
    except JournalError as err:
        assert str(err)
    else:
        assert "rolled back" in said
    assert victim.read_text() == "victim\n"
    panic = tree / "kernel" / "panic.c"  # a plan may say the run created it
    assert not panic.exists() or panic.read_bytes() == b"int x;\n"
