# SPDX-License-Identifier: GPL-2.0
"""A results folder on disk: read back within limits, held by one writer, written atomically.

A results folder is input like any other: `report`, `report compare`,
`report merge` and `matrix --resume` read folders that someone's CI job (or a
hand edit, or a crash) left behind. Every file of one is opened here, and
only when it is a regular file (a FIFO would block the reader for ever), no
larger than its limit; matrix.json and cell.json are strict JSON (no NaN or
Infinity, no integer longer than MAX_DIGITS, no nesting deeper than
MAX_DEPTH), checked field by field by schema.py; every path a cell names
stays inside the folder once links are resolved. A refusal is an InputError
naming the file and the field (exit 2).

Writing: what taintport writes, it reads back: the caps above are the
writer's too (fits(); a cell's free text is cut to schema.MAX_STRING). One
run (or `report DIR`) holds a folder at a time (its lock file) and removes
the temp files a killed writer left; a folder that holds results is never
taken for a new run; every file is replaced atomically; a merge is made
beside its --out and renamed into place (replacing()), whole or not at all;
and a write the disk refuses is an OutputError naming the file, with the
file that was there left as it was.
"""
import errno
import fcntl
import json
import math
import os
import re
import shutil
import stat
import threading
from contextlib import ExitStack, contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any, Iterator, Sequence
from urllib.parse import quote

from taintport import atomic
from taintport.cache import UMASK, holding, scratch, sweep, write_atomic
from taintport.errors import InputError, OutputError
from taintport.judge.verdict import Status
from taintport.kernel.boot import Accel
from taintport.results import schema
from taintport.results.cells import Cell, Matrix
from taintport.results.reports import kcidb
from taintport.results.schema import JSON, Reader
from taintport.tree.variants import Variant

LOCK = ".taintport-run.lock"
# The size caps of a results folder, for reading and writing alike: what
# taintport writes, it reads back. matrix.json of the five kernels' 25 cells
# is about 2 MiB; no file (matrix.json, cell.json, a report) is written
# larger than the reader takes (fits()).
MAX_JSON = 64 << 20
# the most of a log (KTAP, console) a report reads, and merge copies: its end
MAX_LOG = 4 << 20
# all the logs index.html shows, shared among its cells (each at most MAX_LOG)
MAX_PAGE_LOGS = 32 << 20
# an integer in a results file is an exit code or a count
MAX_DIGITS = 20
# taintport writes seven levels (the kcidb view's tests[].misc.fixes)
MAX_DEPTH = 32


# -- reading ---------------------------------------------------------------------

def open_regular(path: Path) -> int:
    """A file descriptor of path, when it is a regular file (links followed)."""
    # O_NONBLOCK: opening a FIFO for reading would wait for a writer
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        kind = "a folder" if stat.S_ISDIR(mode) else "a FIFO" if stat.S_ISFIFO(mode) else \
            "a device or socket"
        raise InputError(f"{path}: {kind}, not a regular file")
    return fd


def read_bytes(path: Path, limit: int) -> bytes:
    """The whole of a regular file of at most limit bytes."""
    fd = open_regular(path)
    with os.fdopen(fd, "rb") as handle:
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise InputError(f"{path}: larger than the {limit} bytes taintport reads of it")
    return data


