# SPDX-License-Identifier: GPL-2.0
"""The command line checks every argument before any work: a refused command
exits 2 with the option's name and has downloaded, extracted and written
nothing (no cache, no results folder, the --out folder as it was)."""
import ast
import inspect
import io
import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from taintport import REPO, __version__
from taintport.results import report
from taintport.results.cells import Cell
from taintport.tree import variants

from test_ci import RESULTS
from test_layer import _tree

TAINTPORT = [sys.executable, str(REPO / "tools" / "taintport")]
VERSION = "bookworm-6.1"


def taintport(tmp_path, *args, env=None):
    """taintport with a cache of its own under tmp_path (made by any work) and
    an apt-get on PATH that only notes it was run: a check that came too late
    downloads nothing, and is seen. Its process group ends with the test."""
    fake = tmp_path / "bin" / "apt-get"
    fake.parent.mkdir(exist_ok=True)
    fake.write_text(f'#!/bin/sh\necho "$@" >> {tmp_path / "apt-get-ran"}\nexit 1\n')
    fake.chmod(0o755)
    env = {**{k: v for k, v in os.environ.items() if k != "TAINTPORT_ARTIFACTS_URL"},
           "TAINTPORT_CACHE": str(tmp_path / "cache"),
           "PATH": f"{fake.parent}:{os.environ['PATH']}", **(env or {})}
    proc = subprocess.Popen([*TAINTPORT, *map(str, args)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env,
                            start_new_session=True)
    try:
        out, err = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def refused(proc, tmp_path, *words):
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    for word in words:
        assert word in proc.stderr, proc.stderr
    assert not (tmp_path / "cache").exists(), "work began before the refusal"
    assert not (tmp_path / "apt-get-ran").exists(), "a download began before the refusal"


def listing(folder):
    return sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []


@pytest.mark.parametrize("args, named", [
    (("matrix", "--timeout", "-5"), "--timeout"),
    (("matrix", "--parallel", "0"), "--parallel"),
    (("matrix", "--jobs", "0"), "--jobs"),
    (("matrix", "-j", "many"), "--jobs"),
    (("build", "--version", VERSION, "--variant", "upstream", "--jobs", "0"), "--jobs"),
    (("boot", "--version", VERSION, "--variant", "upstream", "--timeout", "0"), "--timeout"),
    (("bench", "--parallel", "0"), "--parallel"),
])
def test_out_of_range_numbers_are_refused(tmp_path, args, named):
    refused(taintport(tmp_path, *args), tmp_path, f"argument {named}")


@pytest.mark.parametrize("args, said", [
    (("check", "--all-point-releases", "--quilt-dir", "q"), "unrecognized arguments: --quilt-dir"),
    (("check", "--all-point-releases", "-j", "3"), "unrecognized arguments: -j"),
    (("fetch", "--jobs", "3"), "unrecognized arguments: --jobs"),
    (("versions", "--jobs", "3"), "unrecognized arguments: --jobs"),
    (("regen", "--jobs", "3"), "unrecognized arguments: --jobs"),
    (("apply", "--tree", "t", "--jobs", "3"), "unrecognized arguments: --jobs"),
    (("ci", "--versions", VERSION), "ci --versions narrows --local"),
    (("apply", "--version", VERSION, "--variant", "reverted", "--letter", "E"),
     "--letter is for --tree"),
    (("apply", "--version", VERSION, "--variant", "reverted", "--export", "x"),
     "--export is for --tree"),
    (("apply", "--tree", "t", "--quilt-dir", "q"), "--quilt-dir is for --version/--variant"),
    (("apply", "--tree", "t", "--versions-dir", "v"), "--versions-dir is for --version/--variant"),
    (("bench", "--upload-cost", "--versions-dir", "v"), "--versions-dir is for the whole bench"),
    (("ci", "--check", "--local"), "not allowed with argument"),
])
def test_what_a_verb_would_ignore_is_refused(tmp_path, args, said):
    refused(taintport(tmp_path, *args), tmp_path, said)


def test_report_refuses_the_options_its_form_does_not_read(tmp_path):
    run = RESULTS / VERSION
    refused(taintport(tmp_path, "report", "compare", run, run, "--out", tmp_path / "o"),
            tmp_path, "--out is not read by 'report compare'")
    refused(taintport(tmp_path, "report", "kcidb", run, "--quilt-dir", "quilt"),
            tmp_path, "--quilt-dir is not read by 'report kcidb'")
    refused(taintport(tmp_path, "report", run, "--origin", "me"),
            tmp_path, "--origin is not read by 'report render'")
    assert not (tmp_path / "o").exists()


def test_no_prefix_matching(tmp_path):
    """`matrix --version X` once meant `--versions X`."""
    refused(taintport(tmp_path, "matrix", "--version", VERSION), tmp_path,
            "unrecognized arguments: --version")
    refused(taintport(tmp_path, "matrix", "--var", "upstream"), tmp_path,
            "unrecognized arguments: --var")


def test_a_bad_artifacts_url_leaves_no_results_folder(tmp_path):
    before = listing(REPO / "results")
    refused(taintport(tmp_path, "matrix", "--versions", VERSION, "--artifacts-url", "ftp:/x"),
            tmp_path, "--artifacts-url: 'ftp:/x' is not an absolute http(s):// or file:// URL")
    refused(taintport(tmp_path, "matrix", "--versions", VERSION,
                      env={"TAINTPORT_ARTIFACTS_URL": "ftp:/x"}),
            tmp_path, "$TAINTPORT_ARTIFACTS_URL: 'ftp:/x'")
    assert listing(REPO / "results") == before, "a results/<timestamp>/ was made"


def test_a_bad_ccache_switch_is_refused_before_any_work(tmp_path):
    before = listing(REPO / "results")
    for verb in (("matrix", "--versions", VERSION),
                 ("build", "--version", VERSION, "--variant", "upstream")):
        refused(taintport(tmp_path, *verb, env={"TAINTPORT_CCACHE": "yes"}),
                tmp_path, "$TAINTPORT_CCACHE: 'yes' is neither 1")
    assert listing(REPO / "results") == before, "a results/<timestamp>/ was made"


@pytest.mark.parametrize("verb", [
    ("boot", "--version", VERSION, "--variant", "reverted"),
    ("matrix", "--versions", VERSION),
    ("bench",),
])
def test_a_used_out_folder_is_refused_before_downloading(tmp_path, verb):
    used = tmp_path / "used"
    shutil.copytree(RESULTS / VERSION, used)
    before = listing(used)
    refused(taintport(tmp_path, *verb, "--out", used), tmp_path,
            f"--out {used} already holds results")
    assert listing(used) == before


def test_report_of_a_folder_that_is_not_results_says_so(tmp_path):
    (tmp_path / "notes").mkdir()
    proc = taintport(tmp_path, "report", tmp_path / "notes")
    refused(proc, tmp_path, f"{tmp_path / 'notes'}: not a results folder (no matrix.json")
    assert "Errno" not in proc.stderr
    assert listing(tmp_path / "notes") == []
    refused(taintport(tmp_path, "ci", "--annotate", tmp_path / "absent"), tmp_path,
            f"{tmp_path / 'absent'}: no such results folder")


def test_inspect_letter_speaks_of_the_option_not_spatch(tmp_path):
    proc = taintport(tmp_path, "inspect", "--tree", tmp_path, "--letter", "1")
    refused(proc, tmp_path, "argument --letter", "'1'")
    assert "-D" not in proc.stderr


def kernel_tree(root, suffix):
    tree = _tree(root, suffix)
    (tree / "Makefile").write_text("VERSION = 3\nPATCHLEVEL = 10\nSUBLEVEL = 0\n")
    return tree


def test_inspect_exit_codes(tmp_path):
    """1 when a fix the tree can have is not there, 0 when none, 2 on bad input
    (refused before any work: the cache, where spatch's answers go, not made)."""
    not_a_tree = tmp_path / "photos"
    not_a_tree.mkdir()
    refused(taintport(tmp_path, "inspect", "--tree", not_a_tree), tmp_path,
            f"{not_a_tree}: not a kernel source tree (no Makefile and kernel/)")
    missing = taintport(tmp_path, "inspect", "--tree", kernel_tree(tmp_path / "old", ".c"))
    assert missing.returncode == 1, missing.stdout + missing.stderr
    assert re.search(r"^unsigned: +missing", missing.stdout, re.M)
    fixed = taintport(tmp_path, "inspect", "--tree", kernel_tree(tmp_path / "new", ".res"))
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert re.search(r"^unsigned: +present", fixed.stdout, re.M)
    assert re.search(r"^livepatch: +not applicable", fixed.stdout, re.M)


def test_version_names_the_tool_and_its_commit(tmp_path):
    proc = taintport(tmp_path, "--version")
    assert proc.returncode == 0
    commit = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short=12", "HEAD"],
                            capture_output=True, text=True, check=True).stdout.strip()
    assert re.fullmatch(rf"taintport {re.escape(__version__)} \(git {commit}\S*\)\n",
                        proc.stdout), proc.stdout


