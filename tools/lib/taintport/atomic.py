# SPDX-License-Identifier: GPL-2.0
"""The one way a file is written whole: beside, fsynced, renamed over (dpkg's way).

Every file the tools write (results and reports, descriptors on --repin,
regenerated quilt patches and series, ci/ files, the private apt state)
goes through replace_file(): a reader sees the old bytes or the new, never a
part, and a crash after it returns keeps the new.

The temporary file is named `.<name>.taintport-<12 hex>` and flocked from
its creation until the rename, so a run that dies in between (SIGKILL,
power) leaves a file that the next write of the same name recognises (the
name) and knows to be dead (nobody holds its lock), and removes. A live
run's temporary file is never taken: its lock is held.
"""
import fcntl
import os
import re
import secrets
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

TEMP_MARK = ".taintport-"
TEMP_HEX = 12


def temp_beside(path: Path) -> Path:
    """A new temporary name beside path, of the shape leftovers() recognises."""
    return path.with_name(f".{path.name}{TEMP_MARK}{secrets.token_hex(TEMP_HEX // 2)}")


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_new(path: Path | str, data: bytes, mode: int, dir_fd: int | None = None) -> None:
    """path (in the folder dir_fd, when given) created anew, never through a
    link, written and fsynced."""
    os.close(_locked_new(path, data, mode, dir_fd))


def _locked_new(path: Path | str, data: bytes, mode: int, dir_fd: int | None = None) -> int:
    """write_new's file left open and flocked: the lock says "a live run's"
    until the descriptor is closed."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                 mode & 0o7777, dir_fd=dir_fd)
    try:
        # a sweep that takes the file between its creation and this lock
        # removes it: the rename then fails (ENOENT), no write is lost unsaid
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.fchmod(fd, mode & 0o7777)
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        raise
    return fd


def replace_file(path: Path | str, data: bytes, mode: int = 0o644) -> None:
    """path replaced atomically by data, with mode: written beside, fsynced,
    renamed over, its folder fsynced; what a killed run left beside path is
    removed first."""
    with replacing(path, mode, data):
        pass


@contextmanager
def replacing(path: Path | str, mode: int = 0o644, data: bytes = b"") -> Iterator[Path]:
    """replace_file() for a file another program writes: path replaced
    atomically by the temporary file yielded (holding data, created and
    flocked here, so a sweep leaves it alone; what is written into it in
    place, as `cp` onto it does, keeps its inode), fsynced and renamed over
    path when the block ends without an error, removed when it does not."""
    path = Path(path)
    sweep(path)
    temp = temp_beside(path)
    try:
        fd = _locked_new(temp, data, mode)  # a full disk here leaves no temp
        try:
            yield temp
            os.fsync(fd)
            os.rename(temp, path)
        finally:
            os.close(fd)
    finally:
        temp.unlink(missing_ok=True)
    fsync_dir(path.parent)


def target_of(name: str) -> str | None:
    """The file a temporary name of temp_beside's shape stands beside (None:
    not such a name)."""
    if not name.startswith(".") or TEMP_MARK not in name:
        return None
    target, _, nonce = name[1:].rpartition(TEMP_MARK)
    if not target or len(nonce) != TEMP_HEX or not re.fullmatch(r"[0-9a-f]+", nonce):
        return None
    return target


def leftovers(path: Path) -> list[Path]:
    """The temporary files of path's name in its folder, live or dead."""
    shape = re.compile(re.escape(f".{path.name}{TEMP_MARK}") + f"[0-9a-f]{{{TEMP_HEX}}}")
    try:
        entries = os.listdir(path.parent)
    except (FileNotFoundError, NotADirectoryError):
        return []
    return sorted(path.parent / e for e in entries if shape.fullmatch(e))


def sweep(path: Path) -> list[Path]:
    """Remove the temporary files of path's name that dead runs left: each a
    regular file whose lock nobody holds (a live run's is left alone, and so is
    anything else that bears the name: a link, a folder, a FIFO)."""
    removed = []
    for temp in leftovers(path):
        try:
            fd = os.open(temp, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY)
        except OSError:
            continue  # gone meanwhile, or a link: not ours
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                continue
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                continue  # a live run's
            now = os.lstat(temp)
            if (now.st_dev, now.st_ino) == (info.st_dev, info.st_ino):
                os.unlink(temp)
                removed.append(temp)
        except OSError:
            continue  # renamed or removed by its run meanwhile
        finally:
            os.close(fd)
    return removed


def sweep_temps(folder: Path) -> None:
    """The temporary files that writers killed before their rename left below
    folder (temp_beside's names), removed by sweep(): a live writer's is
    never taken; links are not followed."""
    for top, _, files in os.walk(folder):
        for target in {target_of(name) for name in files} - {None}:
            sweep(Path(top) / str(target))
