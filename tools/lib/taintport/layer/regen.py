# SPDX-License-Identifier: GPL-2.0
"""The generated part of each quilt series: the layer run on two trees.

`taintport regen` writes, from the semantic patches, one patch per fix:
  backported/NNNN-<fix>.patch  the layer on the reverted tree (every fix)
  patched/NNNN-<fix>.patch     the layer on the tree as shipped (the fixes
                               the version's descriptor says it lacks)
and lists them in quilt/<version>/series. `taintport regen --check` (run by
make check) fails when a committed patch differs from a fresh generation,
when the layer disagrees with the descriptor about which fixes the tree
ships, when the negative control leaves a fix in place, or when reverted +
layer is not byte-identical to the tree as shipped + layer.

Both also run the whole layer on the full pre-fix state (the reverted-full
group: every fix the tree ships removed in every piece, never built) and
fail, naming the file, unless it gives the tree as shipped back byte for
byte in every file the layer or that group touches.
"""
import re
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from taintport.cache import Cache, write_atomic
from taintport.errors import InputError
from taintport.layer import dep3, engine, fixes, stable
from taintport.layer.model import FixPatch, LayerPatch, Outcome
from taintport.layer.ships import check_ships
from taintport.process import require, run
from taintport.tree import series, variants
from taintport.tree.variants import Base, Variant
from taintport.tree.versions import Version


def layers() -> tuple[Variant, Variant]:
    """The layer's two variants (test-matrix/variants.toml): on the reverted
    tree, and on the tree as shipped; regen writes each one's last group."""
    table = variants.table()
    return table.layer_on(Base.REVERTED), table.layer_on(Base.SHIPPED)


def generated(name: str) -> re.Match[str] | None:
    """A series line regen writes: <layer group>/NNNN-<fix>.patch."""
    groups = "|".join(re.escape(v.layer_group) for v in layers())
    fixes_ = "|".join(re.escape(f.patch_name) for f in fixes.FIXES)
    return re.match(rf"^({groups})/\d{{4}}-(?:{fixes_})\.patch$", name)


@dataclass(frozen=True)
class FullState:
    """The whole layer on the full pre-fix state of a tree."""
    summary: str                # the layer's verdict there: every shipped fix carried
    seconds: float              # the layer's time (spatch and re-layout)
    compared: tuple[str, ...]   # the files found byte-identical to the tree as shipped


@dataclass(frozen=True)
class Regenerated:
    version: str
    paths: tuple[Path, ...]
    changed: bool
    seconds: float
    upstream: str  # the layer's verdict on the tree as shipped
    full: FullState | None = None


def patch_names(group: str, layer_patch: LayerPatch) -> dict[str, FixPatch]:
    """{series name: FixPatch} of the fixes a layer carried, numbered in order."""
    return {f"{group}/{i:04d}-{fp.fix.patch_name}.patch": fp
            for i, fp in enumerate(layer_patch.carried, start=1)}


def generate_for(tree: Path, quilt_series: series.Series, version: Version,
                 log: Path, cache: Cache) -> tuple[LayerPatch, LayerPatch, float]:
    """(layer on upstream, layer on reverted, seconds of the reverted run)."""
    backported, patched = layers()
    series.switch(tree, quilt_series, variants.table().generated_on(patched), log)
    check_ships(version, tree, cache)
    on_upstream = engine.generate(tree, fixes.FIXES, None, cache)
    series.switch(tree, quilt_series, variants.table().generated_on(backported), log)
    start = time.monotonic()
    on_reverted = engine.generate(tree, fixes.FIXES, None, cache)
    seconds = time.monotonic() - start
    # a fix the tree cannot have (not applicable) is neither shipped nor removed
    kept = [fp.fix.name for fp in on_reverted.patches if fp.outcome is Outcome.ALREADY_UPSTREAM]
    if kept:
        raise InputError(f"{version.name}: the layer finds nothing to do for "
                         f"{', '.join(kept)} on the reverted tree: the negative control "
                         "does not remove every fix of the family")
    return on_upstream, on_reverted, seconds


def regen(tree: Path, version: Version, quilt_dir: Path, log: Path, cache: Cache,
          check: bool = False) -> Regenerated:
    quilt_dir = Path(quilt_dir)
    directory = quilt_dir / version.name
    listed = [line.strip() for line in (directory / "series").read_text().splitlines()]
    old_generated = [name for name in listed if generated(name)]
    quilt_series = series.load(version.name, quilt_dir, may_be_missing=tuple(old_generated))
    # the reverted tree must not see generated patches while it is generated on
    on_upstream, on_reverted, seconds = generate_for(tree, quilt_series, version, log, cache)
    backported, patched = layers()
    wanted = {**patch_names(backported.layer_group, on_reverted),
              **patch_names(patched.layer_group, on_upstream)}
    # the committed patches name nobody: whoever drops them into a package adds
    # their own note and sign-off (apply --export --signoff writes them so)
    series_name = stable.tree_series(tree)
    texts = {name: dep3.patch_file(fp, series_name, None) for name, fp in wanted.items()}
    changed = set(wanted) != set(old_generated) or any(
        not (directory / name).exists() or (directory / name).read_text() != text
        for name, text in texts.items())
    if changed and not check:
        for name in old_generated:
            if name not in wanted:
                (directory / name).unlink(missing_ok=True)
        for name, text in texts.items():
            write_atomic(directory / name, text)
        _list(directory / "series", old_generated, list(wanted))
        # the series as written: a renamed patch (a fix added before another)
        # is gone from the folder, and the old series would still name it
        quilt_series = series.load(version.name, quilt_dir)
    if not changed:
        identical_to_patched(tree, series.load(version.name, quilt_dir), version.name, log)
    full = from_full_state(tree, quilt_series, version, log, cache)
    return Regenerated(version.name, tuple(directory / n for n in wanted), changed, seconds,
                       on_upstream.summary, full)


