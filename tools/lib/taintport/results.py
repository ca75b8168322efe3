"""Results folders read back: the one validating reader, the folder's lock, clean text.

A results folder is input like any other: `report`, `report compare`,
`report merge` and `matrix --resume` read folders that someone's CI job (or
a hand edit, or a crash) left behind. Every matrix.json and cell.json is
read here and checked field by field before anything uses it: names are the
names taintport allows, paths are relative names that stay under the
folder after links are resolved, and a wrong type is an InputError naming
the file and the field (exit 2), never a traceback.
"""
import fcntl
import json
import os
import re
from contextlib import contextmanager
from pathlib import Path, PurePosixPath

from . import names
from .cache import holding
from .errors import InputError
from .verdict import Status

LOCK = ".taintport-run.lock"
WORDS = ("ok", "not ok")
# one quilt patch, group/name.patch, as matrix.inputs records it
PATCH = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]*/[A-Za-z0-9][A-Za-z0-9._+-]*")
# C0 and C1 controls (but tab and newline), and the bidirectional overrides a
# terminal or an editor would obey
UNPRINTABLE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def printable(text):
    """text as it may leave the tool: control characters shown, never obeyed."""
    return UNPRINTABLE.sub(lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100
                           else f"\\u{ord(m.group()):04x}", str(text))


class Reader:
    """Checks one parsed JSON file; each error names the file and the field."""

    def __init__(self, path):
        self.path = path

    def fail(self, where, what, value):
        shown = type(value).__name__ if isinstance(value, (dict, list)) else repr(value)
        raise InputError(f"{self.path}: {where}: expected {what}, got {shown[:80]}")

    def of(self, value, kinds, where, what):
        kinds = kinds if isinstance(kinds, tuple) else (kinds,)
        # bool is an int to Python, never to a results file
        if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
            self.fail(where, what, value)
        return value

    def field(self, obj, key, kinds, where, what, optional=False):
        at = f"{where}.{key}" if where else key
        if key not in obj:
            if optional:
                return None
            raise InputError(f"{self.path}: {at}: missing")
        return self.of(obj[key], kinds, at, what)

    def strings(self, value, where):
        for i, item in enumerate(self.of(value, list, where, "a list of strings")):
            self.of(item, str, f"{where}[{i}]", "a string")
        return value

    def string_map(self, value, where):
        for key, item in self.of(value, dict, where, "an object of strings").items():
            self.of(item, str, f"{where}.{key}", "a string")
        return value

    def name(self, check, value, where):
        return check(value, f"{self.path}: {where}")

    def check(self, item, where):
        self.of(item, dict, where, "an object")
        self.field(item, "name", str, where, "a string")
        if self.field(item, "expected", str, where, "ok or not ok") not in WORDS:
            self.fail(f"{where}.expected", "ok or not ok", item["expected"])
        if self.field(item, "observed", str, where, "ok, not ok or missing") not in \
                (*WORDS, "missing"):
            self.fail(f"{where}.observed", "ok, not ok or missing", item["observed"])
        self.field(item, "matches", bool, where, "true or false")
        self.strings(self.field(item, "diagnostics", list, where, "a list"),
                     f"{where}.diagnostics")
        self.field(item, "directive", str, where, "a string", optional=True)

    def inputs(self, value, where):
        self.of(value, dict, where, "an object")
        if value:
            for key in ("package", "package_version"):
                self.field(value, key, str, where, "a string")
        for key, item in value.items():
            self.of(item, (str, int, dict, list, type(None)), f"{where}.{key}",
                    "a string, number, list, object or null")
        self.strings(value.get("ships", []), f"{where}.ships")
        for name, digest in self.string_map(value.get("series", {}), f"{where}.series").items():
            if not PATCH.fullmatch(name):
                self.fail(f"{where}.series", "group/name.patch names", name)
            names.check(names.SHA256, digest, f"{self.path}: {where}.series.{name}",
                        "a sha256")
        self.string_map(value.get("fragments", {}), f"{where}.fragments")

    def cell(self, cell, where):
        self.of(cell, dict, where, "an object (a cell)")
        self.name(names.version_name, self.field(cell, "version", str, where, "a string"),
                  f"{where}.version")
        self.name(names.variant, self.field(cell, "variant", str, where, "a string"),
                  f"{where}.variant")
        statuses = [s.value for s in Status]
        if self.field(cell, "status", str, where, "a status") not in statuses:
            self.fail(f"{where}.status", "one of " + ", ".join(statuses), cell["status"])
        self.strings(self.field(cell, "errors", list, where, "a list"), f"{where}.errors")
        for i, item in enumerate(self.field(cell, "checks", list, where, "a list")):
            self.check(item, f"{where}.checks[{i}]")
        for stage, seconds in self.field(cell, "timings", dict, where, "an object").items():
            self.of(seconds, (int, float), f"{where}.timings.{stage}", "seconds")
        self.field(cell, "accelerator", (str, type(None)), where, "a string or null")
        self.field(cell, "kernel_release", (str, type(None)), where, "a string or null")
        self.field(cell, "qemu_exit_code", (int, type(None)), where, "a number or null")
        self.inputs(self.field(cell, "inputs", dict, where, "an object"), f"{where}.inputs")
        logs = self.field(cell, "logs", dict, where, "an object")
        for key in ("build", "console"):
            self.relative(self.field(logs, key, str, f"{where}.logs", "a path"),
                          f"{where}.logs.{key}")
        if "panic" in cell:
            self.strings(cell["panic"], f"{where}.panic")
        for flag in ("reused", "resumed"):
            self.field(cell, flag, bool, where, "true or false", optional=True)
        self.string_map(cell.get("fixes", {}), f"{where}.fixes")
        if "reused_from" in cell:
            self.name(names.variant, cell["reused_from"], f"{where}.reused_from")
        self.field(cell, "key", str, where, "a string", optional=True)
        return cell

    def relative(self, value, where):
        path = PurePosixPath(value)
        if not value or path.is_absolute() or ".." in path.parts:
            self.fail(where, "a relative path under the results folder", value)
        return value

    def run(self, run, where):
        self.of(run, dict, where, "an object (a run)")
        self.field(run, "dir", str, where, "a string")
        self.field(run, "started", (str, type(None)), where, "a string or null")
        self.string_map(self.field(run, "tools", dict, where, "an object"), f"{where}.tools")
        self.accelerator(run.get("accelerator"), f"{where}.accelerator")
        self.field(run, "exit_code", int, where, "an exit code")
        self.strings(self.field(run, "cells", list, where, "a list"), f"{where}.cells")

    def accelerator(self, value, where):
        if value is not None:
            self.of(value, dict, where, "an object or null")
            for key in ("name", "reason"):
                self.field(value, key, str, where, "a string")

    def matrix(self, doc):
        self.of(doc, dict, "the document", "an object (a taintport matrix)")
        for i, cell in enumerate(self.field(doc, "cells", list, "", "a list")):
            self.cell(cell, f"cells[{i}]")
        if self.field(doc, "exit_code", int, "", "an exit code") not in (0, 1, 2):
            self.fail("exit_code", "0, 1 or 2", doc["exit_code"])
        for key in ("schema", "started"):
            self.field(doc, key, (str, type(None)), "", "a string or null",
                       optional=True)
        if "tools" in doc:
            self.string_map(doc["tools"], "tools")
        self.accelerator(doc.get("accelerator"), "accelerator")
        for i, run in enumerate(self.field(doc, "runs", list, "", "a list",
                                           optional=True) or ()):
            self.run(run, f"runs[{i}]")
        return doc


