"""No code names a fix: a fix is its folder, semantic-patches/<fix>/.

What counts as naming a fix, in the code the engine and the guest run
(every Python file under tools/lib, every C file and header git tracks under
test-matrix/agent):
  - a string literal whose whole value is a fix's name ("test", "livepatch"),
    a docstring or message that merely uses the word is not one;
  - the taint identifier a fix's record names (`taint`: TAINT_TEST, ...),
    as a whole word anywhere in the code, strings included; comments are
    not code and are not read.
Everything else a fix needs (its pieces, layouts, reasons, the guest's load
modes and checks) is read from its record or generated from it.
"""
import ast
import io
import re
import subprocess
import tokenize
from pathlib import Path

import pytest

from taintport import REPO, family

LIB = REPO / "tools" / "lib"
AGENT = REPO / "test-matrix" / "agent"
NAMES = frozenset(family.NAMES)
TAINTS = frozenset(info.taint for info in family.FAMILY)
# a C comment, or a string or character literal (kept: it is code)
C_LEXEME = re.compile(r'/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.S)


def _taint_word(taints):
    return re.compile(r"\b(" + "|".join(map(re.escape, sorted(taints))) + r")\b")


def python_naming(text, names=NAMES, taints=TAINTS):
    """(line, what) of each place a Python source names one of the fixes."""
    taint_word = _taint_word(taints)
    found = []
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type == tokenize.STRING:
            try:
                value = ast.literal_eval(tok.string)
            except (ValueError, SyntaxError):  # an f-string part
                value = None
            if value in names:
                found.append((tok.start[0], tok.string))
        if tok.type in (tokenize.STRING, tokenize.NAME):
            found += [(tok.start[0], m.group(0)) for m in taint_word.finditer(tok.string)]
    return found


def c_naming(text, names=NAMES, taints=TAINTS):
    """(line, what) of each place a C source names one of the fixes, comments
    left out."""
    found = []
    code = C_LEXEME.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0))
                        if m.group(0).startswith("/") else m.group(0), text)
    for m in re.finditer(r'"((?:\\.|[^"\\\n])*)"', code):
        if m.group(1) in names:
            found.append((code.count("\n", 0, m.start()) + 1, m.group(0)))
    found += [(code.count("\n", 0, m.start()) + 1, m.group(0))
              for m in _taint_word(taints).finditer(code)]
    return found


def _tracked(folder: Path, *patterns: str) -> list[Path]:
    out = subprocess.run(["git", "ls-files", "-z", "--", *patterns], cwd=folder,
                         capture_output=True, text=True, check=True).stdout
    return [folder / name for name in out.split("\0") if name]


def _report(paths, reader):
    return [f"{path.relative_to(REPO)}:{line}: {what}" for path in paths
            for line, what in reader(path.read_text())]


def test_the_family_has_names_and_taints_to_look_for():
    assert len(NAMES) == len(TAINTS) == len(family.FAMILY) >= 2


# the examples' family: the three fixes of the allow-list
EXAMPLE = (frozenset({"unsigned", "test", "livepatch"}),
           frozenset({"TAINT_UNSIGNED_MODULE", "TAINT_TEST", "TAINT_LIVEPATCH"}))


def test_no_python_under_tools_lib_names_a_fix():
    assert _report(sorted(LIB.rglob("*.py")), python_naming) == []


def test_no_c_of_the_agent_names_a_fix():
    assert _report(_tracked(AGENT, "*.c", "*.h"), c_naming) == []


@pytest.mark.parametrize("source,named", [
    ('kind = "livepatch"\n', ['"livepatch"']),
    ("if fix.name == 'test':\n    pass\n", ["'test'"]),
    ('bits = 1 << TAINT_TEST\n', ["TAINT_TEST"]),
    ('say("TAINT_LIVEPATCH missing")\n', ["TAINT_LIVEPATCH"]),
    ('# TAINT_TEST in a comment, "test" too\nx = "a test"\n', []),
    ('"""The unsigned fix, in a docstring."""\n', []),
])
def test_what_counts_as_naming_a_fix_in_python(source, named):
    assert [what for _, what in python_naming(source, *EXAMPLE)] == named


@pytest.mark.parametrize("source,named", [
    ('static const char *mode = "unsigned";\n', ['"unsigned"']),
    ("unsigned int bit = TAINT_UNSIGNED_MODULE;\n", ["TAINT_UNSIGNED_MODULE"]),
    ('#define TAINT_LIVEPATCH 15\n', ["TAINT_LIVEPATCH"]),
    ('/* TAINT_TEST, "test" */\n// TAINT_LIVEPATCH\nint x;\n', []),
    ('puts("a \\"test\\" module");\n', []),
])
def test_what_counts_as_naming_a_fix_in_c(source, named):
    assert [what for _, what in c_naming(source, *EXAMPLE)] == named