def _list(series_file: Path, old: list[str], new: list[str]) -> None:
    """Replace the generated lines of a series file, keeping everything else:
    each group's lines go right after the comment block that starts with
    "# <group>/" (one is added when the file has none)."""
    kept = [line for line in series_file.read_text().splitlines() if line.strip() not in old]
    for group in (v.layer_group for v in layers()):
        mine = [n for n in new if n.startswith(group + "/")]
        if not mine:
            continue
        at = next((i for i, line in enumerate(kept) if line.startswith(f"# {group}/")), None)
        if at is None:
            kept += ["", f"# {group}/: generated by `taintport regen`."]
            at = len(kept) - 1
        while at + 1 < len(kept) and kept[at + 1].startswith("#"):
            at += 1
        kept[at + 1:at + 1] = mine
    write_atomic(series_file, "\n".join(kept).rstrip("\n") + "\n")


def identical_to_patched(tree: Path, quilt_series: series.Series, version_name: str,
                         log: Path) -> None:
    """reverted + layer must give the tree as shipped + layer back, byte for
    byte: upstream's own text where upstream has a fix."""
    on_reverted, on_shipped = layers()
    backported = series.sources(tree, quilt_series, on_reverted)
    patched = series.sources(tree, quilt_series, on_shipped)
    differ = sorted(p for p in set(backported) | set(patched)
                    if backported.get(p) != patched.get(p))
    if differ:
        raise InputError(f"{version_name}: reverted + layer is not byte-identical to the "
                         f"tree as shipped + layer in {', '.join(differ)}")


class DoesNotApply(InputError):
    """The hand-written full pre-fix state does not apply to these files (another
    point release moved them): nothing could be checked, which is not the layer's fault."""


def full_state_files(quilt_series: series.Series) -> set[str]:
    """The files the full pre-fix state and the layer's pieces live in."""
    full = quilt_series.for_variant(variants.table().full_state())
    removed = series.touched_files(quilt_series.directory / p for p in full)
    return removed | {rel for spec in fixes.PIECES for rel in spec.paths}


def from_full_state(tree: Path, quilt_series: series.Series, version: Version,
                    log: Path, cache: Cache) -> FullState:
    """The layer carries every fix the tree ships onto the full pre-fix state
    (test-matrix/variants.toml's never-built row) and must give the tree as shipped back, byte for byte, in
    every file it or that group touches. Works on upstream's copies in a
    scratch folder, so the tree is neither switched nor given new mtimes."""
    tree = Path(tree)
    shipped = {rel: series.upstream_copy(tree, rel)
               for rel in sorted(full_state_files(quilt_series)) if (tree / rel).is_file()}
    return on_full_state(shipped, quilt_series, version.name, version.ships, log, cache)


def on_full_state(shipped: dict[str, bytes], quilt_series: series.Series, name: str,
                  ships: Iterable[str], log: Path, cache: Cache) -> FullState:
    """from_full_state() on the files of a tree as shipped (relative path ->
    bytes): `check --all-point-releases` has only those, not a whole tree."""
    require("patch", "patch")
    state = variants.table().full_state()
    full = quilt_series.for_variant(state)
    if not full:
        if ships:
            raise InputError(f"{quilt_series.directory}: no {state.folders} patches: a "
                             f"version that ships {', '.join(ships)} needs the "
                             "full pre-fix state the whole layer is checked on")
        return FullState("nothing shipped", 0.0, ())
    removed = series.touched_files(quilt_series.directory / p for p in full)
    with tempfile.TemporaryDirectory(prefix="taintport-full-") as scratch_name:
        scratch = Path(scratch_name)
        for rel, data in shipped.items():
            (scratch / rel).parent.mkdir(parents=True, exist_ok=True)
            (scratch / rel).write_bytes(data)
        try:
            series.switch(scratch, quilt_series, state, log)
        except InputError as err:
            raise DoesNotApply(str(err)) from None
        start = time.monotonic()
        on_full = engine.generate(scratch, [f for f in fixes.FIXES if f.name in ships], None,
                                  cache)
        seconds = time.monotonic() - start
        kept = [fp.fix.name for fp in on_full.patches if fp.outcome is not Outcome.CARRIED]
        if kept:
            raise InputError(f"{name}: the layer finds nothing to do for "
                             f"{', '.join(kept)} on the full pre-fix state "
                             f"({state.folders}): it does not remove that fix")
        diff = scratch / series.STATE / "layer.diff"
        diff.write_text(on_full.diff)
        proc = run(["patch", "-p1", "--fuzz=0", "--no-backup-if-mismatch", "-s", "-i",
                    str(diff)], stage="apply", cwd=scratch, check=False)
        if proc.returncode != 0:
            raise InputError(f"{name}: the layer's own diff does not apply to the "
                             f"full pre-fix state: {proc.stdout}{proc.stderr}".rstrip())
        compared = sorted(removed | series.touched_files([diff]))
        differ = [rel for rel in compared if (scratch / rel).read_bytes() != shipped[rel]]
        if differ:
            raise InputError(f"{name}: the layer on the full pre-fix state "
                             f"({state.folders}) is not byte-identical to the tree as "
                             f"shipped in {', '.join(differ)}")
    return FullState(on_full.summary, seconds, tuple(compared))