class Terminal(io.StringIO):
    def isatty(self):
        return True


def coloured_table(monkeypatch, no_color):
    if no_color is None:
        monkeypatch.delenv("NO_COLOR", raising=False)
    else:
        monkeypatch.setenv("NO_COLOR", no_color)
    stream = Terminal()
    report.table([Cell.new(VERSION, variants.named("upstream"), {})], stream)
    return stream.getvalue()


def test_no_color_is_honoured_on_a_terminal(monkeypatch):
    assert "\033[" in coloured_table(monkeypatch, None), "a terminal gets colour"
    assert "\033[" not in coloured_table(monkeypatch, "1")
    assert "\033[" in coloured_table(monkeypatch, ""), "NO_COLOR empty is unset (no-color.org)"


def test_the_command_line_is_thin():
    """Each function of cli/ under 60 lines: the work is the library's."""
    for path in sorted((REPO / "tools" / "lib" / "taintport" / "cli").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = node.end_lineno - node.lineno + 1
                assert length < 60, f"{path.name}: {node.name} is {length} lines"


def test_the_library_never_sees_argparse_nor_a_test_switch():
    """kunit.py's shape: only cli/ parses arguments; the tests' switches
    (tools/tests/provoke.py) live in the tests, not in the library."""
    lib = REPO / "tools" / "lib" / "taintport"
    for path in sorted(lib.rglob("*.py")):
        text = path.read_text()
        if path.parent.name != "cli":
            imported = {alias.name for node in ast.walk(ast.parse(text))
                        if isinstance(node, (ast.Import, ast.ImportFrom))
                        for alias in node.names} | {
                node.module for node in ast.walk(ast.parse(text))
                if isinstance(node, ast.ImportFrom)}
            assert "argparse" not in imported, path
        assert "TAINTPORT_TEST_" not in text, path
    from taintport.run import matrix
    params = set(inspect.signature(matrix.Runner).parameters)
    assert not params & {"fault", "provoke", "provoked"}, params
