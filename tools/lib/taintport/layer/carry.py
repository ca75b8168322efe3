# SPDX-License-Identifier: GPL-2.0
"""Carry the layer onto a maintainer's own tree, as a quilt series, all or nothing.

`taintport apply --tree DIR` generates the layer for that tree (spatch on
scratch copies: the tree is only read), one patch per fix the tree lacks,
with a DEP-3 header naming the tree. It then pushes them with quilt
--fuzz=0 on a scratch copy of the files they touch and of the tree's quilt
state, checks that the result is the layer's, and only then writes the
tree: every file quilt changed or created (the sources, patches/, .pc/)
through a journal (taintport.journal), atomically, all or nothing even when
killed, out of disk or denied a write. A journal an interrupted run left is
rolled back first, and the run says so; one this user's taintport did not
write is refused (journal.py). One run at a time holds the tree (a lock in
the cache, by the tree's identity), its spatch and quilt die with it, and
their scratch copies live in the cache, where the next run removes a killed
one's. Only the layer's own patches are
pushed: a series with patches quilt has not applied is refused. `--export
DIR` writes the patches into DIR the same way and lists them in DIR/series,
never dropping a line (in a Debian source package's debian/patches where the
kernel team lists upstream fixes: debian_patches.py); with `--mail` it writes
each as a mail for the stable list instead, where upstream maintains a
stable branch for the tree (stable.py).
"""
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Sequence

from taintport.cache import Cache, scratch, sweep
from taintport.errors import InputError, TaintportError
from taintport.journal import JOURNAL, Change, commit, recover, sha256
from taintport.layer import debian_patches, dep3, engine, fixes, stable
from taintport.layer.dep3 import Identity
from taintport.layer.model import LayerPatch, Outcome, Params
from taintport.process import require
from taintport.tree.quilt import PC, quilt

FOLDER = "taintport"
PATCHES = "patches"
QUILT_STATE = (".version", ".quilt_patches", ".quilt_series", "applied-patches")
# quilt's scratch copy of a tree's files, in the cache (cache.scratch)
SCRATCH = "apply-"


@dataclass(frozen=True)
class Carried:
    layer: LayerPatch
    written: tuple[Path, ...]        # the patch files (or mails) written
    recovered: str = ""              # what was rolled back first ("" when nothing)
    no_mail: Mapping[str, str] = field(default_factory=dict)  # {fix: why it got no mail}


def patch_texts(layer: LayerPatch, tree: Path, identity: Identity | None = None,
                debian: bool = False) -> dict[str, str]:
    """{series name: DEP-3 patch} for each fix the layer carries on tree,
    named as the folder it goes to expects."""
    series = stable.tree_series(tree)
    return {(debian_patches.name(fp) if debian else
             f"{FOLDER}/{i:04d}-{fp.fix.patch_name}.patch"):
            dep3.patch_file(fp, series, identity)
            for i, fp in enumerate(layer.carried, start=1)}


def mails(tree: Path, layer: LayerPatch, identity: Identity | None,
          seen: Sequence[dep3.Seen] = ()) -> tuple[dict[str, str], dict[str, str]]:
    """({file name: mail text}, {fix name: why no mail}) for the fixes the layer
    carries: a mail where upstream maintains a stable branch the fix belongs
    in and this tree's change is that branch's own hunk (stable.py), else the
    reason there is none. seen: the boots a results run recorded, the only
    source of a mail's "booted" line."""
    series = stable.tree_series(tree)
    texts, none = {}, {}
    for i, (fp, change) in enumerate(zip(layer.carried, dep3.changes(tree, layer.carried)),
                                     start=1):
        branch = stable.branch(series, fp.fix.release)
        code = stable.branch_code(series, fp.fix) if branch else None
        if not branch:
            none[fp.fix.name] = stable.no_branch(series, fp.fix.release)
        elif code is None:
            none[fp.fix.name] = stable.no_code(branch, series)
        elif not stable.same_change(change.before, change.after, code.diff):
            none[fp.fix.name] = stable.vendor_context(branch, code, list(change.before))
        else:
            texts[f"{i:04d}-{fp.fix.patch_name}.patch"] = dep3.mail(
                fp, branch, identity, change, code.diff, stable.users(series, fp.fix),
                [s for s in seen if s.fix == fp.fix.name and s.series == series])
    return texts, none


def pushed(tree: Path, layer: LayerPatch) -> dict[str, str]:
    """{fix: "patches/taintport/NNNN-....patch"} for each fix the tree has only
    because quilt has taintport's own patch of it applied (an earlier apply),
    not because upstream's code was there: what a second run must say."""
    data = _read(Path(tree) / PC / "applied-patches")
    applied = data.decode(errors="replace").split() if data else []
    found = {}
    for fp in layer.patches:
        if fp.outcome is Outcome.ALREADY_UPSTREAM:
            ours = [name for name in applied if name.startswith(f"{FOLDER}/")
                    and name.endswith(f"-{fp.fix.patch_name}.patch")]
            if ours:
                found[fp.fix.name] = f"{PATCHES}/{ours[-1]}"
    return found


