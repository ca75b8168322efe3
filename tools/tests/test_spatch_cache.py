# SPDX-License-Identifier: GPL-2.0
"""spatch's answers kept by content (layer/spatch_cache.py): a question asked
again is answered without spatch, anything spatch reads changing asks it
again, an entry that is not whole or answers another question is never
taken, a failing run is never kept, and the folder stays within its limits."""
import json
import os
import shutil
import subprocess

import pytest

from taintport.layer import spatch, spatch_cache
from taintport.layer.model import LayerError

from conftest import fake_command
from test_carry import TAINTPORT, lacking_livepatch

COCCI = "tracing_allow_taint.cocci"
LIVEPATCH = {"taint": "TAINT_LIVEPATCH"}
# the shared mask with the unsigned and test entries and not the livepatch one
LACKING = """static int tracepoint_module_coming(struct module *mod)
{
	if (trace_module_has_bad_taint(mod))
		return 0;
	return 0;
}
static inline bool trace_module_has_bad_taint(struct module *mod)
{
	return mod->taints & ~((1 << TAINT_OOT_MODULE) | (1 << TAINT_CRAP) |
			       (1 << TAINT_UNSIGNED_MODULE) | (1 << TAINT_TEST));
}
"""


@pytest.fixture
def cache(tmp_path):
    """The folder of answers (Cache.spatch_answers())."""
    return tmp_path / "cache" / "spatch"


@pytest.fixture
def tree(tmp_path):
    root = tmp_path / "tree"
    (root / "kernel").mkdir(parents=True)
    (root / "kernel" / "tracepoint.c").write_text(LACKING)
    return root


def _judge(tree, cache, out=None):
    return spatch.run(COCCI, ["kernel/tracepoint.c"], tree, LIVEPATCH, "livepatch", cache,
                      out=out)


def _no_spatch(monkeypatch):
    """From here on a spatch run fails the test."""
    def refuse(*args, **kwargs):
        raise AssertionError(f"spatch ran: {args[0]}")
    monkeypatch.setattr(spatch.subprocess, "run", refuse)


def _entries(cache):
    return sorted(p for p in cache.iterdir() if spatch_cache.ENTRY.fullmatch(p.name))


def test_the_same_question_is_answered_without_spatch(tree, cache, monkeypatch):
    first = _judge(tree, cache)
    assert [v.kind for v in first.verdicts] == ["missing"]
    assert len(_entries(cache)) == 1
    _no_spatch(monkeypatch)
    assert _judge(tree, cache) == first
    # the same bytes in another folder (a scratch copy of the tree): the same question
    other = tree.parent / "copy"
    shutil.copytree(tree, other)
    assert _judge(other, cache) == first


def test_a_patch_run_answered_again_writes_the_same_file(tree, cache, monkeypatch):
    out = tree / "kernel" / "tracepoint.c.spatch-out"
    first = _judge(tree, cache, out)
    written = out.read_bytes()
    assert b"TAINT_LIVEPATCH" in written and first.fired
    out.unlink()
    _no_spatch(monkeypatch)
    assert _judge(tree, cache, out) == first
    assert out.read_bytes() == written


@pytest.mark.parametrize("change", ["file", "params", "semantic patch", "spatch",
                                    "cocciconfig here", "cocciconfig in home", "COCCI variable"])
def test_anything_spatch_reads_changing_asks_spatch_again(tree, cache, monkeypatch, tmp_path,
                                                          change):
    ran = []
    real_run = subprocess.run

    def counted(cmd, *args, **kwargs):
        ran.append(cmd)
        return real_run(cmd, *args, **kwargs)
    params = dict(LIVEPATCH)
    _judge(tree, cache)
    monkeypatch.setattr(spatch.subprocess, "run", counted)
    if change == "file":
        source = tree / "kernel" / "tracepoint.c"
        source.write_text(LACKING.replace("return 0;\n}", "return 1;\n}", 1))
    elif change == "params":
        params = {"taint": "TAINT_TEST"}
    elif change == "semantic patch":
        patches = tmp_path / "sp"
        shutil.copytree(spatch.SEMANTIC_PATCHES, patches)
        with open(patches / COCCI, "a") as f:
            f.write("// one more comment\n")
        monkeypatch.setattr(spatch, "SEMANTIC_PATCHES", patches)
    elif change == "spatch":
        fake_command(tmp_path, monkeypatch, "spatch", f'exec {shutil.which("spatch")} "$@"\n')
    elif change == "cocciconfig here":
        (tree / ".cocciconfig").write_text("[spatch]\n\toptions = --timeout 200\n")
    elif change == "cocciconfig in home":
        (tmp_path / "home").mkdir()
        (tmp_path / "home" / ".cocciconfig").write_text("[spatch]\n\toptions = --timeout 200\n")
        monkeypatch.setenv("HOME", str(tmp_path / "home"))
    else:
        monkeypatch.setenv("COCCINELLE_HOME", "/usr/lib/coccinelle")
    spatch.run(COCCI, ["kernel/tracepoint.c"], tree, params, "livepatch", cache)
    assert len(ran) == 1, change


def _plant(cache, name, doc):
    (cache / f"{name}.json").write_text(json.dumps(doc))


