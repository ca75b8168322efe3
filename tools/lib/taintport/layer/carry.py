"""Carry the layer onto a maintainer's own tree, as a quilt series.

`taintport apply --tree DIR` generates the layer for that tree (spatch, no
change to the tree yet): one patch per fix the tree lacks, with a DEP-3
header naming that tree. It pushes them with quilt --fuzz=0 from the tree's
own patches/ folder. All or nothing: if generation fails, nothing is
written; if a push fails, everything pushed is popped and removed again, so
the tree is byte for byte as it was. `--export DIR` only writes the patches
and appends them to DIR/series (never dropping a line there); with `--mail`
it writes each as a mail for the stable list instead.
"""
import re
import shutil
from pathlib import Path

from taintport.errors import InputError
from taintport.layer import dep3, engine
from taintport.process import require, run

FOLDER = "taintport"


def carried(tree, letter):
    """(LayerPatch, {series name: patch text}) for the fixes tree lacks."""
    generated = engine.generate(tree, letter)
    texts = {f"{FOLDER}/{i:04d}-{fp.fix.patch_name}.patch":
             dep3.patch_file(fp, f"the tree at {Path(tree).resolve()}", letter)
             for i, fp in enumerate(generated.carried, start=1)}
    return generated, texts


def kernel_series(tree):
    """"6.1" from a tree's top Makefile (VERSION, PATCHLEVEL)."""
    text = (Path(tree) / "Makefile").read_text(errors="replace")
    found = dict(re.findall(r"^(VERSION|PATCHLEVEL) = (\d+)$", text, re.M))
    if len(found) != 2:
        raise InputError(f"{tree}/Makefile: no VERSION and PATCHLEVEL lines")
    return f"{found['VERSION']}.{found['PATCHLEVEL']}"


def append_series(folder, names):
    """Add names to folder/series after what it lists; never drop a line."""
    series_file = Path(folder) / "series"
    old = series_file.read_text() if series_file.exists() else ""
    listed = {line.split("#", 1)[0].strip() for line in old.splitlines()}
    new = [n for n in names if n not in listed]
    if new:
        series_file.write_text(old + ("" if not old or old.endswith("\n") else "\n")
                               + "".join(f"{n}\n" for n in new))


def export(tree, letter, folder, mail=False):
    """Write the layer's patches to folder; returns (LayerPatch, paths written)."""
    folder = Path(folder)
    if mail:
        generated = engine.generate(tree, letter)
        texts = {f"{i:04d}-{fp.fix.patch_name}.patch": dep3.mail(fp, kernel_series(tree), letter)
                 for i, fp in enumerate(generated.carried, start=1)}
    else:
        generated, texts = carried(tree, letter)
    taken = [name for name in texts if (folder / name).exists()]
    if taken:
        raise InputError(f"{folder / taken[0]} exists: the layer was exported there before; "
                         "remove it first")
    for name, text in texts.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    if texts and not mail:
        append_series(folder, list(texts))
    return generated, [folder / name for name in texts]


def apply(tree, letter, log):
    """Push the layer onto tree with quilt; returns (LayerPatch, patch paths)."""
    require("quilt", "quilt")
    tree = Path(tree)
    if not (tree / "Makefile").is_file() or not (tree / "kernel").is_dir():
        raise InputError(f"{tree}: not a kernel source tree (no Makefile and kernel/)")
    generated, texts = carried(tree, letter)
    if not texts:
        return generated, []
    patches = tree / "patches"
    taken = [name for name in texts if (patches / name).exists()]
    if taken:
        raise InputError(f"{patches / taken[0]} exists: the layer was exported or applied "
                         "here before; pop and remove it first")
    series_file = patches / "series"
    had_patches, had_series = patches.exists(), series_file.exists()
    old_series = series_file.read_text() if had_series else None
    for name, text in texts.items():
        (patches / name).parent.mkdir(parents=True, exist_ok=True)
        (patches / name).write_text(text)
    append_series(patches, list(texts))
    env = {"QUILT_PATCHES": "patches", "LC_ALL": "C"}
    pushed = 0
    for name in texts:
        proc = run(["quilt", "--quiltrc=-", "push", "--fuzz=0", name], stage="apply",
                   cwd=tree, env=env, log=log, check=False)
        if proc.returncode != 0:
            for _ in range(pushed):
                run(["quilt", "--quiltrc=-", "pop", "-f"], stage="apply", cwd=tree, env=env,
                    log=log, check=False)
            # undo everything this call wrote
            if not had_patches:
                shutil.rmtree(patches)
            else:
                for written in texts:
                    (patches / written).unlink(missing_ok=True)
                if had_series:
                    series_file.write_text(old_series)
                else:
                    series_file.unlink()
            raise InputError(f"{tree}: quilt could not push {name} with --fuzz=0; the tree "
                             f"is unchanged (see {log})")
        pushed += 1
    return generated, [patches / name for name in texts]
