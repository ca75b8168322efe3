# SPDX-License-Identifier: GPL-2.0
"""A version descriptor's `ships` against the fetched tree, as the layer judges it."""
import shutil
import tempfile
from pathlib import Path

from taintport.cache import Cache
from taintport.errors import InputError
from taintport.layer import engine, fixes
from taintport.layer.model import FixCondition
from taintport.tree import series
from taintport.tree.versions import Version


def check_ships(version: Version, tree: Path, cache: Cache) -> dict[str, str]:
    """The descriptor's ships must be what the tree as shipped has: each fix
    judged present (or not) piece by piece, on upstream's copies of its
    files (from quilt's backups), whatever variant the tree is in now.
    Returns {fix: why} for the fixes the tree cannot have ([applies])."""
    tree = Path(tree)
    with tempfile.TemporaryDirectory(prefix="taintport-ships-") as scratch_name:
        scratch = Path(scratch_name)
        if (tree / "Makefile").is_file():
            shutil.copyfile(tree / "Makefile", scratch / "Makefile")
        for rel in sorted({rel for spec in fixes.PIECES for rel in spec.paths}):
            if (tree / rel).is_file():
                (scratch / rel).parent.mkdir(parents=True, exist_ok=True)
                (scratch / rel).write_bytes(series.upstream_copy(tree, rel))
        found = engine.inspect(scratch, fixes.FIXES, None, cache)
    for state in found:
        shipped = state.fix.name in version.ships
        if shipped != (state.condition is FixCondition.PRESENT):
            pieces = ", ".join(f"{p.name} {p.state.value} at {p.path}:{p.line}"
                               for p in state.pieces)
            raise InputError(
                f"{version.path}: ships says fix '{state.fix.name}' is "
                f"{'in' if shipped else 'not in'} {version.name}, but the layer finds it "
                f"{state.condition.value} in the fetched tree ({pieces})")
    return {state.fix.name: state.not_applicable for state in found
            if state.condition is FixCondition.NOT_APPLICABLE}