def series_names(text: str) -> list[str]:
    """The patches a quilt series file lists, in order (comments and options dropped)."""
    names = []
    for line in text.splitlines():
        words = line.split("#", 1)[0].split()
        if words:
            names.append(words[0])
    return names


def series_after(old: str, names: list[str]) -> str:
    """A series file with names added after what it lists; no line dropped."""
    listed = set(series_names(old))
    new = [n for n in names if n not in listed]
    if not new:
        return old
    return old + ("" if not old or old.endswith("\n") else "\n") + "".join(f"{n}\n" for n in new)


def _read(path: Path) -> bytes | None:
    return path.read_bytes() if path.is_file() and not path.is_symlink() else None


def _snapshot(root: Path, rels: list[str]) -> dict[str, str | None]:
    """Checksums of files under root (None: absent), and of every file in
    the folders named, to say "unchanged" only after comparing them."""
    found: dict[str, str | None] = {}
    for rel in rels:
        path = root / rel
        if path.is_dir() and not path.is_symlink():
            for sub in sorted(path.rglob("*")):
                if sub.is_file() and not sub.is_symlink():
                    found[str(sub.relative_to(root))] = sha256(sub.read_bytes())
        else:
            data = _read(path)
            found[rel] = sha256(data) if data is not None else None
    return found


def _unchanged(root: Path, before: dict[str, str | None], rels: list[str]) -> str:
    after = _snapshot(root, rels)
    if after == before:
        return f"{root} is unchanged (checksums of {len(before)} files compared)"
    differ = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
    return f"{root} differs from before the run in {', '.join(differ)}"


def _quilt_state(tree: Path) -> list[str]:
    """The tree's quilt series as quilt has it applied; refuses a state this
    run could not push only its own patches onto."""
    pc = tree / PC
    for name, wanted in ((".quilt_patches", PATCHES), (".quilt_series", "series")):
        data = _read(pc / name)
        if data is not None and data.decode(errors="replace").strip() != wanted:
            raise InputError(f"{pc / name}: this tree's quilt uses "
                             f"{data.decode(errors='replace').strip()!r}, taintport writes "
                             f"{wanted!r}: push the layer by hand (--export DIR)")
    series = _read(tree / PATCHES / "series")
    listed = series_names(series.decode(errors="replace")) if series else []
    applied_data = _read(pc / "applied-patches")
    applied = applied_data.decode(errors="replace").split() if applied_data else []
    if listed[:len(applied)] != applied:
        raise InputError(f"{pc / 'applied-patches'}: quilt's applied patches are not the "
                         f"start of {tree / PATCHES / 'series'}: fix the quilt state first")
    unapplied = listed[len(applied):]
    if unapplied:
        raise InputError(f"{tree / PATCHES / 'series'} lists patches quilt has not applied: "
                         f"{', '.join(unapplied)}; taintport pushes only its own patches, "
                         "after every listed one: push them (quilt push -a) or take them "
                         "out of the series first; nothing was written")
    return listed


def _staged(tree: Path, texts: dict[str, str], layer: LayerPatch, log: Path,
            cache: Cache) -> list[Change]:
    """Every file quilt writes when it pushes the layer's patches, pushed on a
    scratch copy of what it reads (in the cache) and checked against the
    layer's result."""
    parent = cache.scratch_parent()
    sweep(parent, SCRATCH)
    with scratch(parent, SCRATCH) as copy:
        copied = [f"{PATCHES}/series", *(f"{PC}/{n}" for n in QUILT_STATE), *layer.after]
        for rel in copied:
            data = _read(tree / rel)
            if data is not None:
                (copy / rel).parent.mkdir(parents=True, exist_ok=True)
                (copy / rel).write_bytes(data)
        for name, text in texts.items():
            (copy / PATCHES / name).parent.mkdir(parents=True, exist_ok=True)
            (copy / PATCHES / name).write_text(text)
        series = copy / PATCHES / "series"
        series.write_text(series_after(series.read_text() if series.exists() else "",
                                       list(texts)))
        for name in texts:
            proc = quilt(copy, ["push", "--fuzz=0", name], PATCHES, log, check=False)
            if proc.returncode != 0:
                raise InputError(f"quilt could not push {name} with --fuzz=0 onto a copy of "
                                 f"{tree}'s files (see {log}): "
                                 + ((proc.stdout + proc.stderr).strip().splitlines()
                                    or ["it said nothing"])[-1])
        wrong = [rel for rel, text in layer.after.items()
                 if (copy / rel).read_text() != text]
        # a quilt that said it pushed may have written nothing at all
        applied_data = _read(copy / PC / "applied-patches")
        applied = applied_data.decode(errors="replace").split() if applied_data else []
        if wrong or applied[-len(texts):] != list(texts):
            raise InputError(f"quilt's result on a copy of {tree}'s files is not the layer's "
                             f"(in {', '.join(wrong) or PC + '/applied-patches'}); "
                             "nothing was written")
        changes = []
        for path in sorted(p for p in copy.rglob("*") if p.is_file()):
            rel = str(path.relative_to(copy))
            data = path.read_bytes()
            if _read(tree / rel) != data:
                info = path.stat()
                changes.append(Change(rel, data, info.st_mode & 0o777, info.st_mtime))
        return changes


