# SPDX-License-Identifier: GPL-2.0
"""Fetch stage: the pinned linux-source tree in the cache.

The .deb comes from the Debian archive through a private apt state
(tree/archive/), checked against its pin before anything is extracted.
A tree is kept per kernel series (<cache>/trees/<version>/<package>/), so
that the next upload of the series keeps its build folder: the new upload is
extracted beside the old tree, every file whose bytes did not change takes
the old file's time (make rebuilds only what the upload changed), and the
new tree replaces the old by a rename. Extractions go to scratch folders
that are locked while their run lives; whatever an interrupted or killed run
left is removed by the next fetch, and the programs of a killed run's
extraction die with it.
"""
import hashlib
import os
import shutil
import stat
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from taintport import names
from taintport.cache import Cache, scratch, sweep
from taintport.digest import same_bytes
from taintport.errors import RunError
from taintport.process import STOPPING, require
from taintport.tree.archive.apt import note
from taintport.tree.archive.download import fetch_deb
from taintport.tree.disk import disk_error, nearly_full, out_of_space
from taintport.tree.untar import untar
from taintport.tree.versions import Version

# in a tree: which upload it was extracted from ("package version sha256")
UPLOAD = ".taintport-upload"
# in a tree: one SHA256 over what its kernel configuration is made from (every
# Kconfig file, the configs/*.config fragments tinyconfig merges,
# scripts/kconfig/): the build dir's .config is made again only when it changes
KCONFIG = ".taintport-kconfig"
EXTRACTING_PREFIX = ".extract-"


@dataclass(frozen=True)
class Fetched:
    deb: Path
    tree: Path
    sha256: str
    reused: bool


# One extraction at a time in this process: each writes ~1.3 GB, and two at
# once on one disk took 23.8 s where one after the other took 2 x 9.1 s.
EXTRACTING = threading.Lock()


def upload_of(version: Version) -> str:
    return f"{version.package} {version.version} {version.sha256}\n"


def extracted(tree: Path) -> str | None:
    """Which upload tree holds, from its UPLOAD file; None when there is no tree."""
    try:
        return (tree / UPLOAD).read_text()
    except (FileNotFoundError, NotADirectoryError):
        return None


def extract(deb: Path, version: Version, tree: Path, log: Path, nice: int = 0,
            build_dir: Path | None = None) -> bool:
    """Bring tree to the pinned upload; True when it already was.

    The tree appears whole or not at all. A tree of another upload of the
    series is replaced, every unchanged file keeping its time, so that
    build_dir (the series' build folder) rebuilds only what changed; without
    an old tree to compare with, build_dir is removed (its objects could be
    newer than a changed source). nice: the niceness of the extracting
    processes (a tree fetched ahead yields to the boots cells wait on)."""
    wanted = upload_of(version)
    if extracted(tree) == wanted:
        return True
    with EXTRACTING:
        if extracted(tree) == wanted:
            return True
        try:
            _extract(deb, version, tree, log, nice, build_dir)
        except OSError as err:
            raise disk_error(err, f"extracting {version.tarball} from {deb.name}",
                             tree.parent) from None
        return False


def _extract(deb: Path, version: Version, tree: Path, log: Path, nice: int,
             build_dir: Path | None) -> None:
    require("dpkg-deb", "dpkg")
    require("xz", "xz-utils")
    require("setpriv", "util-linux")
    parent = tree.parent
    parent.mkdir(parents=True, exist_ok=True)
    sweep(parent, EXTRACTING_PREFIX)
    with scratch(parent, EXTRACTING_PREFIX) as tmp:
        unpack(deb, version, tmp, log, nice)
        src = tmp / version.source_dir
        if not (src / "Makefile").is_file():
            raise RunError("fetch", f"{deb.name}: {version.tarball} has no "
                           f"{version.source_dir}/Makefile")
        (src / UPLOAD).write_text(upload_of(version))
        (src / KCONFIG).write_text(kconfig_digest(src) + "\n")
        if tree.is_dir():
            start = time.monotonic()
            before = (extracted(tree) or "an unknown upload").split(" ")
            kept, files = carry_times(tree, src)
            note(log, f"{kept} of {files} files unchanged since {' '.join(before[:2])}: "
                      "they keep their times, so the build folder rebuilds only the rest "
                      f"({time.monotonic() - start:.1f} s)\n")
            retire(tree)
        elif build_dir is not None and build_dir.exists():
            # no tree to compare with (removed, or a run killed between the two
            # renames): the build folder's objects may be newer than changed sources
            shutil.rmtree(build_dir)
            note(log, f"no earlier tree of {version.name} to compare with: {build_dir} "
                      "removed, the next build is cold\n")
        os.rename(src, tree)


def retire(folder: Path) -> None:
    """Remove a replaced tree off the caller's path: renamed at once to a
    scratch name, deleted by a thread of its own (1.4 GB in 80000 files took
    two minutes on a busy disk, and the build waits for no such thing). The
    thread is not a daemon, so the run waits for it before it exits; a run
    killed first leaves the folder to the next fetch's sweep, by its name."""
    retired = Path(tempfile.mkdtemp(dir=folder.parent, prefix=EXTRACTING_PREFIX + "old-"))
    os.rename(folder, retired / folder.name)
    threading.Thread(target=shutil.rmtree, args=(retired,), kwargs={"ignore_errors": True},
                     name=f"{RETIRING}{folder.parent.name}").start()


