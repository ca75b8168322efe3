# SPDX-License-Identifier: GPL-2.0
"""Every reader of untrusted input, fed arbitrary and adversarial bytes.

Property: whatever a results file (matrix.json, cell.json), a console's
KTAP, a tree's Makefile, a quilt series or a version descriptor holds, its
reader gives a value or a named error (InputError, exit 2), within a time
bound, never a traceback; and what the results reader accepts, the writer
writes back within the caps and the reader reads again.

The default run is fixed (derandomize) and takes seconds: EXAMPLES inputs per
property. By hand, longer and random:
    TAINTPORT_FUZZ_EXAMPLES=20000 /usr/bin/python3 -m pytest -q tools/tests/test_fuzz_readers.py
docs/faults.md ("Results folders", "Inputs") maps each case here.
"""
import json
import os
import tempfile
import tomllib
from datetime import timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from taintport.errors import InputError
from taintport.judge import ktap, verdict
from taintport.layer import carry, sources
from taintport.results import folder, render, schema
from taintport.results.cells import Matrix
from taintport.tree import versions

from test_carry import lacking_both, snapshot, taintport

REPO = Path(__file__).resolve().parents[2]
RESULTS = Path(__file__).parent / "data" / "results"
EXAMPLES = int(os.environ.get("TAINTPORT_FUZZ_EXAMPLES", "150"))
FUZZ = settings(max_examples=EXAMPLES, derandomize="TAINTPORT_FUZZ_EXAMPLES" not in os.environ,
                # the bound on one input: a reader that hangs (a FIFO, a quadratic
                # walk) passes it; a machine under load (2 s become 10) does not
                database=None, deadline=timedelta(seconds=60),
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.function_scoped_fixture])

SCALARS = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False),
                    st.text(max_size=40))
JSON_VALUES = st.recursive(SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=12), inner, max_size=4)),
    max_leaves=20)


def base_matrix() -> dict:
    """matrix.json of two real cells (the fixture's), as the writer makes it."""
    doc = folder.load_matrix(RESULTS / "bookworm-6.1")
    return schema.write_matrix(Matrix(cells=doc.cells[:2], started=doc.started,
                                      tools=doc.tools, accelerator=doc.accelerator))


BASE = base_matrix()


def paths_in(value, at=()):
    """Every path to a value inside a JSON document."""
    yield at
    items = value.items() if isinstance(value, dict) else \
        enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        yield from paths_in(item, (*at, key))


PATHS = list(paths_in(BASE))


def edited(doc, path, value, drop):
    """A deep copy of doc with the value at path replaced (or dropped)."""
    doc = json.loads(json.dumps(doc))
    if not path:
        return value
    parent = doc
    for key in path[:-1]:
        parent = parent[key]
    if drop and isinstance(parent, dict):
        del parent[path[-1]]
    else:
        parent[path[-1]] = value
    return doc


def text_of(cell) -> int:
    return sum(len(line) + 1 for line in [*cell.errors, *cell.panic, *(
        d for check in cell.checks for d in check.diagnostics)])


def read_back(run: Path) -> None:
    """What the reader accepts, the writer writes within the caps (with every
    report) and reads again."""
    try:
        doc = folder.load_matrix(run)
    except InputError:
        return
    assert all(text_of(cell) <= schema.MAX_STRING for cell in doc.cells)
    out = run / "again"
    render.publish(out, doc, with_document=True)
    assert len(folder.load_matrix(out).cells) == len(doc.cells)
    for cell in doc.cells:
        folder.write_cell(out, cell)
        assert folder.read_cell(out / cell.version / cell.variant.name / "cell.json") \
            .where == cell.where


@pytest.fixture(scope="module")
def run_dir():
    with tempfile.TemporaryDirectory(prefix="taintport-fuzz-") as name:
        yield Path(name)


# -- matrix.json and cell.json ------------------------------------------------

