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
from dataclasses import fields
from pathlib import Path, PurePosixPath
from typing import Iterator, NoReturn

from taintport import names
from taintport.cache import holding
from taintport.errors import InputError
from taintport.judge.verdict import Check, FixState, Status
from taintport.kernel.boot import Accel
from taintport.tree import variants
from taintport.results.cells import (Cell, FAULTS, Inputs, JSON, Logs, Matrix, Run, SCHEMA,
                                     STAGES, Timings, WORDS, exit_code)

LOCK = ".taintport-run.lock"
# one quilt patch, group/name.patch, as matrix.inputs records it
PATCH = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]*/[A-Za-z0-9][A-Za-z0-9._+-]*")
# C0 and C1 controls (but tab and newline), and the bidirectional overrides a
# terminal or an editor would obey
UNPRINTABLE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def printable(text: object) -> str:
    """text as it may leave the tool: control characters shown, never obeyed."""
    return UNPRINTABLE.sub(lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100
                           else f"\\u{ord(m.group()):04x}", str(text))


class Reader:
    """Checks one parsed JSON file and makes typed values of it; each error
    names the file and the field."""

    def __init__(self, path: Path | str) -> None:
        self.path = path

    def fail(self, where: str, what: str, value: JSON) -> NoReturn:
        shown = type(value).__name__ if isinstance(value, (dict, list)) else repr(value)
        raise InputError(f"{self.path}: {where}: expected {what}, got {shown[:80]}")

    def of(self, value: JSON, kinds: type | tuple[type, ...], where: str, what: str) -> JSON:
        kinds = kinds if isinstance(kinds, tuple) else (kinds,)
        # bool is an int to Python, never to a results file
        if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
            self.fail(where, what, value)
        return value

    def field(self, obj: dict[str, JSON], key: str, kinds: type | tuple[type, ...],
              where: str, what: str, optional: bool = False) -> JSON:
        at = f"{where}.{key}" if where else key
        if key not in obj:
            if optional:
                return None
            raise InputError(f"{self.path}: {at}: missing")
        return self.of(obj[key], kinds, at, what)

    def strings(self, value: JSON, where: str) -> list[str]:
        for i, item in enumerate(self.of(value, list, where, "a list of strings")):
            self.of(item, str, f"{where}[{i}]", "a string")
        return list(value)

    def string_map(self, value: JSON, where: str) -> dict[str, str]:
        for key, item in self.of(value, dict, where, "an object of strings").items():
            self.of(item, str, f"{where}.{key}", "a string")
        return dict(value)

    def word(self, item: dict[str, JSON], key: str, where: str,
             allowed: tuple[bool | None, ...]) -> bool | None:
        words = {WORDS[v]: v for v in allowed}
        what = " or ".join(words)
        if self.field(item, key, str, where, what) not in words:
            self.fail(f"{where}.{key}", what, item[key])
        return words[item[key]]

    def check(self, item: JSON, where: str) -> Check:
        self.of(item, dict, where, "an object")
        expected = self.word(item, "expected", where, (True, False))
        assert expected is not None  # (True, False) allow no "missing"
        made = Check(name=self.field(item, "name", str, where, "a string"),
                     expected=expected,
                     observed=self.word(item, "observed", where, (True, False, None)),
                     diagnostics=tuple(self.strings(
                         self.field(item, "diagnostics", list, where, "a list"),
                         f"{where}.diagnostics")),
                     directive=self.directive(item, where),
                     declared_skip=bool(self.field(item, "declared_skip", bool, where,
                                                   "true or false", optional=True)))
        if self.field(item, "matches", bool, where, "true or false") != made.matches:
            self.fail(f"{where}.matches", f"{str(made.matches).lower()} (observed "
                      f"{item['observed']}, expected {item['expected']})", item["matches"])
        return made

    def directive(self, item: dict[str, JSON], where: str) -> str:
        """"SKIP" when the agent could not observe the fact, else absent."""
        if "directive" not in item:
            return ""
        if item["directive"] != "SKIP" or item.get("observed") != "missing":
            self.fail(f"{where}.directive", "SKIP, on a check observed missing",
                      item["directive"])
        return "SKIP"

    def inputs(self, value: JSON, where: str) -> Inputs | None:
        self.of(value, dict, where, "an object")
        if not value:
            return None
        for key, item in value.items():
            self.of(item, (str, int, dict, list, type(None)), f"{where}.{key}",
                    "a string, number, list, object or null")
        series = self.string_map(value.get("series", {}), f"{where}.series")
        for name, digest in series.items():
            if not PATCH.fullmatch(name):
                self.fail(f"{where}.series", "group/name.patch names", name)
            names.check(names.SHA256, digest, f"{self.path}: {where}.series.{name}",
                        "a sha256")

        def text(key: str) -> str:
            return str(self.field(value, key, str, where, "a string", optional=True) or "")

        def sha256(key: str) -> str | None:
            return self.field(value, key, (str, type(None)), where, "a sha256 or null",
                              optional=True)

        known = {f.name for f in fields(Inputs)} - {"other"}
        return Inputs(package=self.field(value, "package", str, where, "a string"),
                      package_version=self.field(value, "package_version", str, where,
                                                 "a string"),
                      deb_sha256=text("deb_sha256"),
                      ships=self.strings(value.get("ships", []), f"{where}.ships"),
                      series=series,
                      fragments=self.string_map(value.get("fragments", {}),
                                                f"{where}.fragments"),
                      expectations_sha256=text("expectations_sha256"),
                      test_matrix_sha256=text("test_matrix_sha256"),
                      binaries=self.binaries(value.get("binaries", {}), f"{where}.binaries"),
                      shipped_sha256=text("shipped_sha256"),
                      sources_sha256=sha256("sources_sha256"),
                      bzimage_sha256=sha256("bzimage_sha256"),
                      other={k: v for k, v in value.items() if k not in known})

    def binaries(self, value: JSON, where: str) -> dict[str, str]:
        """"package=version": sha256 of each .deb of a distribution's binary."""
        pins = self.string_map(value, where)
        for pin, digest in pins.items():
            package, _, version = pin.partition("=")
            names.package(package, f"{self.path}: {where}: {pin!r}")
            names.deb_version(version, f"{self.path}: {where}: {pin!r}")
            names.check(names.SHA256, digest, f"{self.path}: {where}.{pin}", "a sha256")
        return pins

    def timings(self, value: JSON, where: str) -> Timings:
        timings = Timings()
        for stage, seconds in self.of(value, dict, where, "an object").items():
            if stage not in STAGES:
                self.fail(f"{where}.{stage}", "a stage: " + ", ".join(STAGES), stage)
            timings.record(stage, self.of(seconds, (int, float), f"{where}.{stage}",
                                          "seconds"))
        return timings

    def fixes(self, value: JSON, where: str) -> dict[str, FixState]:
        states = [s.value for s in FixState]
        found = {}
        for fix, state in self.string_map(value, where).items():
            if state not in states:
                self.fail(f"{where}.{fix}", "one of " + ", ".join(states), state)
            found[fix] = FixState(state)
        return found

    def cell(self, cell: JSON, where: str) -> Cell:
        self.of(cell, dict, where, "an object (a cell)")
        statuses = [s.value for s in Status]
        if self.field(cell, "status", str, where, "a status") not in statuses:
            self.fail(f"{where}.status", "one of " + ", ".join(statuses), cell["status"])
        logs = self.field(cell, "logs", dict, where, "an object")
        paths = {key: self.relative(self.field(logs, key, str, f"{where}.logs", "a path"),
                                    f"{where}.logs.{key}") for key in ("build", "console")}
        reused_from = cell.get("reused_from")
        return Cell(
            version=names.version_name(self.field(cell, "version", str, where, "a string"),
                                       f"{self.path}: {where}.version"),
            variant=variants.named(self.field(cell, "variant", str, where, "a string"),
                                   f"{self.path}: {where}.variant"),
            logs=Logs(**paths),
            status=Status(cell["status"]),
            fixes=self.fixes(cell.get("fixes", {}), f"{where}.fixes"),
            errors=self.strings(self.field(cell, "errors", list, where, "a list"),
                                f"{where}.errors"),
            checks=[self.check(item, f"{where}.checks[{i}]") for i, item in
                    enumerate(self.field(cell, "checks", list, where, "a list"))],
            timings=self.timings(self.field(cell, "timings", dict, where, "an object"),
                                 f"{where}.timings"),
            accelerator=self.field(cell, "accelerator", (str, type(None)), where,
                                   "a string or null"),
            kernel_release=self.field(cell, "kernel_release", (str, type(None)), where,
                                      "a string or null"),
            kernel_version=self.field(cell, "kernel_version", str, where, "a string",
                                      optional=True),
            inputs=self.inputs(self.field(cell, "inputs", dict, where, "an object"),
                               f"{where}.inputs"),
            qemu_exit_code=self.field(cell, "qemu_exit_code", (int, type(None)), where,
                                      "a number or null"),
            panic=self.strings(cell["panic"], f"{where}.panic") if "panic" in cell else [],
            key=self.field(cell, "key", str, where, "a string", optional=True),
            reused=bool(self.field(cell, "reused", bool, where, "true or false",
                                   optional=True)),
            fault=self.fault(cell, where),
            resumed=bool(self.field(cell, "resumed", bool, where, "true or false",
                                    optional=True)),
            reused_from=None if reused_from is None else
            variants.named(reused_from, f"{self.path}: {where}.reused_from"))

    def fault(self, cell: dict[str, JSON], where: str) -> str | None:
        fault = self.field(cell, "fault", str, where, "a string", optional=True)
        if fault is not None and fault not in FAULTS:
            self.fail(f"{where}.fault", "one of " + ", ".join(FAULTS), fault)
        return fault

    def relative(self, value: str, where: str) -> str:
        path = PurePosixPath(value)
        if not value or path.is_absolute() or ".." in path.parts:
            self.fail(where, "a relative path under the results folder", value)
        return value

    def run(self, run: JSON, where: str) -> Run:
        self.of(run, dict, where, "an object (a run)")
        return Run(dir=self.field(run, "dir", str, where, "a string"),
                   started=self.field(run, "started", (str, type(None)), where,
                                      "a string or null"),
                   tools=self.string_map(self.field(run, "tools", dict, where, "an object"),
                                         f"{where}.tools"),
                   accelerator=self.accelerator(run.get("accelerator"),
                                                f"{where}.accelerator"),
                   exit_code=self.field(run, "exit_code", int, where, "an exit code"),
                   cells=self.strings(self.field(run, "cells", list, where, "a list"),
                                      f"{where}.cells"))

    def accelerator(self, value: JSON, where: str) -> Accel | None:
        if value is None:
            return None
        self.of(value, dict, where, "an object or null")
        return Accel(*(self.field(value, key, str, where, "a string")
                             for key in ("name", "reason")))

    def matrix(self, doc: JSON) -> Matrix:
        self.of(doc, dict, "the document", "an object (a taintport matrix)")
        cells = [self.cell(cell, f"cells[{i}]")
                 for i, cell in enumerate(self.field(doc, "cells", list, "", "a list"))]
        if self.field(doc, "exit_code", int, "", "an exit code") != exit_code(cells):
            self.fail("exit_code", f"{exit_code(cells)}, as its cells give",
                      doc["exit_code"])
        for key in ("schema", "started"):
            self.field(doc, key, (str, type(None)), "", "a string or null", optional=True)
        return Matrix(cells=cells, started=doc.get("started"),
                      tools=self.string_map(doc.get("tools", {}), "tools"),
                      accelerator=self.accelerator(doc.get("accelerator"), "accelerator"),
                      runs=[self.run(run, f"runs[{i}]") for i, run in enumerate(
                          self.field(doc, "runs", list, "", "a list", optional=True) or ())],
                      schema=doc.get("schema") or SCHEMA)


def parse(path: Path) -> JSON:
    try:
        return json.loads(Path(path).read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise InputError(f"{path}: cannot read: {err}") from None


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
    path = Path(folder) / "matrix.json"
    doc = Reader(path).matrix(parse(path))
    for i, cell in enumerate(doc.cells):
        logs_inside(Path(folder), cell, f"{path}: cells[{i}]")
    return doc


def read_cell(path: Path) -> Cell:
    """One cell.json, checked."""
    return Reader(path).cell(parse(path), "cell")


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