RETIRING = "retire-"


def wait_retired() -> None:
    """Until every tree retire() handed to a thread is gone: a caller that
    removes the whole cache next would race the thread for its files (make
    bench's phase 5 did: FileNotFoundError on a Makefile, at its very end)."""
    for thread in threading.enumerate():
        if thread.name.startswith(RETIRING) and thread is not threading.current_thread():
            thread.join()


def unpack(deb: Path, version: Version, dest: Path, log: Path, nice: int) -> None:
    """The whole source tree of deb into dest."""
    start = time.monotonic()
    note(log, f"$ dpkg-deb --fsys-tarfile {deb} | tar -xO ./{version.tarball} "
              f"| xz -dc -T0 | tar -x -C {dest}\n")
    codes, errors = untar(deb, version.tarball, dest, nice=nice)
    note(log, f"{errors}extracted in {time.monotonic() - start:.1f} s (exit codes {codes})\n")
    if STOPPING.is_set():
        raise RunError("fetch", "interrupted")
    if any(codes):
        # tar says "No space left on device", or only "Wrote only 9728 of 10240
        # bytes" when the disk filled in the middle of a block
        if "No space left on device" in errors or nearly_full(dest):
            raise out_of_space(f"extracting {version.tarball} from {deb.name}", dest.parent)
        raise RunError("fetch", f"extracting {version.tarball} from {deb.name} failed "
                       f"(exit codes {codes}); see {log}", errors.strip()[-2000:])


def kconfig_digest(tree: Path) -> str:
    """One SHA256 over the files a kernel configuration is made from."""
    digest = hashlib.sha256()
    for folder, dirs, entries in os.walk(tree):
        dirs.sort()
        rel = Path(folder).relative_to(tree)
        for entry in sorted(entries):
            if entry.startswith("Kconfig") or rel.parts[:2] == ("scripts", "kconfig") or \
                    (rel.name == "configs" and entry.endswith(".config")):
                digest.update(str(rel / entry).encode() + b"\0" +
                              (Path(folder) / entry).read_bytes())
    return digest.hexdigest()


def carry_times(old: Path, new: Path) -> tuple[int, int]:
    """Give each regular file of new the time of old's file at the same path
    when their bytes are the same, and now otherwise; (kept, files).

    old is what the series' build folder was last built from (or newer,
    where a variant switch touched it since), so make then rebuilds exactly
    what the upload changed. An extracted file has the tarball's time, older
    than any object of the build folder: left as it is, a changed source
    would not be rebuilt."""
    now = time.time()
    kept = files = 0
    for folder, _, entries in os.walk(new):
        rel_folder = Path(folder).relative_to(new)
        for entry in entries:
            path = Path(folder) / entry
            if not stat.S_ISREG(os.lstat(path).st_mode):
                continue
            files += 1
            before = old / rel_folder / entry
            try:
                was = os.lstat(before)
            except (FileNotFoundError, NotADirectoryError):
                os.utime(path, (now, now))
                continue
            if stat.S_ISREG(was.st_mode) and was.st_size == os.lstat(path).st_size \
                    and same_bytes(before, path):
                os.utime(path, ns=(was.st_atime_ns, was.st_mtime_ns))
                kept += 1
            else:
                os.utime(path, (now, now))
    return kept, files


def retire_old_layout(cache: Cache, version: Version, log: Path) -> None:
    """Trees and build folders keyed by the upload (the layout before a series
    kept its build folder: trees/<name>/<upload>/, build/<name>/<upload>/)
    are never used again: removed, under the version's lock, once."""
    for top in (cache.root / "trees" / version.name, cache.root / "build" / version.name):
        if not top.is_dir():
            continue
        for old in top.iterdir():
            if old.is_dir() and not old.is_symlink() and old.name[:1].isdigit() \
                    and names.DEB_VERSION.fullmatch(old.name):
                shutil.rmtree(old, ignore_errors=True)
                note(log, f"{old}: the cache layout before series kept their build "
                          "folder; removed\n")


def fetch(cache: Cache, version: Version, log: Path, nice: int = 0) -> Fetched:
    """The pinned tree in the cache: downloaded, checked, extracted (the
    caller holds the version's lock)."""
    deb, deb_reused = fetch_deb(cache, version, log)
    tree = cache.tree(version)
    try:
        retire_old_layout(cache, version, log)
        # what a killed extraction left, whether or not the tree is there now
        sweep(tree.parent, EXTRACTING_PREFIX)
    except OSError as err:
        raise disk_error(err, "cleaning up the cache", cache.root) from None
    tree_reused = extract(deb, version, tree, log, nice, cache.build(version))
    return Fetched(deb=deb, tree=tree, sha256=version.sha256, reused=deb_reused and tree_reused)