@FUZZ
@given(data=st.binary(max_size=2000))
@example(data=b'{"cells": [], "exit_code": 0, "x": "\\ud800"}')
@example(data=b"[" * 200_000)
@example(data=b'{"cells": [], "exit_code": ' + b"9" * 5000 + b"}")
@example(data=b'{"cells": [], "exit_code": 0, "started": 1e999}')
@example(data=b"\xff\xfe{}")
def test_any_bytes_as_matrix_json_are_a_matrix_or_an_input_error(run_dir, data):
    (run_dir / "matrix.json").write_bytes(data)
    read_back(run_dir)


@FUZZ
@given(value=JSON_VALUES)
def test_any_json_as_matrix_json_is_a_matrix_or_an_input_error(run_dir, value):
    (run_dir / "matrix.json").write_text(json.dumps(value))
    read_back(run_dir)


@FUZZ
@given(path=st.sampled_from(PATHS), value=JSON_VALUES, drop=st.booleans())
@example(path=("cells", 0, "errors"), value=["\ud800"], drop=False)
@example(path=("cells", 0, "version"), value="b" * 5000, drop=False)
@example(path=("cells", 0, "logs", "console"), value="/etc/passwd", drop=False)
@example(path=("cells", 0, "errors"), value=["e" * 1_000_000] * 3, drop=False)
@example(path=("cells", 1, "checks", 0, "diagnostics"), value=[], drop=False)  # found so
def test_a_real_matrix_edited_anywhere_is_read_or_refused(run_dir, path, value, drop):
    """The fixture's cells with one value replaced or dropped: every field's reader."""
    (run_dir / "matrix.json").write_text(json.dumps(edited(BASE, path, value, drop)))
    read_back(run_dir)


@FUZZ
@given(path=st.sampled_from([p[2:] for p in PATHS if p[:2] == ("cells", 0)]),
       value=JSON_VALUES, drop=st.booleans())
def test_a_real_cell_json_edited_anywhere_is_read_or_refused(run_dir, path, value, drop):
    cell = run_dir / "cell.json"
    cell.write_text(json.dumps(edited(BASE["cells"][0], path, value, drop)))
    try:
        read = folder.read_cell(cell)
    except InputError:
        return
    folder.write_cell(run_dir / "out", read)
    assert folder.read_cell(run_dir / "out" / read.version / read.variant.name /
                            "cell.json") is not None


# -- KTAP on a console ----------------------------------------------------------

KTAP_LINES = st.sampled_from([
    "KTAP version 1", "    KTAP version 1", "1..2", "    1..2", "1..0", "    1..99999999999",
    "# Subtest: signed", "    # Subtest: signed", "    # Subtest: unsigned",
    "    ok 1 loads", "    not ok 2 events_present", "    ok 1 loads # skip no tracefs",
    "    ok 1 loads # SKIP", "    ok 3 loads #", "ok 1 signed", "not ok 2 unsigned",
    "ok 1 signed # SKIP", "    # signed: observed", "# error: it broke",
    "# taintport-agent: end status=0", "# taintport-agent: end status=99999999999999999999",
    "Kernel panic - not syncing: x", "taintport-agent: refusing to run", "[    1.2] noise\r",
    "        ok 1 deeper", "    ok 0 zero", "    ok 18446744073709551617 big",
])


@FUZZ
@given(lines=st.lists(st.one_of(KTAP_LINES, st.text(max_size=30)), max_size=60),
       prefix=st.sampled_from(["", "[    0.5] ", "\x1b[0m"]))
@example(lines=["KTAP version 1", "    " * 10_000 + "ok 1 x"], prefix="")
def test_any_console_parses_to_results_or_errors(lines, prefix):
    parsed = ktap.parse("\n".join(prefix + line for line in lines))
    assert all(isinstance(error, str) for error in parsed.errors)
    judged = verdict.judge(parsed, {"signed.loads": True, "signed.events_present": True})
    assert judged.status in verdict.Status
    if parsed.errors:
        assert judged.status is verdict.Status.ERROR


