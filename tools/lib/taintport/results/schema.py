# SPDX-License-Identifier: GPL-2.0
"""The results files' schema: each field's writer beside its reader.

cell.json and matrix.json are written only by write_* here and read back
only by Reader here, field by field, so a field cannot be written one way
and read another; docs/report-schema.md describes the JSON. A results file is
input like any other (a CI job's artifact, a hand edit, a crash): a value of
the wrong type, a name taintport does not allow, a path that leaves the
folder or a string past MAX_STRING is an InputError naming the file and the
field (exit 2), never a traceback. folder.py reads the files (regular files
only, bounded, strict JSON) and writes them.
"""
import re
from dataclasses import dataclass, fields, replace
from pathlib import Path, PurePosixPath
from typing import Any, Callable, Generic, NoReturn, TypeVar

from taintport import names
from taintport.errors import InputError
from taintport.judge.verdict import Check, FixState, Status
from taintport.kernel.boot import Accel
from taintport.results.cells import (Cell, FAULTS, Inputs, Logs, Matrix, Run, STAGES, Timings,
                                     WORDS, exit_code)
from taintport.tree import variants
from taintport.tree.variants import Variant

# matrix.json's "schema": the one version of this layout
SCHEMA = "taintport-matrix/1"
JSON = Any  # what json.loads gives: checked by Reader before it becomes a value
# one string of a results file (an error, a diagnostic line): the longest
# taintport writes is a log tail of a few KiB. It is also all the free text
# of one cell (errors, panic lines, diagnostics), cut where it passes when a
# cell is written and when it is read: a report copies a cell's text (the
# KCIDB view holds its errors twice), so fifty-five strings of 1 MB each made
# a matrix.json that report rewrote at twice the size the reader takes.
MAX_STRING = 1 << 20
# one quilt patch, group/name.patch, as matrix.inputs records it
PATCH = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]*/[A-Za-z0-9][A-Za-z0-9._+-]*")
# what an older run recorded that this one does not (Inputs.other): a scalar,
# or a list or object of them, never deeper
OTHER_DEPTH = 2


class Budget:
    """What is left of the MAX_STRING characters of free text a cell holds."""
    NOTE = ("\n[taintport: the text of this cell from here on cut: a cell holds at most "
            f"{MAX_STRING} characters of errors, panic lines and diagnostics, cut]")

    def __init__(self) -> None:
        self.left = MAX_STRING

    def take(self, lines: list[str] | tuple[str, ...]) -> list[str]:
        """lines while they fit (a line counts one more, for the list), the one
        that passes the budget cut to end in NOTE, none after it."""
        kept: list[str] = []
        for line in lines:
            if self.left <= 0:
                break
            if len(line) + 1 <= self.left:
                kept.append(line)
                self.left -= len(line) + 1
                continue
            kept.append(line[:max(0, self.left - 1 - len(self.NOTE))] + self.NOTE)
            self.left = 0
        return kept


def fitted(cell: Cell) -> Cell:
    """cell with its free text within MAX_STRING characters in all (errors
    first: a cell that broke keeps why), the cut named where it is."""
    budget = Budget()
    errors, panic = budget.take(cell.errors), budget.take(cell.panic)
    checks = [replace(check, diagnostics=tuple(budget.take(check.diagnostics)))
              for check in cell.checks]
    if budget.left > 0:
        return cell
    return replace(cell, errors=errors, panic=panic, checks=checks)


