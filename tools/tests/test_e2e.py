"""End to end on bookworm's 6.1: fetch, three variants built and booted, judged.

These build a real kernel (about 4 minutes cold on 2 cores, seconds warm)
and boot it three times under QEMU. They share the user's taintport cache.
"""
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TAINTPORT = [sys.executable, str(REPO / "tools" / "taintport")]
VERSION = "bookworm-6.1"

pytestmark = pytest.mark.e2e


def matrix(out, *extra):
    # --rerun: this test must boot, not reuse a stored cell
    proc = subprocess.run([*TAINTPORT, "matrix", "--rerun", "--versions", VERSION, "--out", str(out),
                           *extra], capture_output=True, text=True)
    print(proc.stdout)
    print(proc.stderr, file=sys.stderr)
    doc = json.loads((out / "matrix.json").read_text())
    return proc, {c["variant"]: c for c in doc["cells"]}, doc


def test_three_variants_as_expected(tmp_path):
    proc, cells, doc = matrix(tmp_path / "run")
    assert proc.returncode == 0, [c["errors"] for c in cells.values()]
    assert set(cells) == {"upstream", "reverted", "backported"}
    assert all(c["status"] == "as-expected" for c in cells.values())
    # the negative control reproduced the bug: its failing checks are observed failing
    reverted = {c["name"]: c for c in cells["reverted"]["checks"]}
    assert reverted["unsigned_events_present"]["observed"] == "not ok"
    assert reverted["unsigned_module_taint_F"]["observed"] == "ok"
    assert reverted["unsigned_log_bad_taint"]["observed"] == "ok"
    fixed = {c["name"]: c for c in cells["backported"]["checks"]}
    assert fixed["unsigned_event_fires"]["observed"] == "ok"
    assert fixed["unsigned_module_taint_E"]["observed"] == "ok"
    for cell in cells.values():
        assert cell["accelerator"] in ("kvm", "tcg")
        assert (tmp_path / "run" / cell["logs"]["console"]).exists()
        assert (tmp_path / "run" / cell["logs"]["build"]).exists()
        assert cell["timings"]["boot"] > 0
    assert "as-expected" in proc.stdout
    # Reproducible builds (pinned timestamp, user, host, build number): the
    # backported sources are byte-identical to upstream, and so is the image
    # rebuilt from them; the reverted image differs.
    images = {v: c["inputs"]["bzimage_sha256"] for v, c in cells.items()}
    assert images["backported"] == images["upstream"]
    assert images["reverted"] != images["upstream"]


def test_mutation_without_backport_patch_is_unexpected(tmp_path):
    """With the layer's patches dropped, the backported cell must fail."""
    quilt = tmp_path / "quilt"
    shutil.copytree(REPO / "quilt", quilt)
    series = quilt / VERSION / "series"
    kept = [line for line in series.read_text().splitlines()
            if not line.startswith("backported/")]
    assert len(kept) < len(series.read_text().splitlines()), "no backported patch to drop"
    series.write_text("\n".join(kept) + "\n")
    proc, cells, doc = matrix(tmp_path / "run", "--variants", "backported",
                              "--quilt-dir", str(quilt))
    assert proc.returncode == 1
    assert cells["backported"]["status"] == "unexpected"
    wrong = {c["name"] for c in cells["backported"]["checks"] if not c["matches"]}
    assert "unsigned_events_present" in wrong
