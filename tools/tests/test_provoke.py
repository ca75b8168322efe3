# SPDX-License-Identifier: GPL-2.0
"""The test harness that turns a cell unexpected or broken on purpose:
read strictly, marks what it touches, leaves everything else alone."""
import io
import copy
import os
import subprocess
import sys
from pathlib import Path

import pytest

from taintport.errors import InputError
from taintport.judge.verdict import Status
from taintport.results import folder
from taintport.results.cells import exit_code
from taintport.results.folder import Folder

import provoke

from test_ci import RESULTS


@pytest.fixture
def cells():
    return folder.load_matrix(RESULTS / "bookworm-6.1").cells


def test_unset_changes_nothing(cells):
    targets = provoke.from_environment({})
    assert targets == []
    assert [provoke.apply(targets, c) for c in cells] == cells
    assert exit_code(cells) == 0


@pytest.mark.parametrize("value", [
    "unexpected", "broken:bookworm-6.1/upstream", "error:bookworm-6.1",
    "error:bookworm-6.1/mainline", "error:Bookworm 6.1/upstream", "error:a/b/c",
])
def test_malformed_values_are_bad_input(value):
    with pytest.raises(InputError, match=provoke.VARIABLE):
        provoke.from_environment({provoke.VARIABLE: value})


def test_unexpected_adds_a_failing_check_that_says_why(cells):
    before = copy.deepcopy(cells)
    targets = provoke.from_environment({provoke.VARIABLE: "unexpected:bookworm-6.1/reverted"})
    after = [provoke.apply(targets, c) for c in cells]
    assert cells == before, "the caller's cell (the one stored) is not touched"
    reverted = next(c for c in after if c.variant.name == "reverted")
    assert reverted.status is Status.UNEXPECTED
    provoked = reverted.checks[-1]
    assert provoked.name == "provoked_unexpected" and not provoked.matches
    assert "test-only" in provoked.diagnostics[0]
    assert [c for c in after if c.variant.name != "reverted"] == \
        [c for c in cells if c.variant.name != "reverted"]
    assert exit_code(after) == 1


def test_error_adds_an_error_that_says_why(cells):
    targets = provoke.from_environment(
        {provoke.VARIABLE: "unexpected:bookworm-6.1/reverted, error:bookworm-6.1/upstream"})
    after = [provoke.apply(targets, c) for c in cells]
    upstream = next(c for c in after if c.variant.name == "upstream")
    assert upstream.status is Status.ERROR
    assert "test-only" in upstream.errors[-1]
    assert exit_code(after) == 2, "a broken run outranks a regression"


def test_a_malformed_switch_is_refused_before_any_work(tmp_path, monkeypatch):
    """Read when installed, before a fetch or a build could start: the
    harness's taintport exits 2 and has not made its cache."""
    monkeypatch.setattr(Folder, "publish", Folder.publish)  # restored after the test
    before = Folder.publish
    with pytest.raises(InputError, match=provoke.VARIABLE):
        provoke.install({provoke.VARIABLE: "sometimes:bookworm-6.1/upstream"})
    assert Folder.publish is before
    env = dict(os.environ, TAINTPORT_CACHE=str(tmp_path / "cache"),
               PYTHONPATH=str(Path(provoke.__file__).parents[1] / "lib"),
               **{provoke.VARIABLE: "sometimes:bookworm-6.1/upstream"})
    proc = subprocess.run([sys.executable, provoke.__file__, "matrix", "--out",
                           str(tmp_path / "out")], capture_output=True, text=True, env=env,
                          timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert provoke.VARIABLE in proc.stderr
    assert not (tmp_path / "cache").exists() and not (tmp_path / "out").exists()


def test_installed_it_provokes_what_a_folder_publishes(cells, tmp_path, monkeypatch):
    """The harness reaches the real publish path: the folder's copy is
    provoked, the caller's cell (the one the store keeps) is not."""
    monkeypatch.setattr(Folder, "publish", Folder.publish)  # restored after the test
    provoke.install({provoke.VARIABLE: "error:bookworm-6.1/upstream"})
    results = Folder(tmp_path, "2026-12-06T00:00:00Z", {})
    upstream = next(c for c in cells if c.variant.name == "upstream")
    results.publish(upstream)
    results.publish(results.published(upstream.version, upstream.variant))  # a peer's rejudge
    published = results.published(upstream.version, upstream.variant)
    assert published.status is Status.ERROR
    assert sum("test-only" in e for e in published.errors) == 1, "provoked once"
    assert upstream.status is not Status.ERROR


def test_the_fault_switch_reaches_every_chain_and_is_read_strictly(tmp_path, monkeypatch):
    """TAINTPORT_TEST_FAULT: each chain made afterwards boots with the fault
    on its command line, so each cell it makes says it was a fault run."""
    from taintport.cache import Cache
    from taintport.run import stages
    from taintport.run.progress import Progress
    with pytest.raises(InputError, match=provoke.FAULT_VARIABLE):
        provoke.faulty_chain("meltdown")
    monkeypatch.setattr(stages.Chain, "__init__", stages.Chain.__init__)  # restored after
    provoke.install({provoke.FAULT_VARIABLE: "truncate"})
    chain = stages.Chain(Cache(tmp_path / "cache"), tmp_path / "out", stages.expectations(),
                         Progress(1, stream=io.StringIO()), jobs=1, timeout=1)
    assert chain.append == "taintport.fault=truncate"


def test_a_cell_whose_agent_broke_on_purpose_is_never_stored(cells, tmp_path, monkeypatch):
    """The runner keeps a judged cell for reuse, but not one of a fault run."""
    import dataclasses

    from taintport.cache import Cache
    from taintport.run import matrix, store
    runner = matrix.Runner(Cache(tmp_path / "cache"), tmp_path / "out")
    kept = []
    monkeypatch.setattr(runner.stored, "keep", lambda key, cell: kept.append(cell))
    monkeypatch.setattr(runner, "publish", lambda cell: None)
    cell = cells[0]
    item = store.Todo(cell.variant, cell.inputs, "key")
    runner.finish(item, dataclasses.replace(cell, fault="truncate"))
    assert kept == []
    runner.finish(item, cell)
    assert kept == [cell], "the positive control: a cell of a normal run is kept"
