# SPDX-License-Identifier: GPL-2.0
"""Where downloads, trees and builds live: outside the repository.

Default `${XDG_CACHE_HOME:-$HOME/.cache}/taintport`, overridden by
`--cache DIR` or TAINTPORT_CACHE. One run at a time per version: its tree is
patched in place and its build dir is shared by its variants, so a second run
that needs the same version waits (and says so); other versions go on.

A version's tree and build dir are named by its kernel series, not by the
upload: the next upload of the series replaces the tree (tree/fetch.py) and
keeps the build dir and ccache, so it rebuilds only what changed.
"""
import fcntl
import os
import secrets
import shutil
import stat
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Protocol

from taintport import names
from taintport.atomic import replace_file
from taintport.errors import InputError
from taintport.journal import Key

# the journal key: 32 random bytes, this user's only (journal.py's doc)
KEY_FILE = "journal.key"
KEY_BYTES = 32


class Pinned(Protocol):
    """A pinned kernel version, as the cache names its folders (versions.Version)."""
    @property
    def name(self) -> str: ...
    @property
    def version(self) -> str: ...
    @property
    def source_dir(self) -> str: ...


def default_root() -> Path:
    if os.environ.get("TAINTPORT_CACHE"):
        return Path(os.environ["TAINTPORT_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "taintport"


class Cache:
    def __init__(self, root: Path | str | None = None) -> None:
        # absolute: builds run make with -C and O= (a CI job names the cache
        # relative to its workspace, TAINTPORT_CACHE=.cache/taintport)
        self.root = (Path(root) if root else default_root()).absolute()

    def apt(self) -> Path:
        return self.root / "apt"

    def debs(self) -> Path:
        return self.root / "debs"

    def tree(self, version: Pinned) -> Path:
        """The extracted source of the version's series (its pinned upload,
        tree/fetch.py's UPLOAD file says which), patched in place."""
        return self.root / "trees" / version.name / version.source_dir

    def build(self, version: Pinned) -> Path:
        """The O= build dir of the series: kept when the pin moves to its next upload."""
        return self.root / "build" / version.name / version.source_dir

    def artifacts(self, version: Pinned, variant: str) -> Path:
        return self.root / "artifacts" / version.name / version.version / variant

    def initramfs(self, name: str) -> Path:
        """A dracut image that holds no kernel's file, the same for every kernel."""
        return self.root / "initramfs" / name

    @contextmanager
    def locked(self, name: str) -> "Iterator[Cache]":
        """Hold one version's tree and build dir; a second holder waits and says so."""
        with held(self._lock_path(name), f"{name} in {self.root}"):
            yield self

    @contextmanager
    def try_locked(self, name: str) -> Iterator[bool]:
        """Like locked(), but yield False at once when someone holds it."""
        with self._lock_path(name).open("a+") as handle:
            if busy(handle):
                yield False
                return
            with holding(handle, f"pid {os.getpid()} (fetching ahead)"):
                yield True

    def scratch_parent(self) -> Path:
        """Where scratch copies of a user's files live while a run works on
        them (cache.scratch; never TMPDIR, where nothing removes a killed
        run's): swept of a killed run's by the next."""
        return self.root / "scratch"

    def spatch_answers(self) -> Path:
        """spatch's clean answers, kept by what they depend on (layer/spatch_cache)."""
        return self.root / "spatch"

    @contextmanager
    def folder_locked(self, folder: Path) -> Iterator[None]:
        """Hold a user's folder (a tree, an export folder) for one run, named by
        its identity (device and inode: any path to it is the same folder); a
        second run is refused, naming the holder."""
        try:
            info = os.stat(folder)
            (self.root / "locks").mkdir(parents=True, exist_ok=True)
            handle = open(self.root / "locks" / f"tree-{info.st_dev}-{info.st_ino}.lock", "a+")
        except OSError as err:
            raise InputError(f"{folder}: cannot take the lock of one run per folder in "
                             f"{self.root / 'locks'} ({err.strerror})") from None
        with handle:
            holder = busy(handle)
            if holder:
                raise InputError(f"{folder}: another taintport run ({holder}) is writing it; "
                                 "wait for it to end, then run again; nothing was changed")
            with holding(handle, f"pid {os.getpid()}"):
                yield

    def journal_key(self) -> Key:
        """The key that authenticates this user's journals: made once, atomically
        (written whole with mode 0600, then linked into place: two runs making
        it at once agree on one), and refused when anyone but this user could
        have written or read it."""
        path = self.root / KEY_FILE
        try:
            self._make_key(path)
        except OSError as err:
            raise InputError(f"{path}: cannot make the journal key ({err.strerror}); the "
                             "cache must be a folder this user may write") from None
        return Key(_read_key(path), path)

    def _make_key(self, path: Path) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        if not os.path.lexists(path):
            temp = self.root / f".{KEY_FILE}.{os.getpid()}-{secrets.token_hex(6)}"
            try:
                fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
                try:
                    os.write(fd, secrets.token_bytes(KEY_BYTES))
                    os.fsync(fd)
                finally:
                    os.close(fd)
                os.link(temp, path)
            except FileExistsError:
                pass  # another run made it first: theirs is the key
            finally:
                temp.unlink(missing_ok=True)

    def _lock_path(self, name: str) -> Path:
        # checked before anything is created: a name is never a path
        names.version_name(name)
        (self.root / "locks").mkdir(parents=True, exist_ok=True)
        return self.root / "locks" / f"{name}.lock"


@contextmanager
def held(path: Path, what: str) -> Iterator[None]:
    """flock path; a second holder waits and says who holds what."""
    with open(path, "a+") as handle:
        holder = busy(handle)
        if holder:
            print(f"taintport: waiting for {holder} to release {what}",
                  file=sys.stderr, flush=True)
            fcntl.flock(handle, fcntl.LOCK_EX)
        with holding(handle, f"pid {os.getpid()}"):
            yield


def busy(handle: IO[str]) -> str | None:
    """flock handle if no one holds it (None), else who does, as the holder
    wrote it (holding())."""
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.seek(0)
        return handle.read().strip() or "another run"
    return None


@contextmanager
def holding(handle: IO[str], holder: str) -> Iterator[None]:
    """With the flock taken: name the holder in the file for waiters, then let go."""
    fd = handle.fileno()
    try:
        # unbuffered: a full disk fails here, not later in close()
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{holder}\n".encode(), 0)
    except OSError:
        pass  # the name only tells a waiter who it waits for: the lock holds without it
    try:
        yield
    finally:
        os.ftruncate(fd, 0)
        fcntl.flock(handle, fcntl.LOCK_UN)

def _read_key(path: Path) -> bytes:
    """The key file's bytes when it is this user's regular file, readable by
    nobody else; a named refusal otherwise."""
    refuse = (f"{path}: the journal key {{}}; remove it (a new one is made, and a "
              "journal the old one authenticated is refused: roll it back by hand)")
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as err:
        raise InputError(refuse.format(f"cannot be opened ({err.strerror})")) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_uid != os.geteuid() \
                or info.st_mode & 0o077 or info.st_size != KEY_BYTES:
            raise InputError(refuse.format(
                f"is not a {KEY_BYTES}-byte file of this user's with mode 0600"))
        return os.pread(fd, KEY_BYTES + 1, 0)
    finally:
        os.close(fd)


def _umask() -> int:
    # read once at import, before any thread: setting it to read it is racy
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


UMASK = _umask()


def write_atomic(path: Path | str, text: str | bytes) -> None:
    """Write a file so a reader never sees half of it (results survive a crash):
    atomic.replace_file, with the mode any file this user creates would have
    (results and docs are for others to read too)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    replace_file(path, text.encode() if isinstance(text, str) else text, 0o666 & ~UMASK)


# Scratch folders (a download, an extraction) are locked (flock on the folder
# itself) for as long as the run that made them lives; a folder whose lock
# nobody holds was left by a run that was killed. The parent's SCRATCH_LOCK
# is taken shared while a folder is made and locked, and exclusively by a
# sweep, so a sweep never takes a folder in the instant between the two.
SCRATCH_LOCK = ".scratch.lock"


@contextmanager
def scratch(parent: Path, prefix: str) -> Iterator[Path]:
    """A new folder in parent, locked while this run lives, removed when the block ends."""
    parent.mkdir(parents=True, exist_ok=True)
    with open(parent / SCRATCH_LOCK, "a") as guard:
        fcntl.flock(guard, fcntl.LOCK_SH)
        path = Path(tempfile.mkdtemp(dir=parent, prefix=prefix))
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
        fcntl.flock(fd, fcntl.LOCK_EX)
        fcntl.flock(guard, fcntl.LOCK_UN)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)
        os.close(fd)


def sweep(parent: Path, prefix: str) -> list[Path]:
    """Remove the scratch folders named prefix* that killed runs left in parent."""
    if not parent.is_dir():
        return []
    removed = []
    with open(parent / SCRATCH_LOCK, "a") as guard:
        fcntl.flock(guard, fcntl.LOCK_EX)
        for path in sorted(parent.glob(prefix + "*")):
            try:
                fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
            except OSError:
                continue  # not a folder of ours
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                continue  # a live run's
            else:
                shutil.rmtree(path, ignore_errors=True)
                removed.append(path)
            finally:
                os.close(fd)
    return removed