class Reader:
    """Checks one parsed results file and makes typed values of it; each error
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
        if isinstance(value, str):
            self.bounded(value, where)
        return value

    def bounded(self, text: str, where: str) -> None:
        if len(text) > MAX_STRING:
            raise InputError(f"{self.path}: {where}: a string of {len(text)} characters, "
                             f"more than the {MAX_STRING} a results file may hold")

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
            self.bounded(key, where)
            self.of(item, str, f"{where}.{key}", "a string")
        return dict(value)

    def name(self, check: Callable[[object, str], str], value: JSON, where: str) -> str:
        """A name taintport allows (names.py), or an error naming the field."""
        return check(self.of(value, str, where, "a string"), f"{self.path}: {where}")


T = TypeVar("T")
Read = Callable[[Reader, JSON, str], Any]


@dataclass(frozen=True)
class Field(Generic[T]):
    """One key of an object in a results file: how a value's attribute is
    written there, and read back from it."""
    key: str                   # the key in the file, and the attribute of the value
    write: Callable[[T], JSON]
    read: Read
    absent: Callable[[], Any] | None = None  # the value when the key is left out; None: required
    omit: Callable[[T], bool] | None = None  # written only when this says no
    # made from the other fields (check.matches): read back only to be compared
    # with what they give, which derived says in words
    derived: Callable[[T], str] | None = None


def write_object(value: T, table: tuple[Field[T], ...]) -> dict[str, JSON]:
    return {f.key: f.write(value) for f in table if not (f.omit and f.omit(value))}


def read_object(r: Reader, obj: JSON, where: str, what: str, table: tuple[Field[T], ...],
                make: Callable[..., T]) -> T:
    """make(**the fields read), then each derived field held against what the value gives."""
    r.of(obj, dict, where, what)
    read: dict[str, Any] = {}
    for f in table:
        at = f"{where}.{f.key}" if where else f.key
        if f.key in obj:
            read[f.key] = f.read(r, obj[f.key], at)
        elif f.absent is not None:
            read[f.key] = f.absent()
        else:
            raise InputError(f"{r.path}: {at}: missing")
    made = make(**{f.key: read[f.key] for f in table if f.derived is None})
    for f in table:
        if f.derived is not None and read[f.key] != getattr(made, f.key):
            r.fail(f"{where}.{f.key}" if where else f.key, f.derived(made), obj[f.key])
    return made


def typed(kinds: type | tuple[type, ...], what: str) -> Read:
    """A reader of one JSON type."""
    return lambda r, value, at: r.of(value, kinds, at, what)


# -- a check -----------------------------------------------------------------

def word(allowed: tuple[bool | None, ...]) -> Read:
    """A reader of ok / not ok (/ missing), as WORDS says them."""
    words = {WORDS[v]: v for v in allowed}

    def read(r: Reader, value: JSON, at: str) -> bool | None:
        if r.of(value, str, at, " or ".join(words)) not in words:
            r.fail(at, " or ".join(words), value)
        return words[value]
    return read


def read_directive(r: Reader, value: JSON, at: str) -> str:
    """"SKIP": the agent could not observe the fact (so it is observed missing)."""
    if value != "SKIP":
        r.fail(at, "SKIP, on a check observed missing", value)
    return "SKIP"


def matches_in_words(check: Check) -> str:
    return (f"{str(check.matches).lower()} (observed {WORDS[check.observed]}, expected "
            f"{WORDS[check.expected]})")


CHECK: tuple[Field[Check], ...] = (
    Field("name", lambda c: c.name, typed(str, "a string")),
    Field("expected", lambda c: WORDS[c.expected], word((True, False))),
    Field("observed", lambda c: WORDS[c.observed], word((True, False, None))),
    Field("matches", lambda c: c.matches, typed(bool, "true or false"),
          derived=matches_in_words),
    Field("diagnostics", lambda c: list(c.diagnostics),
          lambda r, value, at: tuple(r.strings(r.of(value, list, at, "a list"), at))),
    Field("directive", lambda c: c.directive, read_directive, absent=str,
          omit=lambda c: not c.directive),
    Field("declared_skip", lambda c: True, typed(bool, "true or false"), absent=bool,
          omit=lambda c: not c.declared_skip),
)


def write_check(check: Check) -> dict[str, JSON]:
    return write_object(check, CHECK)


def read_check(r: Reader, item: JSON, where: str) -> Check:
    check = read_object(r, item, where, "an object", CHECK, Check)
    if check.directive and check.observed is not None:
        r.fail(f"{where}.directive", "SKIP, on a check observed missing", check.directive)
    return check


# -- what decided a cell -------------------------------------------------------

def write_inputs(inputs: Inputs) -> dict[str, JSON]:
    out: dict[str, JSON] = {}
    for f in fields(inputs):
        value = getattr(inputs, f.name)
        if f.name == "other":
            out.update(value)
        elif f.name in ("binaries", "shipped_sha256") and not value:
            continue  # a built variant's inputs (and key) stay as they were
        elif value is not None and (value != "" or f.name in ("package", "package_version")):
            out[f.name] = list(value) if isinstance(value, list) else value
    return out


def keyed_inputs(inputs: Inputs) -> dict[str, JSON]:
    """The part of the inputs a cell's key is hashed from (not the digests of
    what the build made)."""
    return {k: v for k, v in write_inputs(inputs).items()
            if k not in ("sources_sha256", "bzimage_sha256")}


def read_inputs(r: Reader, value: JSON, where: str) -> Inputs | None:
    r.of(value, dict, where, "an object")
    if not value:
        return None
    for key, item in value.items():
        r.of(item, (str, int, dict, list, type(None)), f"{where}.{key}",
             "a string, number, list, object or null")
    series = r.string_map(value.get("series", {}), f"{where}.series")
    for name, digest in series.items():
        if not PATCH.fullmatch(name):
            r.fail(f"{where}.series", "group/name.patch names", name)
        names.check(names.SHA256, digest, f"{r.path}: {where}.series.{name}", "a sha256")

    def text(key: str) -> str:
        return str(r.field(value, key, str, where, "a string", optional=True) or "")

    def sha256(key: str) -> str | None:
        return r.field(value, key, (str, type(None)), where, "a sha256 or null", optional=True)

    def suite(key: str) -> str:
        """A release or suite name, or empty (a run from before they were recorded)."""
        name = text(key)
        return names.check(names.SUITE, name, f"{r.path}: {where}.{key}",
                           "a Debian suite name") if name else ""

    known = {f.name for f in fields(Inputs)} - {"other"}
    other = {k: v for k, v in value.items() if k not in known}
    for key, item in other.items():
        read_shallow(r, item, f"{where}.{key}", OTHER_DEPTH)
    return Inputs(package=r.field(value, "package", str, where, "a string"),
                  package_version=r.field(value, "package_version", str, where, "a string"),
                  release=suite("release"), suite=suite("suite"),
                  deb_sha256=text("deb_sha256"),
                  ships=r.strings(value.get("ships", []), f"{where}.ships"),
                  series=series,
                  fragments=r.string_map(value.get("fragments", {}), f"{where}.fragments"),
                  expectations_sha256=text("expectations_sha256"),
                  test_matrix_sha256=text("test_matrix_sha256"),
                  binaries=read_binaries(r, value.get("binaries", {}), f"{where}.binaries"),
                  shipped_sha256=text("shipped_sha256"),
                  sources_sha256=sha256("sources_sha256"),
                  bzimage_sha256=sha256("bzimage_sha256"),
                  other=other)


def read_shallow(r: Reader, value: JSON, where: str, depth: int) -> None:
    """A value an older run wrote that this one only carries along: no deeper than depth."""
    if isinstance(value, (dict, list)):
        if depth == 0:
            r.fail(where, "a string, number or null at this depth", value)
        items = value.items() if isinstance(value, dict) else enumerate(value)
        for key, item in items:
            read_shallow(r, item, f"{where}.{key}", depth - 1)
    else:
        r.of(value, (str, int, float, bool, type(None)), where, "a string, number or null")


def read_binaries(r: Reader, value: JSON, where: str) -> dict[str, str]:
    """"package=version": sha256 of each .deb of a distribution's binary."""
    pins = r.string_map(value, where)
    for pin, digest in pins.items():
        package, _, version = pin.partition("=")
        names.package(package, f"{r.path}: {where}: {pin!r}")
        names.deb_version(version, f"{r.path}: {where}: {pin!r}")
        names.check(names.SHA256, digest, f"{r.path}: {where}.{pin}", "a sha256")
    return pins


