# SPDX-License-Identifier: GPL-2.0
"""All or nothing on a folder the user owns: every file replaced atomically, a
journal to roll back from, whenever the run stops.

commit() writes a set of files into a folder (a kernel tree, an export
folder) so that, killed at any moment, out of disk or denied a write, the
folder ends up with all of them or, after the next run's recover(), none:

  1. the plan (every path, its checksum before and after, the folders to
     create) and a copy of every file it replaces (a hard link: the old
     file itself, kept whole) go into <folder>/.taintport-journal.new-<id>-<tag>,
     with the plan's MAC, fsynced, then renamed to .taintport-journal: from
     here on the change can be rolled back;
  2. each file is written beside its target (.<name>.taintport-<id>),
     fsynced, given the old file's mode and renamed over it; the folder is
     fsynced;
  3. every file's checksum is compared with the plan, and the journal is
     renamed to .taintport-journal.done-<id>-<tag> and removed.

A journal left behind means a run stopped in step 2 or 3: recover() puts
every file back from it (by rename again: it needs no free space), removes
what the run created, compares the checksums with the plan, renames it to
.taintport-journal.undone-<id>-<tag> (a rollback killed after that is not
taken for a finished run) and says so. A failed write in step 2 (ENOSPC,
EPERM of an immutable file, EROFS) is rolled back the same way at once.

The journal lives in a folder that others may have written (a tarball, a
vendor's repository), so it is input, not instructions (git's
safe.directory lesson): it is acted on only when it proves to be this
user's own. Its plan carries an HMAC-SHA256 keyed by a random key only the
user's cache holds (cache.Cache.journal_key), and the name of every
leftover folder carries the MAC of its id; the copies in orig/ are checked
against the plan's checksums. Anything else named .taintport-journal* is a
refusal that names it, before anything is touched. Even an authenticated
plan is confined: every path relative, normalised, inside the folder, and
every file and folder opened beneath the folder's descriptor one component
at a time with O_NOFOLLOW, so no symbolic link is followed anywhere; a file
is read only when fstat says it is a regular one (opened O_NONBLOCK: a FIFO
never blocks), and the plan's size and nesting are bounded before it is
parsed.
"""
import errno
import hashlib
import hmac
import json
import os
import posixpath
import re
import secrets
import shutil
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path

from taintport.atomic import write_new as _write
from taintport.errors import InputError

JOURNAL = ".taintport-journal"
PLAN = "plan.json"
MAC = "plan.mac"
ORIG = "orig"
# a plan names the files one run writes (a layer writes a few dozen): a
# megabyte is thousands of them, and nothing in it nests deeper than an entry
MAX_PLAN = 1 << 20
MAX_DEPTH = 3
NEW, DONE, UNDONE = "new", "done", "undone"
LEFTOVER = re.compile(rf"^{re.escape(JOURNAL)}\.({NEW}|{DONE}|{UNDONE})-([0-9a-f]{{12}})-"
                      r"([0-9a-f]{32})$")
NONCE = re.compile(r"^[0-9a-f]{12}$")
DIGEST = re.compile(r"^[0-9a-f]{64}$")
DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


class JournalError(InputError):
    """The folder could not be written; what was written is rolled back."""


class Untrusted(JournalError):
    """State in the folder that this user's taintport cannot prove it wrote,
    or that is damaged: refused, with nothing touched."""


@dataclass(frozen=True)
class Key:
    """The secret that authenticates this user's journals, and the file it
    is kept in (to name it)."""
    secret: bytes
    where: Path


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


@dataclass(frozen=True)
class Plan:
    id: str
    files: tuple[Entry, ...]
    folders: tuple[str, ...]


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class Unsafe(Exception):
    """A path that is no regular file reached through folders: `shown` (the
    part of it that is not) and `what` it is instead."""

    def __init__(self, shown: str, what: str) -> None:
        self.shown = shown
        self.what = what
        super().__init__(f"{shown}: {what}")