def read_tail(path: Path, limit: int = MAX_LOG) -> bytes:
    """The end of a regular file: at most limit bytes, from a line's start,
    after a line that says how much was left out. The size is st_size, never
    what is on disk: a sparse file of 1 GiB is 1 GiB (and only its end is read)."""
    fd = open_regular(path)
    with os.fdopen(fd, "rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        handle.seek(max(0, size - limit))
        data = handle.read(limit)
    if size <= limit:
        return data
    rest = data.partition(b"\n")[2]
    return f"[taintport: the first {size - len(rest)} bytes of {path.name} left out: " \
        f"taintport keeps the last {limit} bytes of a log]\n".encode() + rest


def read_log(path: Path, limit: int = MAX_LOG) -> str | None:
    """The end of a log the run left (read_tail), or None when the run never wrote it."""
    try:
        return read_tail(path, limit).decode(errors="replace")
    except OSError:
        return None  # never written (or not readable, which a report shows the same way)


def page_log_limit(cells: int) -> int:
    """How much of each log index.html shows: MAX_PAGE_LOGS shared by the
    cells' logs (KTAP, console, build), at most MAX_LOG each."""
    return min(MAX_LOG, MAX_PAGE_LOGS // max(1, 3 * cells))


class Refused(ValueError):
    """A value strict JSON has no place for in a results file."""


def refuse_constant(name: str) -> None:
    raise Refused(name)


def bounded_int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_DIGITS:
        raise Refused(text)
    return int(text)


def finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise Refused(text)
    return value


def parse(path: Path) -> JSON:
    """A results file as JSON, refused (naming the field) when it is not the
    strict JSON taintport writes."""
    try:
        text = read_bytes(path, MAX_JSON).decode()
    except (OSError, UnicodeDecodeError) as err:
        raise InputError(f"{path}: cannot read: {err}") from None
    try:
        doc = json.loads(text, parse_constant=refuse_constant, parse_int=bounded_int,
                         parse_float=finite_float)
    except (Refused, RecursionError):
        # where: the parser says nothing, so the text is walked to the first one
        raise InputError(f"{path}: {locate(text)}") from None
    except json.JSONDecodeError as err:
        raise InputError(f"{path}: cannot read: {err}") from None
    where = unpaired_surrogate(doc)
    if where is not None:
        raise InputError(f"{path}: {where}: a \\u escape of half a UTF-16 surrogate pair, "
                         "not a character (no report could be written with it)")
    return doc


SURROGATE = re.compile("[\ud800-\udfff]")


def unpaired_surrogate(doc: JSON) -> str | None:
    """The field of a string (or key) holding a lone surrogate, which
    json.loads lets through from a \\ud800 escape and no UTF-8 writer accepts."""
    stack: list[tuple[str, JSON]] = [("", doc)]
    while stack:
        at, value = stack.pop()
        if isinstance(value, str) and SURROGATE.search(value):
            return at or "the document"
        items = value.items() if isinstance(value, dict) else \
            enumerate(value) if isinstance(value, list) else ()
        for key, item in items:
            name = f"{at}.{key}".lstrip(".") if isinstance(key, str) else f"{at}[{key}]"
            if isinstance(key, str) and SURROGATE.search(key):
                return f"{name} (its key)".encode(errors="backslashreplace").decode()
            stack.append((name, item))
    return None


TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[{}\[\]:,]|-?(?:Infinity|NaN)|'
                   r'-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?|true|false|null')


def locate(text: str) -> str:
    """The field of the first value parse() refuses, and why: what json.loads
    cannot tell (it raises from the middle of its recursion)."""
    stack: list[list[Any]] = []  # per open container: [key or index, is an object]
    after_colon = False

    def where() -> str:
        path = ""
        for key, is_object in stack:
            if key is None:
                continue
            path += f".{key}" if is_object else f"[{key}]"
        return path.lstrip(".") or "the document"

    for match in TOKEN.finditer(text):
        token = match.group()
        if token in "{[":
            if len(stack) == MAX_DEPTH:
                return f"{where()}: nested deeper than {MAX_DEPTH} levels"
            stack.append([None if token == "{" else 0, token == "{"])
            after_colon = False
        elif token in "}]":
            stack.pop()
        elif token == ",":
            if stack and not stack[-1][1]:
                stack[-1][0] += 1
            after_colon = False
        elif token == ":":
            after_colon = True
        elif token.startswith('"') and stack and stack[-1][1] and not after_colon:
            stack[-1][0] = json.loads(token)
        elif token.lstrip("-") in ("NaN", "Infinity"):
            return f"{where()}: {token} is not a number JSON allows"
        elif re.fullmatch(r"-?\d+", token) and len(token.lstrip("-")) > MAX_DIGITS:
            return f"{where()}: an integer of {len(token.lstrip('-'))} digits (at most " \
                f"{MAX_DIGITS})"
        elif token[0] in "-0123456789" and not math.isfinite(float(token)):
            return f"{where()}: {token[:40]} is too large for a number"
    return "a value strict JSON does not allow"


def inside(folder: Path, rel: str, where: str) -> Path:
    """folder/rel, when it exists and stays inside folder once links are resolved."""
    path = Path(folder) / rel
    if path.exists() or path.is_symlink():
        root = Path(folder).resolve()
        if not path.resolve().is_relative_to(root):
            raise InputError(f"{where}: {rel!r} leads outside the results folder {folder} "
                             f"(to {path.resolve()})")
    return path


def logs_inside(folder: Path, cell: Cell, where: str) -> None:
    """Every file a report reads or links for a cell stays under the results folder."""
    for key, rel in (("logs.build", cell.logs.build), ("logs.console", cell.logs.console),
                     ("logs.console's ktap.txt", cell.logs.ktap)):
        inside(folder, rel, f"{where}.{key}")


def load_matrix(folder: Path | str) -> Matrix:
    """matrix.json of a results folder, checked (and the log files its cells name)."""
    return loaded(folder)[1]


def loaded(folder: Path | str) -> tuple[JSON, Matrix]:
    path = Path(folder) / "matrix.json"
    data = parse(path)
    doc = schema.read_matrix(Reader(path), data)
    for i, cell in enumerate(doc.cells):
        logs_inside(Path(folder), cell, f"{path}: cells[{i}]")
    return data, doc


def load_published(folder: Path | str, given: str | None) -> tuple[Matrix, str | None]:
    """load_matrix, and the base `report DIR` links the folder's files under:
    given (--artifacts-url), else $TAINTPORT_ARTIFACTS_URL (kcidb.artifacts
    reads it), else where the folder was published before (published_at):
    its URLs are kept, never turned into file:// ones."""
    data, doc = loaded(folder)
    if given or os.environ.get(kcidb.ARTIFACTS_ENV):
        return doc, given
    return doc, published_at(Path(folder) / "matrix.json", data, doc.cells)


def published_at(path: Path, data: JSON, cells: Sequence[Cell]) -> str | None:
    """Where the folder was published, as its KCIDB view's build logs say (the
    base their URLs share), when an http(s) URL: `report DIR` keeps it. None
    for a file:// base (where the folder was: report makes it anew) or a view
    that names none."""
    view = data.get("kcidb")
    builds = view.get("builds") if isinstance(view, dict) else None
    logs = {quote(cell.logs.build, safe="/") for cell in cells}
    bases = set()
    for build in builds if isinstance(builds, list) else ():
        url = build.get("log_url") if isinstance(build, dict) else None
        if not isinstance(url, str) or url.count("/") < 2:
            continue
        # base + version/variant/build.log, the base ending in "/" or "#"
        head, variant, name = url.rsplit("/", 2)
        cut = max(head.rfind("/"), head.rfind("#")) + 1
        if f"{head[cut:]}/{variant}/{name}" in logs:
            bases.add(head[:cut])
    if not bases or all(base.startswith("file:") for base in bases):
        return None
    if len(bases) > 1:
        raise InputError(f"{path}: kcidb.builds: log URLs under {len(bases)} different bases, "
                         "not a view taintport wrote; give the one with --artifacts-url")
    base = bases.pop()
    try:
        return kcidb.artifacts(path.parent, base).base
    except InputError as err:
        raise InputError(f"{path}: kcidb.builds[].log_url: {str(err).partition(': ')[2]}") \
            from None


def read_cell(path: Path) -> Cell:
    """One cell.json, checked."""
    return schema.read_cell(Reader(path), parse(path), "cell")


def earlier_cells(folder: Path) -> dict[tuple[str, str], Cell]:
    """{(version, variant): cell} of every cell.json a results folder holds."""
    found = {}
    for path in sorted(Path(folder).glob("*/*/cell.json")):
        cell = read_cell(path)
        if cell.where != (path.parent.parent.name, path.parent.name):
            raise InputError(f"{path}: holds {cell.version} {cell.variant}, "
                             "not the cell its folder names")
        logs_inside(folder, cell, f"{path}: cell")
        found[cell.where] = cell
    return found


# -- holding a folder ---------------------------------------------------------------

def unique_folder(parent: Path, stem: str) -> Path:
    """A new, empty parent/stem (stem-2, stem-3, ... when it is taken)."""
    Path(parent).mkdir(parents=True, exist_ok=True)
    for n in range(1, 1000):
        folder = Path(parent) / (stem if n == 1 else f"{stem}-{n}")
        try:
            folder.mkdir()
            return folder
        except FileExistsError:
            continue
    raise InputError(f"{parent}: no free folder name for {stem}")


def refuse_used(folder: Path) -> None:
    """A new run's folder must hold no results: its matrix.json would replace theirs."""
    if Path(folder).is_dir() and any(entry.name != LOCK for entry in Path(folder).iterdir()):
        raise InputError(f"--out {folder} already holds results; finish that run with "
                         f"'--resume {folder}', or choose an empty or new folder")


@contextmanager
def writing(folder: Path, resume: bool = False) -> Iterator[None]:
    """Hold a results folder for one run; a second run on it is refused at once,
    and so is a folder with results in it unless the run resumes them."""
    if not resume:
        refuse_used(folder)  # before the lock file is written
    try:
        Path(folder).mkdir(parents=True, exist_ok=True)
        handle = open(Path(folder) / LOCK, "a+")
    except OSError as err:
        raise OutputError(f"{folder}: cannot hold the results folder: "
                          f"{err.strerror or err}") from None
    with handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "another run"
            raise InputError(f"{folder}: {holder} is writing this results folder; "
                             "wait for it or choose another --out") from None
        if not resume:
            refuse_used(folder)  # a run that took the lock just before us
        with holding(handle, f"pid {os.getpid()}"):
            atomic.sweep_temps(folder)
            yield


def held_by(lock: Path) -> str | None:
    """Who holds a results folder's lock file now (None: nobody; a run that held it was killed)."""
    try:
        fd = os.open(lock, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    with os.fdopen(fd) as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return handle.read(200).strip() or "another run"
    return None


@contextmanager
def replacing(out: Path) -> Iterator[Path]:
    """report merge's --out, all or nothing: the merge is made in a scratch
    folder beside out (locked while this process lives; what a killed merge
    left there is removed first), which becomes out by one rename when the
    block ends without an error. out must be absent, or empty but for a lock
    nobody holds; a merge killed at any point leaves it as it was."""
    out = Path(out)
    if out.name in ("", ".", ".."):
        raise InputError(f"--out {out}: name the folder itself (the merge is made beside "
                         "it and renamed to its name)")
    if out.is_symlink() or (out.exists() and not out.is_dir()):
        raise InputError(f"--out {out}: not a folder")
    refuse_used(out)
    holder = held_by(out / LOCK)
    if holder:
        raise InputError(f"{out}: {holder} is writing this results folder; "
                         "wait for it or choose another --out")
    prefix = f".{out.name}.taintport-merge-"
    with ExitStack() as stack:
        try:
            sweep(out.parent, prefix)
            folder = stack.enter_context(scratch(out.parent, prefix))
        except OSError as err:
            raise OutputError(f"{out.parent}: cannot make the merge beside --out {out.name}: "
                              f"{err.strerror or err}") from None
        yield folder
        install(folder, out)


def install(folder: Path, out: Path) -> None:
    """folder renamed to out (empty, or only a lock nobody holds), with the mode
    a folder this user makes has."""
    try:
        os.chmod(folder, 0o777 & ~UMASK)
        if out.is_dir():
            if held_by(out / LOCK):
                raise FileExistsError(errno.EEXIST, "held")
            (out / LOCK).unlink(missing_ok=True)
            out.rmdir()
        os.rename(folder, out)
        fd = os.open(out.parent, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError as err:
        if err.errno in (errno.ENOTEMPTY, errno.EEXIST):
            raise InputError(f"--out {out} already holds results: another run or merge "
                             "wrote it meanwhile; this merge is left out") from None
        raise OutputError(f"{out}: cannot put the merge in place: "
                          f"{err.strerror or err}") from None


# -- writing -----------------------------------------------------------------------

def fits(path: Path, text: str) -> None:
    """A results file is never written larger than MAX_JSON, what the reader takes."""
    size = len(text.encode())
    if size > MAX_JSON:
        raise OutputError(f"{path}: would be {size} bytes, more than the {MAX_JSON} "
                          "taintport reads of a results file; nothing written")


def write_text(path: Path, text: str) -> None:
    """path replaced by text at once (fits()), or an OutputError with path as it was."""
    fits(path, text)
    try:
        write_atomic(path, text)
    except OSError as err:
        raise OutputError(f"{path}: cannot write: {err.strerror or err}; the file there "
                          "(if any) is as it was") from None


def write_cell(out: Path, cell: Cell) -> None:
    write_text(Path(out) / cell.version / cell.variant.name / "cell.json",
               json.dumps(schema.write_cell(cell), indent=2) + "\n")


def document(out: Path, doc: Matrix, artifacts_url: str | None = None) -> str:
    """matrix.json's text, with its "kcidb" view computed from the cells; its
    URLs lead where the folder is published (kcidb.artifacts). The view is made
    of the cells as written (schema.fitted): a run's cell of 30 MB of errors
    is no 30 MB in the view."""
    data = schema.write_matrix(doc)
    written = replace(doc, cells=[schema.fitted(cell) for cell in doc.cells])
    data["kcidb"] = kcidb.report(written, kcidb.artifacts(out, artifacts_url))
    return json.dumps(data, indent=2) + "\n"


def write_document(out: Path, doc: Matrix, artifacts_url: str | None = None) -> None:
    write_text(Path(out) / "matrix.json", document(out, doc, artifacts_url))


def copy_logs(dirs: Sequence[Path | str], out: Path) -> None:
    """Copy each source's per-version folders into out, so the cells' log paths
    hold there. Version names were checked when each matrix.json was read;
    links are left out (a job's artifact must not copy the host's files into
    the report), and anything else that is not a file or a folder is refused
    before a file is copied. A .json file is copied whole (at most MAX_JSON,
    as it is read), any other as a log: its last MAX_LOG bytes (read_tail),
    so that a sparse console.log of 1 GiB is no 1 GiB of disk in the copy."""
    plan: list[tuple[Path, Path]] = []
    for folder in dirs:
        for version in sorted({c.version for c in load_matrix(folder).cells}):
            source = Path(folder) / version
            if source.is_dir() and not source.is_symlink():
                plan += files_below(source, Path(out) / version)
    for source, dest in plan:
        try:
            data = read_bytes(source, MAX_JSON) if source.suffix == ".json" else \
                read_tail(source, MAX_LOG)
            dest.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(dest, data)
            shutil.copystat(source, dest)
        except OSError as err:
            raise OutputError(f"{dest}: cannot copy {source}: {err.strerror or err}") from None


def files_below(source: Path, dest: Path) -> list[tuple[Path, Path]]:
    found = []
    for entry in sorted(source.iterdir()):
        mode = entry.lstat().st_mode
        if stat.S_ISLNK(mode):
            continue
        if stat.S_ISDIR(mode):
            found += files_below(entry, dest / entry.name)
        elif stat.S_ISREG(mode):
            found.append((entry, dest / entry.name))
        else:
            raise InputError(f"{entry}: not a regular file, a folder or a link: not a "
                             "result taintport writes")
    return found


class Folder:
    """The results folder of one run: its cells as they finish, in the order
    asked for, and with --resume the cells it already held."""

    def __init__(self, out: Path, started: str, tools: dict[str, str]) -> None:
        self.out = Path(out)
        self.started = started
        self.tools = tools
        self.accelerator: Accel | None = None
        self.earlier: dict[tuple[str, str], Cell] = {}
        self.cells: dict[tuple[str, str], Cell] = {}
        self.order: list[tuple[str, str]] = []
        self.lock = threading.Lock()

    def read_earlier(self) -> None:
        """--resume: the cells the folder holds now (an error names a bad one)."""
        self.earlier = earlier_cells(self.out)

    def finished_earlier(self, version: str, variant: Variant, key: str) -> Cell | None:
        """--resume: a cell this folder already holds, made from the inputs of
        now (errors, and cells whose inputs changed since, are run again)."""
        cell = self.earlier.get((version, variant.name))
        if cell is None or cell.status is Status.ERROR or cell.key != key:
            return None
        cell.resumed = True
        return cell

    def publish(self, cell: Cell) -> None:
        """cell.json and matrix.json, written at once: a stop loses no finished cell."""
        with self.lock:
            self.cells[cell.where] = cell
            write_cell(self.out, cell)
            write_document(self.out, self.matrix())

    def published(self, version: str, variant: Variant) -> Cell | None:
        with self.lock:
            return self.cells.get((version, variant.name))

    def ordered_cells(self) -> list[Cell]:
        """This run's cells in order; with --resume, the folder's other cells stay."""
        ran = [self.cells.get(k) or self.earlier.get(k) for k in self.order]
        kept = [cell for k, cell in sorted(self.earlier.items()) if k not in self.order]
        return [cell for cell in ran if cell] + kept

    def matrix(self) -> Matrix:
        return Matrix(cells=self.ordered_cells(), started=self.started, tools=self.tools,
                      accelerator=self.accelerator)