# -- a cell --------------------------------------------------------------------

def write_timings(timings: Timings) -> dict[str, float]:
    return dict(timings.items())


def read_timings(r: Reader, value: JSON, where: str) -> Timings:
    timings = Timings()
    for stage, seconds in r.of(value, dict, where, "an object").items():
        if stage not in STAGES:
            r.fail(f"{where}.{stage}", "a stage: " + ", ".join(STAGES), stage)
        timings.record(stage, r.of(seconds, (int, float), f"{where}.{stage}", "seconds"))
    return timings


def read_fixes(r: Reader, value: JSON, where: str) -> dict[str, FixState]:
    states = [s.value for s in FixState]
    found = {}
    for fix, state in r.string_map(value, where).items():
        if state not in states:
            r.fail(f"{where}.{fix}", "one of " + ", ".join(states), state)
        found[fix] = FixState(state)
    return found


def read_relative(r: Reader, value: str, where: str) -> str:
    path = PurePosixPath(value)
    if not value or path.is_absolute() or ".." in path.parts:
        r.fail(where, "a relative path under the results folder", value)
    return value


def read_logs(r: Reader, value: JSON, where: str) -> Logs:
    r.of(value, dict, where, "an object")
    return Logs(**{key: read_relative(r, r.field(value, key, str, where, "a path"),
                                      f"{where}.{key}") for key in ("build", "console")})


