# SPDX-License-Identifier: GPL-2.0
"""spatch without HOME (cron, env -i, a service): Debian's spatch ends in
"Fatal error: exception Not_found"; the layer gives it the user's home."""
import pytest

from taintport.layer import spatch
from taintport.layer.model import LayerError

# the shared mask patch: without -D taint no rule runs, so it says nothing
COCCI = "tracing_allow_taint.cocci"


def test_spatch_runs_when_home_is_unset(tmp_path, monkeypatch):
    (tmp_path / "t.c").write_text("int f(void) { return 1; }\n")
    monkeypatch.delenv("HOME", raising=False)
    said = spatch.run(COCCI, ["t.c"], tmp_path, {}, "livepatch", tmp_path / "answers")
    assert said.verdicts == () and said.fired == frozenset()


def test_no_home_anywhere_is_a_refusal_naming_home(tmp_path, monkeypatch):
    monkeypatch.delenv("HOME", raising=False)
    monkeypatch.setattr(spatch.os.path, "expanduser", lambda path: path)
    with pytest.raises(LayerError, match="expected HOME set"):
        spatch.run(COCCI, ["t.c"], tmp_path, {}, "livepatch", tmp_path / "answers")