def parse(path):
    try:
        return json.loads(Path(path).read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise InputError(f"{path}: cannot read: {err}") from None


def inside(folder, rel, where):
    """folder/rel, when it exists and stays inside folder once links are resolved."""
    path = Path(folder) / rel
    if path.exists() or path.is_symlink():
        root = Path(folder).resolve()
        if not path.resolve().is_relative_to(root):
            raise InputError(f"{where}: {rel!r} leads outside the results folder {folder} "
                             f"(to {path.resolve()})")
    return path


def logs_inside(folder, cell, where):
    """Every file a report reads or links for a cell stays under the results folder."""
    console = PurePosixPath(cell["logs"]["console"])
    for key, rel in (("logs.build", cell["logs"]["build"]),
                     ("logs.console", str(console)),
                     ("logs.console's ktap.txt", str(console.parent / "ktap.txt"))):
        inside(folder, rel, f"{where}.{key}")


def load_matrix(folder):
    """matrix.json of a results folder, checked (and the log files its cells name)."""
    path = Path(folder) / "matrix.json"
    doc = Reader(path).matrix(parse(path))
    for i, cell in enumerate(doc["cells"]):
        logs_inside(folder, cell, f"{path}: cells[{i}]")
    return doc


def read_cell(path):
    """One cell.json, checked."""
    return Reader(path).cell(parse(path), "cell")


def earlier_cells(folder):
    """{(version, variant): cell} of every cell.json a results folder holds."""
    found = {}
    for path in sorted(Path(folder).glob("*/*/cell.json")):
        cell = read_cell(path)
        if (cell["version"], cell["variant"]) != (path.parent.parent.name, path.parent.name):
            raise InputError(f"{path}: holds {cell['version']} {cell['variant']}, "
                             "not the cell its folder names")
        logs_inside(folder, cell, f"{path}: cell")
        found[(cell["version"], cell["variant"])] = cell
    return found


def unique_folder(parent, stem):
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


def refuse_used(folder):
    """A new run's folder must hold no results: its matrix.json would replace theirs."""
    if Path(folder).is_dir() and any(entry.name != LOCK for entry in Path(folder).iterdir()):
        raise InputError(f"--out {folder} already holds results; finish that run with "
                         f"'--resume {folder}', or choose an empty or new folder")


@contextmanager
def writing(folder, resume=False):
    """Hold a results folder for one run; a second run on it is refused at once,
    and so is a folder with results in it unless the run resumes them."""
    if not resume:
        refuse_used(folder)  # before the lock file is written
    Path(folder).mkdir(parents=True, exist_ok=True)
    with open(Path(folder) / LOCK, "a+") as handle:
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
            yield