def read_fault(r: Reader, value: JSON, at: str) -> str:
    if r.of(value, str, at, "a string") not in FAULTS:
        r.fail(at, "one of " + ", ".join(FAULTS), value)
    return value


def read_status(r: Reader, value: JSON, at: str) -> Status:
    statuses = [s.value for s in Status]
    if r.of(value, str, at, "a status") not in statuses:
        r.fail(at, "one of " + ", ".join(statuses), value)
    return Status(value)


def read_variant(r: Reader, value: JSON, at: str) -> Variant:
    return variants.named(r.of(value, str, at, "a string"), f"{r.path}: {at}")


def optional(read: Read) -> Read:
    """read, or None for null."""
    return lambda r, value, at: None if value is None else read(r, value, at)


def read_strings(r: Reader, value: JSON, at: str) -> list[str]:
    return r.strings(r.of(value, list, at, "a list"), at)


# A cell as cell.json (and each entry of matrix.json's cells) holds it, in this order.
CELL: tuple[Field[Cell], ...] = (
    Field("version", lambda c: c.version,
          lambda r, value, at: r.name(names.version_name, value, at)),
    Field("variant", lambda c: c.variant.name, read_variant),
    Field("status", lambda c: c.status.value, read_status),
    Field("fixes", lambda c: {fix: state.value for fix, state in c.fixes.items()},
          read_fixes, absent=dict),
    Field("errors", lambda c: list(c.errors), read_strings),
    Field("checks", lambda c: [write_check(check) for check in c.checks],
          lambda r, value, at: [read_check(r, item, f"{at}[{i}]") for i, item in
                                enumerate(r.of(value, list, at, "a list"))]),
    Field("timings", lambda c: write_timings(c.timings), read_timings),
    Field("accelerator", lambda c: c.accelerator, typed((str, type(None)), "a string or null")),
    Field("kernel_release", lambda c: c.kernel_release,
          typed((str, type(None)), "a string or null")),
    Field("kernel_version", lambda c: c.kernel_version, typed(str, "a string"),
          absent=lambda: None, omit=lambda c: not c.kernel_version),
    Field("inputs", lambda c: write_inputs(c.inputs) if c.inputs else {}, read_inputs),
    Field("qemu_exit_code", lambda c: c.qemu_exit_code,
          typed((int, type(None)), "a number or null")),
    Field("logs", lambda c: {"build": c.logs.build, "console": c.logs.console}, read_logs),
    Field("panic", lambda c: list(c.panic), read_strings, absent=list,
          omit=lambda c: not c.panic),
    Field("reused", lambda c: True, typed(bool, "true or false"), absent=bool,
          omit=lambda c: not c.reused),
    Field("resumed", lambda c: True, typed(bool, "true or false"), absent=bool,
          omit=lambda c: not c.resumed),
    Field("reused_from", lambda c: c.reused_from.name if c.reused_from else None,
          optional(read_variant), absent=lambda: None, omit=lambda c: not c.reused_from),
    Field("fault", lambda c: c.fault, read_fault, absent=lambda: None,
          omit=lambda c: not c.fault),
    Field("key", lambda c: c.key, typed(str, "a string"), absent=lambda: None,
          omit=lambda c: not c.key),
)