@FUZZ
@given(text=st.text(max_size=3000))
def test_any_text_as_a_console_parses(text):
    ktap.parse(text)


# -- a tree's Makefile -----------------------------------------------------------

MAKEFILE_LINES = st.one_of(
    st.builds(lambda key, digits: f"{key} = {digits}",
              st.sampled_from(["VERSION", "PATCHLEVEL", "SUBLEVEL"]),
              st.text(alphabet="0123456789", min_size=1, max_size=6000)),
    st.text(max_size=40))


@FUZZ
@given(lines=st.lists(MAKEFILE_LINES, max_size=6), raw=st.binary(max_size=200))
@example(lines=["VERSION = " + "5" * 5000, "PATCHLEVEL = 1"], raw=b"")
@example(lines=["VERSION = 6", "PATCHLEVEL = 1" + "0" * 4300], raw=b"")
def test_any_makefile_gives_a_version_none_or_an_input_error(run_dir, lines, raw):
    (run_dir / "Makefile").write_bytes("\n".join(lines).encode() + b"\n" + raw)
    try:
        version = sources.kernel_version(run_dir)
    except InputError as err:
        assert "digits is not a kernel's version" in str(err)
        return
    assert version is None or all(0 <= n < 1000 for n in version)


def test_a_makefile_that_is_a_fifo_is_not_waited_on(tmp_path):
    os.mkfifo(tmp_path / "Makefile")
    assert sources.kernel_version(tmp_path) is None


@pytest.mark.parametrize("export", [False, True])
def test_a_version_of_5000_digits_in_a_trees_makefile_is_named(tmp_path, export):
    """apply and --export ended in a traceback (int() of 5,000 digits)."""
    tree = lacking_both(tmp_path / "t")
    (tree / "Makefile").write_text("VERSION = " + "6" * 5000 + "\nPATCHLEVEL = 1\n")
    before = snapshot(tree)
    out = tmp_path / "patches"
    proc = taintport("apply", "--tree", tree, *(["--export", out] if export else []))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert f"{tree}/Makefile: VERSION = a number of 5000 digits is not a kernel's version" \
        in proc.stderr
    assert snapshot(tree) == before and not out.exists()


# -- patches/series ---------------------------------------------------------------

@FUZZ
@given(text=st.text(max_size=500))
@example(text="a.patch -p1 # comment\n#x\n\n  b.patch\r\n\x00\n" + "c" * 5000)
def test_any_series_gives_names_without_space_or_comment(text):
    names = carry.series_names(text)
    assert all(name and not any(c.isspace() for c in name) and "#" not in name
               for name in names)
    grown = carry.series_after(text, ["taintport/0001-x.patch"])
    assert grown.startswith(text) and "taintport/0001-x.patch" in carry.series_names(grown)


# -- version descriptors ------------------------------------------------------------

DESCRIPTOR = REPO / "versions" / "bookworm-6.1.toml"
TOML_VALUES = st.recursive(
    st.one_of(st.booleans(), st.integers(), st.text(max_size=40)),
    lambda inner: st.lists(inner, max_size=3), max_leaves=8)


def toml_value(value) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    return json.dumps(value)  # a JSON string or integer is a TOML one


@FUZZ
@given(key=st.sampled_from(sorted(tomllib.loads(DESCRIPTOR.read_text()))), value=TOML_VALUES,
       raw=st.binary(max_size=300))
@example(key="name", value="../x", raw=b"")
@example(key="version", value="1" * 5000, raw=b"")
def test_any_descriptor_is_a_version_or_an_input_error(run_dir, key, value, raw):
    lines = [line for line in DESCRIPTOR.read_text().splitlines()
             if not line.startswith(f"{key} =")]
    path = run_dir / "bookworm-6.1.toml"
    for text in (f"{key} = {toml_value(value)}\n" + "\n".join(lines) + "\n",
                 raw.decode(errors="replace")):
        path.write_text(text)
        try:
            versions.load(path)
        except InputError:
            pass
