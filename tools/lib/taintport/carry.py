"""Carry the layer onto a maintainer's own tree, as a quilt series.

`taintport apply --tree DIR` generates the layer for that tree (spatch, no
change to the tree yet), then pushes it with quilt --fuzz=0 from the tree's
own patches/ folder. All or nothing: if generation fails, nothing is
written; if the push fails, the patch is popped and removed again, so the
tree is byte for byte as it was. `--export DIR` only writes the series
(appended to a series DIR already has).
"""
import shutil
import time
from pathlib import Path

from . import layer, regen
from .cache import write_atomic
from .errors import InputError
from .process import require, run

PATCH_NAME = "taintport/0001-module-add-TAINT_UNSIGNED_MODULE.patch"


def patch_text(tree, letter):
    generated = layer.generate(tree, letter)
    if generated.empty:
        return generated, ""
    header = regen.HEADER.format(version=str(tree), letter=letter,
                                 date=time.strftime("%Y-%m-%d"))
    return generated, header + regen.SEPARATOR + generated.diff


def export(tree, letter, folder):
    generated, text = patch_text(tree, letter)
    if not text:
        return generated, None
    folder = Path(folder)
    (folder / PATCH_NAME).parent.mkdir(parents=True, exist_ok=True)
    (folder / PATCH_NAME).write_text(text)
    append_series(folder, [PATCH_NAME])
    return generated, folder / PATCH_NAME


def append_series(folder, names):
    """Add the names an existing folder/series lacks, at its end; never drop a line."""
    series_file = Path(folder) / "series"
    old = series_file.read_text() if series_file.exists() else ""
    listed = {line.split("#", 1)[0].split()[0] for line in old.splitlines()
              if line.split("#", 1)[0].strip()}
    new = "".join(f"{name}\n" for name in names if name not in listed)
    if new:
        write_atomic(series_file, old + ("\n" if old and not old.endswith("\n") else "") + new)


def apply(tree, letter, log):
    """Push the layer onto tree with quilt; returns (LayerPatch, patch path or None)."""
    require("quilt", "quilt")
    tree = Path(tree)
    if not (tree / "Makefile").is_file() or not (tree / "kernel").is_dir():
        raise InputError(f"{tree}: not a kernel source tree (no Makefile and kernel/)")
    generated, text = patch_text(tree, letter)
    if not text:
        return generated, None
    patches = tree / "patches"
    target = patches / PATCH_NAME
    if target.exists():
        raise InputError(f"{target} exists: the layer was exported or applied here before; "
                         "pop and remove it first")
    series_file = patches / "series"
    had_patches, had_series = patches.exists(), series_file.exists()
    old_series = series_file.read_text() if had_series else None
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text)
    series_file.write_text((old_series or "") + f"{PATCH_NAME}\n")
    env = {"QUILT_PATCHES": "patches", "LC_ALL": "C"}
    proc = run(["quilt", "--quiltrc=-", "push", "--fuzz=0", PATCH_NAME], stage="apply",
               cwd=tree, env=env, log=log, check=False)
    if proc.returncode != 0:
        # undo everything this call wrote
        if not had_patches:
            shutil.rmtree(patches)
        else:
            target.unlink()
            if had_series:
                series_file.write_text(old_series)
            else:
                series_file.unlink()
        raise InputError(f"{tree}: quilt could not push the layer with --fuzz=0; the tree "
                         f"is unchanged (see {log})")
    return generated, target
