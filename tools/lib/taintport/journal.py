"""All or nothing on a folder the user owns: every file replaced atomically, a
journal to roll back from, whenever the run stops.

commit() writes a set of files into a folder (a kernel tree, an export
folder) so that, killed at any moment, out of disk or denied a write, the
folder ends up with all of them or, after the next run's recover(), none:

  1. the plan (every path, its checksum before and after, the folders to
     create) and a copy of every file it replaces (a hard link: the old
     file itself, kept whole) go into <folder>/.taintport-journal.new-<id>,
     fsynced, then renamed to .taintport-journal: from here on the change
     can be rolled back;
  2. each file is written beside its target (.<name>.taintport-<id>),
     fsynced, given the old file's mode and renamed over it; the folder is
     fsynced;
  3. every file's checksum is compared with the plan, and the journal is
     renamed to .taintport-journal.done and removed.

A journal left behind means a run stopped in step 2 or 3: recover() puts
every file back from it (by rename again: it needs no free space), removes
what the run created, compares the checksums with the plan and says so. A
failed write in step 2 (ENOSPC, EPERM of an immutable file, EROFS) is rolled
back the same way at once. Nothing is written through a symbolic link.
"""
import hashlib
import json
import os
import secrets
import shutil
import stat
from dataclasses import asdict, dataclass
from pathlib import Path

from taintport.atomic import fsync_dir as _fsync_dir, write_new as _write
from taintport.errors import InputError

JOURNAL = ".taintport-journal"
PLAN = "plan.json"


class JournalError(InputError):
    """The folder could not be written; what was written is rolled back."""


@dataclass(frozen=True)
class Change:
    """One file to write: its path in the folder, its bytes, the mode a new
    file gets (an existing file keeps its own) and its mtime (None: now)."""
    path: str
    data: bytes
    mode: int = 0o644
    mtime: float | None = None


@dataclass(frozen=True)
class Entry:
    """One file of the plan: its checksums before (None: it did not exist) and
    after, and the mode it is written with."""
    path: str
    before: str | None
    after: str
    mode: int


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class Unsafe(Exception):
    """A path that is no regular file reached through folders: `shown` (the
    part of it that is not) and `what` it is instead."""

    def __init__(self, shown: str, what: str) -> None:
        self.shown = shown
        self.what = what
        super().__init__(f"{shown}: {what}")


def regular_file(root: Path, rel: str) -> os.stat_result | None:
    """The lstat of root/rel when it is a regular file reached through folders,
    None when absent; Unsafe when a symbolic link (which could lead out of
    root), a special file or a path climbing out is on the way."""
    parts = Path(rel).parts
    if Path(rel).is_absolute() or ".." in parts or not parts:
        raise Unsafe(rel, "not a path inside the folder")
    path = Path(root)
    for i, part in enumerate(parts):
        path = path / part
        try:
            info = path.lstat()
        except FileNotFoundError:
            return None
        shown = "/".join(parts[:i + 1])
        if stat.S_ISLNK(info.st_mode):
            raise Unsafe(shown, f"a symbolic link (to {os.readlink(path)})")
        last = i == len(parts) - 1
        if last and not stat.S_ISREG(info.st_mode):
            raise Unsafe(shown, "a folder" if stat.S_ISDIR(info.st_mode) else "a special file")
        if not last and not stat.S_ISDIR(info.st_mode):
            raise Unsafe(shown, "not a folder")
    return info


def _file_state(root: Path, rel: str) -> os.stat_result | None:
    try:
        return regular_file(root, rel)
    except Unsafe as err:
        raise JournalError(f"{Path(root) / err.shown} is {err.what}: taintport writes no "
                           "file through a link or in place of anything but a file; nothing "
                           "was written") from None


def _temp(root: Path, rel: str, nonce: str) -> Path:
    target = root / rel
    return target.with_name(f".{target.name}.taintport-{nonce}")


