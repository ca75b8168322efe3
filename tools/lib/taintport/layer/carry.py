"""Carry the layer onto a maintainer's own tree, as a quilt series.

`taintport apply --tree DIR` generates the layer for that tree (spatch, no
change to the tree yet): one patch per fix the tree lacks, with a DEP-3
header (dep3.py). It pushes them with quilt --fuzz=0 from the tree's
own patches/ folder. All or nothing: if generation fails, nothing is
written; if a push fails, everything pushed is popped and removed again, so
the tree is byte for byte as it was. `--export DIR` only writes the patches
and lists them in DIR/series (never dropping a line there; in a Debian
source package's debian/patches where the kernel team lists upstream fixes,
debian_patches.py); with `--mail` it writes each as a mail for the stable
list instead, where upstream maintains a stable branch for the tree (stable.py).
"""
import shutil
from pathlib import Path

from taintport.errors import InputError
from taintport.layer import debian_patches, dep3, engine, stable
from taintport.process import require, run

FOLDER = "taintport"


def patches(tree, generated, letter, identity=None, debian=False):
    """{series name: DEP-3 patch text} for each fix the layer carries, named
    as the folder it goes to expects."""
    series = stable.tree_series(tree)
    return {(debian_patches.name(fp) if debian else
             f"{FOLDER}/{i:04d}-{fp.fix.patch_name}.patch"):
            dep3.patch_file(fp, series, identity, letter)
            for i, fp in enumerate(generated.carried, start=1)}


def carried(tree, letter, identity=None):
    """(LayerPatch, {series name: patch text}) for the fixes tree lacks."""
    generated = engine.generate(tree, letter)
    return generated, patches(tree, generated, letter, identity)


def mails(tree, generated, letter, identity):
    """({file name: mail text}, {fix name: why no mail}) for the fixes the layer
    carries: a mail where upstream maintains a stable branch the fix belongs
    in, else the reason there is none."""
    series = stable.tree_series(tree)
    index = dep3.index_lines(tree, generated.carried)
    texts, none = {}, {}
    for i, fp in enumerate(generated.carried, start=1):
        branch = stable.branch(series, fp.fix.release)
        if branch:
            texts[f"{i:04d}-{fp.fix.patch_name}.patch"] = dep3.mail(
                fp, branch, identity, index[i - 1], letter)
        else:
            none[fp.fix.name] = stable.no_branch(series, fp.fix.release)
    return texts, none


def append_series(folder, names):
    """Add names to folder/series after what it lists; never drop a line."""
    series_file = Path(folder) / "series"
    old = series_file.read_text() if series_file.exists() else ""
    listed = {line.split("#", 1)[0].strip() for line in old.splitlines()}
    new = [n for n in names if n not in listed]
    if new:
        series_file.write_text(old + ("" if not old or old.endswith("\n") else "\n")
                               + "".join(f"{n}\n" for n in new))


def export(tree, letter, folder, mail=False, identity=None):
    """Write the layer's patches (or stable mails) to folder; returns
    (LayerPatch, paths written, {fix: why it got no mail})."""
    folder = Path(folder)
    debian = debian_patches.is_debian_patches(folder)
    generated = engine.generate(tree, letter)
    written = patches(tree, generated, letter, identity, debian)
    mailed, none = {}, {}
    if mail:
        mailed, none = mails(tree, generated, letter, identity)
        # a fix with no stable branch to send to: the distribution patch only
        written = {name: text for (name, text), fp in zip(written.items(), generated.carried)
                   if fp.fix.name in none}
    texts = {**mailed, **written}
    taken = [name for name in texts if (folder / name).exists()]
    if taken:
        raise InputError(f"{folder / taken[0]} exists: the layer was exported there before; "
                         "remove it first")
    for name, text in texts.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    if written and debian:
        series_file = folder / "series"
        old = series_file.read_text() if series_file.exists() else ""
        series_file.write_text(debian_patches.listed(old, list(written)))
    elif written:
        append_series(folder, list(written))
    return generated, [folder / name for name in texts], none


def apply(tree, letter, log, identity=None):
    """Push the layer onto tree with quilt; returns (LayerPatch, patch paths)."""
    require("quilt", "quilt")
    tree = Path(tree)
    if not (tree / "Makefile").is_file() or not (tree / "kernel").is_dir():
        raise InputError(f"{tree}: not a kernel source tree (no Makefile and kernel/)")
    generated, texts = carried(tree, letter, identity)
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
