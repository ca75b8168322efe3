# SPDX-License-Identifier: GPL-2.0
"""One cold build at a time, rebuilds beside it; ccache only when asked for.

The builds are stood in by a function that notes when it runs (the real
make is what the e2e tests and the bench run)."""
import io
import threading
import time
from types import SimpleNamespace

import pytest

from taintport.cache import Cache
from taintport.errors import InputError
from taintport.judge import verdict
from taintport.kernel import build
from taintport.layer import fixes
from taintport.results.cells import Cell
from taintport.run.progress import Progress
from taintport.run import stages
from taintport.run.stages import Chain
from taintport.tree.variants import named


def test_two_cold_builds_never_overlap_and_a_rebuild_does_not_wait(tmp_path, monkeypatch):
    chain = Chain(Cache(tmp_path / "cache"), tmp_path / "out", verdict.load(fixes.NAMES),
                  Progress(0, stream=io.StringIO()), jobs=1, timeout=10)
    spans = {}

    def stand_in(tree, build_dir, name, out, log, jobs, cache_root):
        start = time.monotonic()
        time.sleep(0.3)
        spans[name] = (start, time.monotonic())
        return name
    # the whole build stage: the kernel and the selftests built from it
    monkeypatch.setattr(stages, "build_with_selftests", stand_in)
    versions = [SimpleNamespace(name=n, version="1", source_dir="linux-source-1")
                for n in ("a", "b", "warm")]
    warm = chain.cache.build(versions[2])
    warm.mkdir(parents=True)
    (warm / "vmlinux").write_bytes(b"")  # built before: this one is a rebuild
    lanes = [threading.Thread(target=chain.compile,
                              args=(v, tmp_path, Cell.new(v.name, named("upstream"), {}),
                                    tmp_path / f"{v.name}.log"))
             for v in versions]
    for lane in lanes:
        lane.start()
    for lane in lanes:
        lane.join(5)
    (a0, a1), (b0, b1), (w0, w1) = spans["a"], spans["b"], spans["warm"]
    assert a1 <= b0 or b1 <= a0, "two cold builds ran at once"
    assert w0 < min(a1, b1), "the rebuild waited for a cold build"


def test_a_cold_build_waiting_for_its_turn_says_so(tmp_path, monkeypatch):
    """In a log the stage a waiting kernel shows is its wait, not the apply
    before it running for as long as the other kernel's cold build."""
    import io
    said = io.StringIO()
    chain = Chain(Cache(tmp_path / "cache"), tmp_path / "out", verdict.load(fixes.NAMES),
                  Progress(0, stream=said), jobs=1, timeout=10)
    monkeypatch.setattr(stages, "build_with_selftests", lambda *args: "built")
    version = SimpleNamespace(name="b", version="1", source_dir="linux-source-1")
    with chain.cold_build:  # another kernel's cold build
        lane = threading.Thread(target=chain.compile,
                                args=(version, tmp_path, Cell.new("b", named("upstream"), {}),
                                      tmp_path / "b.log"))
        lane.start()
        time.sleep(0.3)
        assert lane.is_alive()
        assert "[b upstream] build waits: one cold build at a time" in said.getvalue()
    lane.join(5)
    assert "[b upstream] build\n" in said.getvalue()



@pytest.mark.parametrize("switch, through_ccache", [(None, False), ("0", False), ("1", True)])
def test_ccache_only_when_asked_for(tmp_path, monkeypatch, switch, through_ccache):
    """Kept build folders make an empty ccache pure cost (6.1 cold: 253 s
    through it, 181 s without): only TAINTPORT_CCACHE=1 (the CI pipelines)
    builds through it, in the cache's ccache/ folder."""
    if switch is None:
        monkeypatch.delenv(build.CCACHE, raising=False)
    else:
        monkeypatch.setenv(build.CCACHE, switch)
    args, env = build.make_args(tmp_path / "build", 3, tmp_path / "cache")
    assert ("CC=ccache gcc" in args) is through_ccache
    assert env.get("CCACHE_DIR") == (str(tmp_path / "cache" / "ccache") if through_ccache
                                     else None)
    assert args[:3] == [f"O={tmp_path / 'build'}", "ARCH=x86_64", "-j3"]


def test_a_ccache_switch_neither_0_nor_1_is_refused(tmp_path, monkeypatch):
    monkeypatch.setenv(build.CCACHE, "true")
    with pytest.raises(InputError, match=r"TAINTPORT_CCACHE: 'true' is neither 1"):
        build.make_args(tmp_path / "build", 3, tmp_path / "cache")