def kernel_tree(tree: Path) -> Path:
    """A folder that holds a kernel source tree (its Makefile and kernel/), or
    an input error that says which it is not."""
    tree = Path(tree)
    if not tree.is_dir():
        raise InputError(f"{tree}: no such folder (--tree names a kernel source tree)")
    if not (tree / "Makefile").is_file() or not (tree / "kernel").is_dir():
        raise InputError(f"{tree}: not a kernel source tree (no Makefile and kernel/)")
    return tree


def apply(tree: Path, params: Params, cache: Cache, identity: Identity | None = None
          ) -> Carried:
    """Push the layer onto tree with quilt, all or nothing (the module's doc),
    one run at a time."""
    require("quilt", "quilt")
    require("setpriv", "util-linux")
    tree = kernel_tree(tree)
    with cache.folder_locked(tree):
        return _apply(tree, params, cache, identity)


def _apply(tree: Path, params: Params, cache: Cache, identity: Identity | None) -> Carried:
    key = cache.journal_key()
    recovered = recover(tree, key)
    watched = sorted({rel for spec in fixes.PIECES for rel in spec.paths}
                     | {PATCHES, PC, JOURNAL})
    before = _snapshot(tree, watched)
    try:
        _quilt_state(tree)
        layer = engine.generate(tree, fixes.FIXES, params, cache)
        texts = patch_texts(layer, tree, identity)
        if not texts:
            return Carried(layer, (), recovered)
        taken = [name for name in texts if (tree / PATCHES / name).exists()]
        if taken:
            raise InputError(f"{tree / PATCHES / taken[0]} exists: the layer was exported or "
                             "applied here before; pop and remove it first")
        log = cache.root / "logs" / "apply-tree.log"
        commit(tree, _staged(tree, texts, layer, log, cache), key)
    except TaintportError as err:
        raise InputError(f"{err}\n{_unchanged(tree, before, watched)}") from None
    return Carried(layer, tuple(tree / PATCHES / name for name in texts), recovered)


def export(tree: Path, params: Params, folder: Path, cache: Cache, mail: bool = False,
           identity: Identity | None = None, seen: Sequence[dep3.Seen] = ()) -> Carried:
    """Write the layer's patches (or stable mails) into folder, all or nothing,
    one run at a time."""
    require("setpriv", "util-linux")
    folder = Path(folder)
    layer = engine.generate(tree, fixes.FIXES, params, cache)
    try:
        debian = debian_patches.is_debian_patches(folder)
        written = patch_texts(layer, tree, identity, debian)
        mailed: dict[str, str] = {}
        none: dict[str, str] = {}
        if mail:
            mailed, none = mails(tree, layer, identity, seen)
            # a fix with no stable branch to send to: the distribution patch only
            written = {name: text for (name, text), fp in zip(written.items(), layer.carried)
                       if fp.fix.name in none}
        texts = {**mailed, **written}
        if not texts:
            return Carried(layer, (), no_mail=none)
        made = not folder.exists()
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise InputError(f"{folder}: cannot create it ({err.strerror}); nothing was "
                             "written") from None
        try:
            with cache.folder_locked(folder):
                recovered = _export(folder, texts, written, debian, cache)
        except TaintportError:
            if made:
                _remove_if_empty(folder)
            raise
    except OSError as err:
        raise InputError(f"{folder}: cannot write the patches there ({err.strerror}: "
                         f"{err.filename}); nothing was written") from None
    return Carried(layer, tuple(folder / name for name in texts), recovered, none)


def _export(folder: Path, texts: dict[str, str], written: dict[str, str], debian: bool,
            cache: Cache) -> str:
    """texts written into folder, series too; what recover() said."""
    key = cache.journal_key()
    recovered = recover(folder, key)
    # the same export again (a rerun after a kill) writes nothing new
    taken = [name for name in texts if (folder / name).exists()
             and _read(folder / name) != texts[name].encode()]
    if taken:
        raise InputError(f"{folder / taken[0]} exists: the layer was exported there "
                         "before; remove it first")
    changes = [Change(name, text.encode()) for name, text in texts.items()
               if _read(folder / name) != text.encode()]
    if written:
        old = _read(folder / "series")  # a link is refused by the journal
        # bytes that are not UTF-8 in the user's series come back as they were
        kept = old.decode("utf-8", "surrogateescape") if old is not None else ""
        listed = (debian_patches.listed(kept, list(written)) if debian
                  else series_after(kept, list(written)))
        series = listed.encode("utf-8", "surrogateescape")
        if series != old:
            changes.append(Change("series", series))
    if changes:
        commit(folder, changes, key)
    return recovered


def _remove_if_empty(folder: Path) -> None:
    """The export folder this run created, when a failure left it empty."""
    try:
        os.rmdir(folder)
    except OSError:
        pass  # not empty, or already gone: it stays as it is