@pytest.mark.parametrize("damage", ["body", "key", "truncated", "not json", "bad out"])
def test_an_entry_not_whole_or_for_another_question_is_never_taken(tree, cache, damage):
    first = _judge(tree, cache)
    [entry] = _entries(cache)
    doc = json.loads(entry.read_text())
    # an answer that says the piece is present, which spatch never said here
    lie = doc["body"]["stdout"].replace("taintport: missing", "taintport: present")
    if damage == "body":
        doc["body"]["stdout"] = lie  # its seal no longer matches
        entry.write_text(json.dumps(doc))
    elif damage == "key":
        doc["body"]["stdout"] = lie
        doc["sha256"] = spatch_cache._seal(doc["body"])
        doc["key"] = "0" * 64  # whole, but another question's answer
        entry.write_text(json.dumps(doc))
    elif damage == "truncated":
        entry.write_bytes(entry.read_bytes()[:40])
    elif damage == "not json":
        entry.write_bytes(b"\xff\xfe taintport: present present kernel/tracepoint.c:1:1-1:2")
    else:
        doc["body"]["out"] = "not base64!"
        doc["sha256"] = spatch_cache._seal(doc["body"])
        entry.write_text(json.dumps(doc))
    assert _judge(tree, cache) == first
    # and the run put the real answer back
    assert json.loads(entry.read_text())["body"]["stdout"] != lie


def test_a_failing_run_is_never_kept(tree, cache, tmp_path, monkeypatch):
    fake_command(tmp_path, monkeypatch, "spatch",
                 'echo "taintport: present present kernel/tracepoint.c:1:1-1:2"\n'
                 'echo "EXN: Failure" >&2\n')
    with pytest.raises(LayerError, match="EXN"):
        _judge(tree, cache)
    assert not cache.exists() or _entries(cache) == []
    with pytest.raises(LayerError, match="EXN"):
        _judge(tree, cache)  # asked again: run again, failing again


def test_a_cache_that_cannot_be_written_only_costs_a_run(tree, tmp_path):
    (tmp_path / "file").write_text("not a folder\n")
    cache = tmp_path / "file" / "spatch"
    first = _judge(tree, cache)
    assert [v.kind for v in first.verdicts] == ["missing"]
    assert _judge(tree, cache) == first


def _flood(cache, count, size=0, age=1_000_000):
    cache.mkdir(parents=True, exist_ok=True)
    for n in range(count):
        path = cache / f"{n:064x}.json"
        with open(path, "wb") as f:
            f.truncate(size)  # apparent size: what the limit counts
        os.utime(path, (age + n, age + n))


def test_a_flooded_folder_is_brought_under_its_limit_oldest_first(tree, cache):
    _flood(cache, spatch_cache.LIMIT + 100)
    _judge(tree, cache)
    kept = _entries(cache)
    assert len(kept) <= spatch_cache.LIMIT * 3 // 4
    names = {p.name for p in kept}
    assert f"{spatch_cache.LIMIT + 99:064x}.json" in names  # the newest flood entry stays
    assert f"{0:064x}.json" not in names                     # the oldest went
    assert len([p for p in kept if p.stat().st_size > 0]) == 1  # and the new answer is there


def test_a_folder_over_its_bytes_is_brought_under_them(tree, cache):
    _flood(cache, 3, size=spatch_cache.LIMIT_BYTES // 2)
    _judge(tree, cache)
    total = sum(p.stat().st_size for p in _entries(cache))
    assert total <= spatch_cache.LIMIT_BYTES * 3 // 4
    assert any(p.stat().st_size < 1 << 20 for p in _entries(cache))  # the new answer


def test_a_killed_runs_temporary_file_goes_and_a_live_ones_stays(tree, cache):
    import fcntl
    cache.mkdir(parents=True)
    dead = cache / f".{'a' * 64}.json.taintport-{'0' * 12}"
    dead.write_text("half")
    live = cache / f".{'b' * 64}.json.taintport-{'1' * 12}"
    live.write_text("being written")
    with open(live) as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        _flood(cache, spatch_cache.LIMIT + 1)
        _judge(tree, cache)
        assert not dead.exists() and live.exists()


def test_an_answer_used_again_outlives_newer_ones_never_used(tree, cache):
    first = _judge(tree, cache)
    [used] = _entries(cache)
    os.utime(used, (0, 0))  # written long ago...
    assert _judge(tree, cache) == first  # ...and used now
    _flood(cache, spatch_cache.LIMIT + 1)
    spatch.run(COCCI, ["kernel/tracepoint.c"], tree, {"taint": "TAINT_TEST"}, "test", cache)
    assert used.exists()


def test_the_answers_go_to_the_cache_the_run_names(tmp_path):
    """`apply --cache DIR`: spatch's answers in DIR, none in TAINTPORT_CACHE's;
    `inspect` (no --cache) in TAINTPORT_CACHE's."""
    env = dict(os.environ, TAINTPORT_CACHE=str(tmp_path / "default"))
    tree = lacking_livepatch(tmp_path / "t")

    def taintport(*args):
        return subprocess.run([*TAINTPORT, *map(str, args)], capture_output=True, text=True,
                              timeout=300, env=env)
    proc = taintport("apply", "--tree", tree, "--cache", tmp_path / "named")
    assert proc.returncode == 0, proc.stderr
    assert _entries(tmp_path / "named" / "spatch")
    assert not (tmp_path / "default" / "spatch").exists()
    proc = taintport("inspect", "--tree", tree)
    assert proc.returncode == 0, proc.stderr
    assert _entries(tmp_path / "default" / "spatch")