def write_cell(cell: Cell) -> dict[str, JSON]:
    return write_object(fitted(cell), CELL)


def read_cell(r: Reader, cell: JSON, where: str) -> Cell:
    return fitted(read_object(r, cell, where, "an object (a cell)", CELL, Cell))


# -- a run, and matrix.json -------------------------------------------------------

def write_accelerator(accel: Accel | None) -> dict[str, str] | None:
    return {"name": accel.name, "reason": accel.reason} if accel else None


def read_accelerator(r: Reader, value: JSON, where: str) -> Accel | None:
    if value is None:
        return None
    r.of(value, dict, where, "an object or null")
    return Accel(*(r.field(value, key, str, where, "a string") for key in ("name", "reason")))


def read_tools(r: Reader, value: JSON, at: str) -> dict[str, str]:
    return r.string_map(r.of(value, dict, at, "an object"), at)


# One source run of a merged matrix.json ("runs").
RUN: tuple[Field[Run], ...] = (
    Field("dir", lambda run: run.dir, typed(str, "a string")),
    Field("started", lambda run: run.started, typed((str, type(None)), "a string or null")),
    Field("tools", lambda run: dict(run.tools), read_tools),
    Field("accelerator", lambda run: write_accelerator(run.accelerator), read_accelerator,
          absent=lambda: None),
    Field("exit_code", lambda run: run.exit_code, typed(int, "an exit code")),
    Field("cells", lambda run: list(run.cells), read_strings),
)


def write_run(run: Run) -> dict[str, JSON]:
    return write_object(run, RUN)


def read_run(r: Reader, run: JSON, where: str) -> Run:
    return read_object(r, run, where, "an object (a run)", RUN, Run)


def write_matrix(doc: Matrix) -> dict[str, JSON]:
    """matrix.json without its "kcidb" view (folder.write_document adds it:
    a view made from the cells, which the reader does not read back)."""
    out: dict[str, JSON] = {"schema": doc.schema or SCHEMA}
    if doc.runs:
        out["started"] = doc.started
        out["runs"] = [write_run(run) for run in doc.runs]
    else:
        out.update(started=doc.started, tools=dict(doc.tools))
        if doc.accelerator:
            out["accelerator"] = write_accelerator(doc.accelerator)
    out["exit_code"] = doc.exit_code
    out["cells"] = [write_cell(cell) for cell in doc.cells]
    return out


def read_matrix(r: Reader, doc: JSON) -> Matrix:
    r.of(doc, dict, "the document", "an object (a taintport matrix)")
    cells = [read_cell(r, cell, f"cells[{i}]")
             for i, cell in enumerate(r.field(doc, "cells", list, "", "a list"))]
    # written from the cells: a file whose exit code disagrees was edited
    if r.field(doc, "exit_code", int, "", "an exit code") != exit_code(cells):
        r.fail("exit_code", f"{exit_code(cells)}, as its cells give", doc["exit_code"])
    for key in ("schema", "started"):
        r.field(doc, key, (str, type(None)), "", "a string or null", optional=True)
    return Matrix(cells=cells, started=doc.get("started"),
                  tools=r.string_map(doc.get("tools", {}), "tools"),
                  accelerator=read_accelerator(r, doc.get("accelerator"), "accelerator"),
                  runs=[read_run(r, run, f"runs[{i}]") for i, run in enumerate(
                      r.field(doc, "runs", list, "", "a list", optional=True) or ())],
                  schema=doc.get("schema") or SCHEMA)