def inside(rel: object) -> str:
    """rel when it is a path inside a folder: a non-empty string, relative,
    normalised (no `.`, `..` or empty component), no NUL; else Unsafe."""
    if not isinstance(rel, str) or not rel:
        raise Unsafe(repr(rel), "not a path")
    if "\0" in rel or rel.startswith("/") or posixpath.normpath(rel) != rel \
            or ".." in rel.split("/") or rel == ".":
        raise Unsafe(repr(rel), "not a path inside the folder")
    try:
        os.fsencode(rel)
    except UnicodeEncodeError:  # a lone surrogate from JSON's "\ud800"
        raise Unsafe(repr(rel), "not a name a file can have") from None
    return rel


def regular_file(root: Path, rel: str) -> os.stat_result | None:
    """The lstat of root/rel when it is a regular file reached through folders,
    None when absent; Unsafe when a symbolic link (which could lead out of
    root), a special file or a path climbing out is on the way."""
    parts = inside(rel).split("/")
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


# ------------------------------------------------ beneath a folder's descriptor

@contextmanager
def _opened(path: Path) -> Iterator[int]:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        yield fd
    finally:
        os.close(fd)


@contextmanager
def _parent(root_fd: int, rel: str, make: bool = False) -> Iterator[int | None]:
    """A descriptor of rel's folder, opened from root_fd one component at a
    time without following a link (ELOOP/ENOTDIR when one is on the way);
    None when a folder on the way is absent (made first when make)."""
    fds: list[int] = []
    try:
        fd = root_fd
        for part in rel.split("/")[:-1]:
            try:
                fd = os.open(part, DIR_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                if not make:
                    yield None
                    return
                os.mkdir(part, 0o755, dir_fd=fd)
                fd = os.open(part, DIR_FLAGS, dir_fd=fd)
            fds.append(fd)
        yield fd
    finally:
        for opened in fds:
            os.close(opened)


def _read_at(dir_fd: int, name: str, limit: int | None = None) -> bytes | None:
    """The bytes of the regular file name in dir_fd, None when absent; a link,
    FIFO, device or folder there is Unsafe (a FIFO is opened without blocking),
    a file over limit bytes too."""
    try:
        fd = os.open(name, FILE_FLAGS, dir_fd=dir_fd)
    except FileNotFoundError:
        return None
    except OSError as err:
        raise Unsafe(name, "a symbolic link" if err.errno == errno.ELOOP
                     else f"not readable ({err.strerror})") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise Unsafe(name, "a folder" if stat.S_ISDIR(info.st_mode) else
                         "a special file (FIFO, device or socket)")
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
            if limit is not None and sum(map(len, chunks)) > limit:
                raise Unsafe(name, f"more than the {limit} bytes allowed")
        return b"".join(chunks)
    finally:
        os.close(fd)


def _digest_at(root_fd: int, rel: str) -> str | None:
    """The checksum of root/rel when it is a regular file reached without a
    link, else None."""
    try:
        with _parent(root_fd, rel) as fd:
            data = _read_at(fd, rel.rsplit("/", 1)[-1]) if fd is not None else None
    except (Unsafe, OSError):
        return None
    return sha256(data) if data is not None else None


def _base(rel: str) -> str:
    return rel.rsplit("/", 1)[-1]


def _temp_name(rel: str, nonce: str) -> str:
    return f".{_base(rel)}.taintport-{nonce}"


# ------------------------------------------------------------ authentication

def _tag(key: Key, nonce: str) -> str:
    return hmac.new(key.secret, f"taintport journal {nonce}".encode(),
                    hashlib.sha256).hexdigest()[:32]


def _seal(key: Key, plan: bytes) -> bytes:
    return hmac.new(key.secret, b"taintport journal plan\0" + plan,
                    hashlib.sha256).hexdigest().encode()


def _leftover(nonce: str, tag: str, state: str) -> str:
    return f"{JOURNAL}.{state}-{nonce}-{tag}"


def _depth(data: bytes) -> int:
    """How deep arrays and objects nest in JSON text (strings skipped)."""
    depth = deepest = 0
    in_string = escaped = False
    for byte in data:
        if in_string:
            if escaped:
                escaped = False
            elif byte == 0x5C:  # backslash
                escaped = True
            elif byte == 0x22:
                in_string = False
        elif byte == 0x22:
            in_string = True
        elif byte in b"[{":
            depth += 1
            deepest = max(deepest, depth)
            if deepest > MAX_DEPTH:
                break
        elif byte in b"]}":
            depth -= 1
    return deepest


def parse_plan(data: bytes) -> Plan:
    """The plan of a journal, from bytes bounded in size and nesting first:
    a Plan or ValueError saying what is wrong."""
    if len(data) > MAX_PLAN:
        raise ValueError(f"{len(data)} bytes, more than the {MAX_PLAN} a plan may have")
    if _depth(data) > MAX_DEPTH:
        raise ValueError(f"nested deeper than a plan's {MAX_DEPTH} levels")
    doc = json.loads(data.decode("utf-8"))
    if not isinstance(doc, dict) or set(doc) != {"id", "files", "folders"}:
        raise ValueError("not an object with exactly id, files and folders")
    nonce, files, folders = doc["id"], doc["files"], doc["folders"]
    if not isinstance(nonce, str) or not NONCE.match(nonce):
        raise ValueError(f"id {nonce!r} is not 12 hexadecimal digits")
    if not isinstance(files, list) or not isinstance(folders, list):
        raise ValueError("files and folders are not lists")
    entries = []
    for item in files:
        if not isinstance(item, dict) or set(item) != {"path", "before", "after", "mode"}:
            raise ValueError(f"file entry {str(item)[:80]!r} is not path, before, after, mode")
        before, after, mode = item["before"], item["after"], item["mode"]
        if not (before is None or isinstance(before, str) and DIGEST.match(before)) \
                or not isinstance(after, str) or not DIGEST.match(after):
            raise ValueError(f"file entry {str(item)[:80]!r} has no SHA-256 checksums")
        if not isinstance(mode, int) or isinstance(mode, bool) or not 0 <= mode <= 0o7777:
            raise ValueError(f"file entry {str(item)[:80]!r} has no file mode")
        entries.append(Entry(_confined(item["path"]), before, after, mode))
    paths = [e.path for e in entries] + [_confined(f) for f in folders]
    if len(set(paths)) != len(paths):
        raise ValueError("a path is listed twice")
    return Plan(nonce, tuple(entries), tuple(str(f) for f in folders))


def _confined(rel: object) -> str:
    try:
        path = inside(rel)
    except Unsafe as err:
        raise ValueError(f"path {err}") from None
    if path.split("/")[0].startswith(JOURNAL):
        raise ValueError(f"path {path!r} is inside the journal")
    return path


def _untrusted(root: Path, name: str, why: str) -> Untrusted:
    where = root / name
    return Untrusted(f"{where}: {why}; taintport acts only on a journal it can prove this "
                     "user's taintport wrote (a key in the user's cache authenticates it): "
                     f"inspect it (ls -la {where}) and, if no run of yours was interrupted "
                     f"there, remove it (rm -r {where}); nothing was changed")


def _found(root: Path, root_fd: int, key: Key) -> tuple[list[tuple[str, str]], bool]:
    """The leftover folders of this user's finished or abandoned journals in
    root ([(name, state)]) and whether a journal is there; every other
    .taintport-journal* is refused, before anything is touched."""
    leftovers = []
    journal = False
    for name in sorted(os.listdir(root_fd)):
        if not name.startswith(JOURNAL):
            continue
        info = os.stat(name, dir_fd=root_fd, follow_symlinks=False)
        kind = ("a symbolic link" if stat.S_ISLNK(info.st_mode) else
                None if stat.S_ISDIR(info.st_mode) else
                "a regular file" if stat.S_ISREG(info.st_mode) else "a special file")
        if name == JOURNAL:
            if kind:
                raise _untrusted(root, name, f"the journal is {kind}, not a folder")
            journal = True
            continue
        match = LEFTOVER.match(name)
        if not match or not hmac.compare_digest(match[3], _tag(key, match[2])):
            raise _untrusted(root, name, "a journal's leftover that is not authenticated")
        if kind:
            raise _untrusted(root, name, f"a journal's leftover that is {kind}, not a folder")
        leftovers.append((name, match[1]))
    return leftovers, journal


def _read_journal(root: Path, root_fd: int, key: Key) -> tuple[Plan, int]:
    """The journal's plan, authenticated and confined, and an open
    descriptor of the journal (the caller closes it)."""
    try:
        fd = os.open(JOURNAL, DIR_FLAGS, dir_fd=root_fd)
    except OSError as err:
        raise _untrusted(root, JOURNAL, f"cannot be opened ({err.strerror})") from None
    try:
        try:
            mac = _read_at(fd, MAC, 64)
            data = _read_at(fd, PLAN, MAX_PLAN)
        except Unsafe as err:
            raise _untrusted(root, JOURNAL, f"its {err}") from None
        except OSError as err:
            raise _untrusted(root, JOURNAL, f"cannot be read ({err.strerror})") from None
        if mac is None or data is None or not hmac.compare_digest(mac, _seal(key, data)):
            raise _untrusted(root, JOURNAL, "a journal whose plan is not authenticated "
                             f"by the key in {key.where}")
        try:
            plan = parse_plan(data)
        except (ValueError, RecursionError) as err:
            raise _untrusted(root, JOURNAL, f"a damaged journal ({err})") from None
        return plan, fd
    except BaseException:
        os.close(fd)
        raise


# --------------------------------------------------------------- commit

def _unsafe(root: Path, err: Unsafe) -> JournalError:
    return JournalError(f"{root / err.shown} is {err.what}: taintport writes no file through "
                        "a link or in place of anything but a file; nothing was written")


def _current(root: Path, root_fd: int, rel: str) -> bytes | None:
    """The bytes of a file about to be replaced (None: absent), refused when
    it is not a regular file reached through folders."""
    try:
        regular_file(root, rel)
        with _parent(root_fd, rel) as fd:
            return _read_at(fd, _base(rel)) if fd is not None else None
    except Unsafe as err:
        raise _unsafe(root, err) from None


def commit(root: Path, changes: list[Change], key: Key) -> None:
    """Write every change into root, all or nothing (the module's doc)."""
    root = Path(root)
    try:
        with _opened(root) as root_fd:
            if any(n.startswith(JOURNAL) for n in os.listdir(root_fd)):
                raise JournalError(f"{root / JOURNAL}*: an interrupted run's journal is still "
                                   "there; recover() first")
            _commit(root, root_fd, changes, key)
    except OSError as err:
        raise JournalError(f"{root}: cannot write there ({err.strerror}: {err.filename})") \
            from None


def _commit(root: Path, root_fd: int, changes: list[Change], key: Key) -> None:
    nonce = secrets.token_hex(6)
    tag = _tag(key, nonce)
    entries: list[Entry] = []
    folders: list[str] = []
    for change in changes:
        try:
            rel = inside(change.path)
        except Unsafe as err:
            raise _unsafe(root, err) from None
        old = _current(root, root_fd, rel)
        info = regular_file(root, rel) if old is not None else None
        entries.append(Entry(rel, sha256(old) if old is not None else None,
                             sha256(change.data),
                             stat.S_IMODE(info.st_mode) if info else change.mode))
        parent = posixpath.dirname(rel)
        missing = []
        while parent and not (root / parent).exists():
            missing.append(parent)
            parent = posixpath.dirname(parent)
        folders += [f for f in reversed(missing) if f not in folders]
    plan = json.dumps({"id": nonce, "files": [asdict(e) for e in entries],
                       "folders": folders}, indent=1).encode()
    new = _leftover(nonce, tag, NEW)
    try:
        os.mkdir(new, 0o700, dir_fd=root_fd)
        new_fd = os.open(new, DIR_FLAGS, dir_fd=root_fd)
        try:
            for entry in entries:
                if entry.before is not None:
                    _keep(root_fd, new_fd, entry.path)
            _write(MAC, _seal(key, plan), 0o600, new_fd)
            _write(PLAN, plan, 0o600, new_fd)
            os.fsync(new_fd)
        finally:
            os.close(new_fd)
        os.rename(new, JOURNAL, src_dir_fd=root_fd, dst_dir_fd=root_fd)
        os.fsync(root_fd)
    except OSError as err:
        shutil.rmtree(new, ignore_errors=True, dir_fd=root_fd)
        raise JournalError(f"{root}: cannot write there ({err.strerror}: {err.filename}); "
                           "nothing was written") from None
    # the file being written, for the error: not the temporary name beside it
    writing = root
    try:
        for folder in folders:
            writing = root / folder
            with _parent(root_fd, folder) as fd:
                os.mkdir(_base(folder), 0o755, dir_fd=fd)
        for change, entry in zip(changes, entries):
            writing = root / entry.path
            with _parent(root_fd, entry.path) as fd:
                if fd is None:
                    raise JournalError(f"{root / entry.path}: its folder went away")
                _replace_at(fd, entry, change, nonce)
        wrong = [e.path for e in entries if _digest_at(root_fd, e.path) != e.after]
        if wrong:
            raise JournalError(f"{root}: {', '.join(wrong)} not as written")
    except (OSError, JournalError) as err:
        said = f"{err.strerror}: {writing}" if isinstance(err, OSError) else str(err)
        undone = recover(root, key)
        raise JournalError(f"{root}: cannot write there ({said}); {undone}") from None
    _finish(root_fd, JOURNAL, _leftover(nonce, tag, DONE))


def _keep(root_fd: int, journal_fd: int, rel: str) -> None:
    """The file about to be replaced, kept in the journal's orig/: the file
    itself (a hard link), or a copy where no link can be made."""
    with _parent(root_fd, rel) as fd, _parent(journal_fd, f"{ORIG}/{rel}", make=True) as copy_fd:
        assert fd is not None and copy_fd is not None
        name = _base(rel)
        try:
            os.link(name, name, src_dir_fd=fd, dst_dir_fd=copy_fd, follow_symlinks=False)
        except OSError:  # no hard links here (or an immutable file): a copy
            data = _read_at(fd, name)
            if data is None:
                raise FileNotFoundError(2, "gone while kept", rel) from None
            _write(name, data, 0o600, copy_fd)


def _replace_at(fd: int, entry: Entry, change: Change, nonce: str) -> None:
    name, temp = _base(entry.path), _temp_name(entry.path, nonce)
    _write(temp, change.data, entry.mode, fd)
    if os.geteuid() == 0 and entry.before is not None:
        old = os.stat(name, dir_fd=fd, follow_symlinks=False)
        os.chown(temp, old.st_uid, old.st_gid, dir_fd=fd, follow_symlinks=False)
    if change.mtime is not None:
        os.utime(temp, (change.mtime, change.mtime), dir_fd=fd, follow_symlinks=False)
    os.rename(temp, name, src_dir_fd=fd, dst_dir_fd=fd)
    os.fsync(fd)


def _finish(root_fd: int, name: str, closed: str) -> None:
    """The journal renamed to what it now records (done or undone), then removed."""
    os.rename(name, closed, src_dir_fd=root_fd, dst_dir_fd=root_fd)
    os.fsync(root_fd)
    shutil.rmtree(closed, dir_fd=root_fd)


# --------------------------------------------------------------- recover

def recover(root: Path, key: Key) -> str:
    """Roll back what an interrupted commit() left in root; "" when it left
    nothing, else a sentence saying what was done (checksums compared).
    Untrusted, touching nothing, when anything there is not provably this
    user's journal."""
    root = Path(root)
    try:
        return _recover(root, key)
    except OSError as err:
        raise JournalError(f"{root}: cannot look for an interrupted run's journal there "
                           f"({err.strerror}: {err.filename})") from None


def _recover(root: Path, key: Key) -> str:
    with _opened(root) as root_fd:
        leftovers, journal = _found(root, root_fd, key)
        if journal:
            plan, journal_fd = _read_journal(root, root_fd, key)
            try:
                _reachable(root, root_fd, plan)
                _remove(root_fd, leftovers)
                return _roll_back(root, root_fd, plan, journal_fd, key)
            finally:
                os.close(journal_fd)
        _remove(root_fd, leftovers)
    states = {state for _, state in leftovers}
    if DONE in states:
        return ("removed the journal of an interrupted run that had written every file "
                "(checksums compared before it was closed)")
    if UNDONE in states:
        return ("removed the journal of an interrupted run that had been rolled back "
                "(checksums compared before it was closed)")
    if NEW in states:
        return ("removed the journal an interrupted run was still writing: it had "
                "changed no file yet")
    return ""


def _remove(root_fd: int, leftovers: list[tuple[str, str]]) -> None:
    """This user's leftover journal folders, removed (rmtree by descriptors:
    no link in them is followed)."""
    for name, _ in leftovers:
        shutil.rmtree(name, dir_fd=root_fd)


def _reachable(root: Path, root_fd: int, plan: Plan) -> None:
    """Every folder the plan names a file in reached from root without a
    link (or absent), before anything is rolled back."""
    for rel in [e.path for e in plan.files] + list(plan.folders):
        try:
            with _parent(root_fd, rel):
                pass
        except OSError as err:
            raise _untrusted(root, JOURNAL, f"its plan names {rel!r}, which is reached "
                             f"through something that is not a folder ({err.strerror})") \
                from None


def _roll_back(root: Path, root_fd: int, plan: Plan, journal_fd: int, key: Key) -> str:
    restored = removed = 0
    try:
        for entry in reversed(plan.files):
            restored += _restore(root, root_fd, journal_fd, entry)
            removed += _remove_new(root_fd, entry, plan.id)
        for folder in reversed(plan.folders):
            with _parent(root_fd, folder) as fd:
                if fd is None:
                    continue
                try:
                    os.rmdir(_base(folder), dir_fd=fd)
                except FileNotFoundError:
                    pass
                except OSError:
                    pass  # something of someone else's is in it now (or not a folder): it stays
    except OSError as err:
        raise JournalError(f"{root}: cannot roll back an interrupted run ({err.strerror}: "
                           f"{err.filename}); the journal is kept in {root / JOURNAL}: "
                           f"its {PLAN} lists the files, orig/ their old copies") from None
    wrong = [e.path for e in plan.files if _digest_at(root_fd, e.path) != e.before]
    if wrong:
        raise JournalError(f"{root}: rolling back an interrupted run left "
                           f"{', '.join(wrong)} unlike before it; the journal is kept in "
                           f"{root / JOURNAL}")
    _finish(root_fd, JOURNAL, _leftover(plan.id, _tag(key, plan.id), UNDONE))
    return (f"rolled back an interrupted run ({restored} files restored, {removed} removed): "
            f"the {len(plan.files)} files it was writing are as before it (checksums compared)")


def _remove_new(root_fd: int, entry: Entry, nonce: str) -> int:
    """A file the run created, removed (never through a link): 1, else 0."""
    with _parent(root_fd, entry.path) as fd:
        if fd is None:
            return 0
        try:
            os.unlink(_temp_name(entry.path, nonce), dir_fd=fd)
        except FileNotFoundError:
            pass
        if entry.before is not None:
            return 0
        try:
            info = os.stat(_base(entry.path), dir_fd=fd, follow_symlinks=False)
        except FileNotFoundError:
            return 0
        if stat.S_ISDIR(info.st_mode):
            return 0  # not the file the run created: it stays, and the check says so
        os.unlink(_base(entry.path), dir_fd=fd)
        return 1


def _restore(root: Path, root_fd: int, journal_fd: int, entry: Entry) -> int:
    """A file the run replaced, put back from the journal's copy (checked
    against the plan first): 1, else 0 (it was as before)."""
    if entry.before is None or _digest_at(root_fd, entry.path) == entry.before:
        return 0
    copy = root / JOURNAL / ORIG / entry.path
    if _digest_at(journal_fd, f"{ORIG}/{entry.path}") != entry.before:
        raise JournalError(f"{root / entry.path}: cannot be restored: the journal's copy in "
                           f"{copy} is gone or changed; the journal is kept")
    with _parent(root_fd, entry.path) as fd, \
            _parent(journal_fd, f"{ORIG}/{entry.path}") as copy_fd:
        if fd is None or copy_fd is None:
            raise JournalError(f"{root / entry.path}: cannot be restored: its folder is gone; "
                               "the journal is kept")
        os.rename(_base(entry.path), _base(entry.path), src_dir_fd=copy_fd, dst_dir_fd=fd)
        os.fsync(fd)
    return 1
