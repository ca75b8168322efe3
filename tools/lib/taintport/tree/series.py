# SPDX-License-Identifier: GPL-2.0
"""Variants of a tree, each a prefix of one quilt series applied with --fuzz=0.

quilt/<version>/series lists patches in groups, one folder per group:
  reverted/...    the negative control: every fix the tree ships removed,
                  written by hand
  backported/...  the layer on the reverted tree: generated from
                  semantic-patches/ (+ fixups)
  patched/...     the layer on the tree as shipped: generated, what a
                  distribution puts in debian/patches (empty where the tree
                  ships every fix)
  reverted-full/...  every fix the tree ships removed in every piece (the
                  full pre-fix state), written by hand; never built or
                  booted: `taintport regen` runs the whole layer on it and
                  wants the tree as shipped back, byte for byte
Which groups each variant pushes is its row in test-matrix/variants.toml
(variants.py): `upstream` nothing, `reverted` the reverted group, `backported`
reverted and backported, `patched` the patched group alone, and the
never-built `reverted-full` state its own group, which only regen puts a
scratch copy in. The distribution's binary has no series (binary.py).

Switching variant pops everything (restoring quilt's backups) and pushes the
new prefix. A push that fails is popped again, so the tree is never left
half-patched. Every file a patch touches gets a fresh mtime on every switch:
quilt restores backups with their old times, which would let make skip a
rebuild of a file that changed back.

The marker (.taintport/variant) never claims a state the tree is not in: a
switch first replaces it with "switching to <variant>", which no caller
trusts (current_variant() says ""), and names the variant again (written
beside and renamed) only once quilt has applied exactly that variant's
patches and their files have their fresh mtimes. A switch killed at any
point leaves that untrusted marker; the next switch pops everything,
including a patch whose push was cut short between patch(1) and quilt's
record of it.
"""
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from taintport import REPO
from taintport.atomic import replace_file
from taintport.errors import InputError
from taintport.process import appending, require, run
from taintport.tree import variants
from taintport.tree.quilt import quilt
from taintport.tree.variants import Variant

QUILT_DIR = REPO / "quilt"
STATE = ".taintport"


@dataclass(frozen=True)
class Series:
    directory: Path
    patches: tuple[str, ...]  # "group/name.patch", in series order

    def for_variant(self, variant: Variant) -> tuple[str, ...]:
        """The patches a variant pushes, in series order."""
        return tuple(p for p in self.patches if p.split("/", 1)[0] in variant.groups)

    def built(self) -> tuple[str, ...]:
        """The patches some built variant pushes (not the never-built state's)."""
        built = variants.table().built_groups()
        return tuple(p for p in self.patches if p.split("/", 1)[0] in built)


