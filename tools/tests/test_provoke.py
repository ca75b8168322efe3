"""The test-only switch that turns a cell unexpected or broken on purpose:
read strictly, marks what it touches, leaves everything else alone."""
import copy

import pytest

from taintport.cache import Cache
from taintport.errors import InputError
from taintport.judge.verdict import Status
from taintport.results import folder
from taintport.results.cells import exit_code
from taintport.run import matrix, provoke

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


def test_matrix_refuses_a_malformed_switch_before_any_work(tmp_path, monkeypatch):
    """Read when the runner is made, before a fetch or a build could start."""
    monkeypatch.setenv(provoke.VARIABLE, "sometimes:bookworm-6.1/upstream")
    with pytest.raises(InputError, match=provoke.VARIABLE):
        matrix.Runner(Cache(tmp_path / "cache"), tmp_path / "out")
    assert not (tmp_path / "cache").exists()