def commit(root: Path, changes: list[Change]) -> None:
    """Write every change into root, all or nothing (the module's doc)."""
    root = Path(root)
    if (root / JOURNAL).exists():
        raise JournalError(f"{root / JOURNAL}: an interrupted run's journal is still there; "
                           "recover() first")
    nonce = secrets.token_hex(6)
    entries: list[Entry] = []
    folders: list[str] = []
    for change in changes:
        info = _file_state(root, change.path)
        before = sha256((root / change.path).read_bytes()) if info else None
        entries.append(Entry(change.path, before, sha256(change.data),
                             stat.S_IMODE(info.st_mode) if info else change.mode))
        parent = Path(change.path).parent
        missing = []
        while str(parent) != "." and not (root / parent).exists():
            missing.append(str(parent))
            parent = parent.parent
        folders += [f for f in reversed(missing) if f not in folders]
    plan = {"id": nonce, "files": [asdict(e) for e in entries], "folders": folders}
    new = root / f"{JOURNAL}.new-{nonce}"
    try:
        new.mkdir()
        for entry in entries:
            if entry.before is not None:
                copy = new / "orig" / entry.path
                copy.parent.mkdir(parents=True, exist_ok=True)
                try:
                    os.link(root / entry.path, copy)
                except OSError:  # no hard links here (or an immutable file): a copy
                    shutil.copy2(root / entry.path, copy)
                    with open(copy, "rb+") as handle:
                        os.fsync(handle.fileno())
        _write(new / PLAN, json.dumps(plan, indent=1).encode(), 0o644)
        _fsync_dir(new)
        os.rename(new, root / JOURNAL)
        _fsync_dir(root)
    except OSError as err:
        shutil.rmtree(new, ignore_errors=True)
        raise JournalError(f"{root}: cannot write there ({err.strerror}: {err.filename}); "
                           "nothing was written") from None
    # the file being written, for the error: not the temporary name beside it
    writing = root
    try:
        for folder in folders:
            writing = root / folder
            (root / folder).mkdir()
        for change, entry in zip(changes, entries):
            target = writing = root / change.path
            temp = _temp(root, change.path, nonce)
            _write(temp, change.data, entry.mode)
            if os.geteuid() == 0 and entry.before is not None:
                old = target.stat()
                os.chown(temp, old.st_uid, old.st_gid)
            if change.mtime is not None:
                os.utime(temp, (change.mtime, change.mtime))
            os.rename(temp, target)
            _fsync_dir(target.parent)
        wrong = [e.path for e in entries if sha256((root / e.path).read_bytes()) != e.after]
        if wrong:
            raise JournalError(f"{root}: {', '.join(wrong)} not as written")
    except (OSError, JournalError) as err:
        said = f"{err.strerror}: {writing}" if isinstance(err, OSError) else str(err)
        undone = recover(root)
        raise JournalError(f"{root}: cannot write there ({said}); {undone}") from None
    _finish(root)


def _finish(root: Path) -> None:
    done = root / f"{JOURNAL}.done"
    shutil.rmtree(done, ignore_errors=True)
    os.rename(root / JOURNAL, done)
    _fsync_dir(root)
    shutil.rmtree(done)


def _digest(path: Path) -> str | None:
    try:
        return sha256(path.read_bytes()) if not path.is_symlink() else None
    except FileNotFoundError:
        return None


def recover(root: Path) -> str:
    """Roll back what an interrupted commit() left in root; "" when it left
    nothing, else a sentence saying what was done (checksums compared)."""
    root = Path(root)
    unfinished = sorted(root.glob(f"{JOURNAL}.new-*"))
    finished = sorted(root.glob(f"{JOURNAL}.done"))
    for leftover in unfinished + finished:
        shutil.rmtree(leftover)
    journal = root / JOURNAL
    if not journal.exists():
        if unfinished:
            return ("removed the journal an interrupted run was still writing: it had "
                    "changed no file yet")
        if finished:
            return ("removed the journal of an interrupted run that had written every file "
                    "(checksums compared before it was closed)")
        return ""
    try:
        plan = json.loads((journal / PLAN).read_text())
        entries = [Entry(**e) for e in plan["files"]]
        folders, nonce = [str(f) for f in plan["folders"]], str(plan["id"])
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise JournalError(f"{journal}: an interrupted run's journal cannot be read ({err}); "
                           "restore the files it lists by hand") from None
    restored = removed = 0
    for entry in reversed(entries):
        target = root / entry.path
        _temp(root, entry.path, nonce).unlink(missing_ok=True)
        if entry.before is None:
            if target.exists() or target.is_symlink():
                target.unlink()
                removed += 1
        elif _digest(target) != entry.before:
            copy = journal / "orig" / entry.path
            if _digest(copy) != entry.before:
                raise JournalError(f"{target}: cannot be restored: the journal's copy in "
                                   f"{copy} is gone or changed")
            os.rename(copy, target)
            _fsync_dir(target.parent)
            restored += 1
    for folder in reversed(folders):
        try:
            (root / folder).rmdir()
        except FileNotFoundError:
            pass
        except OSError:
            pass  # something of someone else's is in it now: it stays
    wrong = [e.path for e in entries if _digest(root / e.path) != e.before]
    if wrong:
        raise JournalError(f"{root}: rolling back an interrupted run left "
                           f"{', '.join(wrong)} unlike before it; the journal is kept in "
                           f"{journal}")
    _finish(root)
    return (f"rolled back an interrupted run ({restored} files restored, {removed} removed): "
            f"the {len(entries)} files it was writing are as before it (checksums compared)")