def load(version_name: str, quilt_dir: Path | str = QUILT_DIR,
         may_be_missing: tuple[str, ...] = ()) -> Series:
    """The series of a version; patches named in may_be_missing are left out
    when absent (regen is about to write them)."""
    directory = Path(quilt_dir) / version_name
    series_file = directory / "series"
    if not series_file.is_file():
        raise InputError(f"{series_file}: no quilt series for version '{version_name}'")
    order = variants.table().groups
    patches = []
    for number, raw in enumerate(series_file.read_text().splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        name = line.split()[0]
        group = name.split("/", 1)[0]
        where = f"{series_file}:{number}"
        if group not in order or "/" not in name:
            raise InputError(f"{where}: '{name}' is not in a group folder "
                             f"({', '.join(g + '/' for g in order)})")
        if not (directory / name).is_file():
            if name in may_be_missing:
                continue
            raise InputError(f"{where}: patch file {directory / name} does not exist")
        if len(line.split()) > 1:
            raise InputError(f"{where}: per-patch options are not allowed (we always "
                             "apply with -p1 --fuzz=0)")
        patches.append(name)
    listed = [p.split("/", 1)[0] for p in patches]
    if listed != sorted(listed, key=order.index):
        raise InputError(f"{series_file}: groups must come in the order "
                         f"{', '.join(g + '/' for g in order)}")
    return Series(directory=directory, patches=tuple(patches))


def touched_files(patch_paths: Iterable[Path | str]) -> set[str]:
    """Files a set of patch files modify (from their +++ lines, -p1)."""
    files: set[str] = set()
    for path in patch_paths:
        for line in Path(path).read_text(errors="replace").splitlines():
            if line.startswith("+++ "):
                name = line[4:].split("\t", 1)[0].strip()
                if name != "/dev/null":
                    files.add(name.split("/", 1)[1])
    return files


def _quilt(tree: Path, args: list[str], log: Path | None,
           check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run quilt on the cached tree; its output is returned and also appended to log."""
    return quilt(Path(tree), args, f"{STATE}/patches", log, check)


SWITCHING = "switching to "


def current_variant(tree: Path) -> str:
    """The name of the variant the tree was switched to; "" when nothing is
    pushed, or when a switch was cut short (the marker then says so)."""
    marker = Path(tree) / STATE / "variant"
    said = marker.read_text().strip() if marker.exists() else ""
    return "" if said.startswith(SWITCHING) else said


def _mark(tree: Path, text: str) -> None:
    replace_file(Path(tree) / STATE / "variant", f"{text}\n".encode())


def _adopt_strays(tree: Path, log: Path | None) -> None:
    """A push cut short after patch(1) wrote its backups under .pc/<patch>/
    but before quilt listed <patch> as applied: list it, so that popping
    restores its files from those backups."""
    pc = Path(tree) / ".pc"
    applied_list = pc / "applied-patches"
    applied = applied_list.read_text().split() if applied_list.exists() else []
    copies = Path(tree) / STATE / "patches"
    listed = (copies / "series").read_text().split() if (copies / "series").exists() else []
    strays = [name for name in listed if name not in applied and (pc / name).is_dir()]
    if strays:
        replace_file(applied_list, "".join(f"{n}\n" for n in applied + strays).encode())
        if log:
            with appending(log) as out:
                out.write(f"taintport: {', '.join(strays)} left half pushed by an "
                          "interrupted switch: popped from quilt's backups\n")


def _applied_prefix(tree: Path, series: Series, wanted: tuple[str, ...]) -> tuple[int, int]:
    """(how many of wanted are applied already, in order, each as the series
    has it now; how many patches are applied): reverted -> backported pushes
    only the layer (a quilt push is about 0.3 s on these trees, and the
    layer's time is a target)."""
    applied_list = Path(tree) / ".pc" / "applied-patches"
    applied = applied_list.read_text().split() if applied_list.exists() else []
    copies = Path(tree) / STATE / "patches"
    kept = 0
    for have, want in zip(applied, wanted):
        copy = copies / have
        if have != want or not copy.is_file() or \
                copy.read_bytes() != (series.directory / want).read_bytes():
            break
        kept += 1
    return kept, len(applied)


def _pop_all(tree: Path, log: Path | None) -> None:
    if (Path(tree) / ".pc" / "applied-patches").exists():
        _quilt(tree, ["pop", "-a", "-f", "-q"], log)


def failed_hunks(output: str, patch_file: Path) -> str:
    """The text of each hunk quilt reported as FAILED, so the error can show it."""
    failed: dict[str, list[int]] = {}
    current = None
    for line in output.splitlines():
        m = re.match(r"patching file (\S+)", line)
        if m:
            current = m.group(1)
        m = re.match(r"Hunk #(\d+) FAILED", line)
        if m and current:
            failed.setdefault(current, []).append(int(m.group(1)))
    shown = []
    hunks: dict[str, list[list[str]]] = {}
    file_ = None
    for line in Path(patch_file).read_text(errors="replace").splitlines():
        if line.startswith("+++ "):
            file_ = line[4:].split("\t", 1)[0].split("/", 1)[-1]
            hunks[file_] = []
        elif line.startswith("@@") and file_ is not None:
            hunks[file_].append([line])
        elif file_ is not None and hunks[file_] and line[:1] in (" ", "+", "-", "\\"):
            hunks[file_][-1].append(line)
    for name, numbers in failed.items():
        for n in numbers:
            if name in hunks and n <= len(hunks[name]):
                shown.append(f"{name}, hunk #{n}:\n" + "\n".join(hunks[name][n - 1]))
    return "\n".join(shown)


def switch(tree: Path, series: Series, variant: Variant, log: Path | None) -> set[str]:
    """Bring tree to variant; returns the files the series touches."""
    require("quilt", "quilt")
    tree = Path(tree)
    wanted = series.for_variant(variant)
    state = tree / STATE
    old_patches = list((state / "patches").glob("*/*.patch")) if (state / "patches").exists() else []
    stale = touched_files(old_patches)

    trusted = current_variant(tree)
    state.mkdir(exist_ok=True)
    _mark(tree, SWITCHING + variant.name)
    if not trusted:
        _adopt_strays(tree, log)
    keep, applied = _applied_prefix(tree, series, wanted) if trusted else (0, 0)
    if not keep:
        _pop_all(tree, log)
    elif keep < applied:
        _quilt(tree, ["pop", "-f", "-q", wanted[keep - 1]], log)
    if (state / "patches").exists():
        shutil.rmtree(state / "patches")
    (state / "patches").mkdir(parents=True)
    for name in wanted:
        dest = state / "patches" / name
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(series.directory / name, dest)
    replace_file(state / "patches" / "series", "".join(f"{p}\n" for p in wanted).encode())

    for name in wanted[keep:]:
        proc = _quilt(tree, ["push", "--fuzz=0"], log, check=False)
        if proc.returncode != 0:
            _pop_all(tree, log)
            _mark(tree, "")
            hunks = failed_hunks(proc.stdout + proc.stderr, series.directory / name)
            raise InputError(f"{series.directory / name} does not apply to {tree} without "
                             f"fuzz (variant {variant}); the tree was left as shipped"
                             + (f"\n{hunks}" if hunks else ""))
    applied_list = tree / ".pc" / "applied-patches"
    now_applied = applied_list.read_text().split() if applied_list.exists() else []
    if now_applied != list(wanted):
        raise InputError(f"{tree}: quilt lists {', '.join(now_applied) or 'nothing'} as "
                         f"applied, not the patches of variant {variant}")

    # not the FULL group's files (panic.h, kernel.h): no variant changes them, and
    # a fresh mtime there would make the next build of every variant nearly cold
    touched = stale | touched_files(series.directory / p for p in {*series.built(), *wanted})
    now = time.time()
    for name in touched:
        if (tree / name).exists():
            os.utime(tree / name, (now, now))
    _mark(tree, f"{variant}")
    return touched


def upstream_copy(tree: Path, path: str) -> bytes:
    """The upstream content of a file quilt has patched: the first backup of it in .pc."""
    tree = Path(tree)
    applied = tree / ".pc" / "applied-patches"
    if applied.exists():
        for patch in applied.read_text().split():
            backup = tree / ".pc" / patch / path
            if backup.exists():
                return backup.read_bytes()
    return (tree / path).read_bytes()


def sources(tree: Path, series: Series, variant: Variant) -> dict[str, bytes]:
    """{path: bytes} of the C files the built variants' patches touch, as
    variant has them.

    Made from upstream's copies and the variant's patches in a scratch
    folder with patch(1) --fuzz=0, so the tree itself is not switched:
    two variants can be compared while a third is being built.
    """
    require("patch", "patch")
    tree = Path(tree)
    touched = sorted(p for p in touched_files(series.directory / n for n in series.built())
                     if p.endswith((".c", ".h")))
    with tempfile.TemporaryDirectory(prefix="taintport-sources-") as scratch_name:
        scratch = Path(scratch_name)
        for rel in touched:
            (scratch / rel).parent.mkdir(parents=True, exist_ok=True)
            (scratch / rel).write_bytes(upstream_copy(tree, rel))
        for name in series.for_variant(variant):
            proc = run(["patch", "-p1", "--fuzz=0", "--no-backup-if-mismatch", "-s",
                        "-i", str(series.directory / name)], stage="apply", cwd=scratch,
                       check=False)
            if proc.returncode != 0:
                raise InputError(f"{series.directory / name} does not apply to the "
                                 f"upstream copies of {tree} without fuzz (variant "
                                 f"{variant}): {proc.stdout}{proc.stderr}".rstrip())
        return {rel: (scratch / rel).read_bytes() for rel in touched}


def source_digest(files: dict[str, bytes]) -> str:
    """One sha256 over {path: bytes}: equal digests, byte-identical sources."""
    h = hashlib.sha256()
    for rel in sorted(files):
        h.update(rel.encode() + b"\0" + hashlib.sha256(files[rel]).digest())
    return h.hexdigest()
