# SPDX-License-Identifier: GPL-2.0
"""No code names a fix: a fix is its folder, semantic-patches/<fix>/, and its
guest file, test-matrix/fixes/<fix>.toml (the one test of this idea, for the
layer's side and the agent's).

What counts as naming a fix, in the code the engine and the guest run
(every Python file under tools/lib, the agent's generator gen-checks.py,
every C file and header git tracks under test-matrix/agent but the parser's
test data parse-test.c):
  - a string literal whose whole value is a fix's name ("test", "livepatch"),
    a docstring or message that merely uses the word is not one;
  - the taint identifier a fix's record names (`taint`: TAINT_TEST, ...),
    as a whole word anywhere in the code, strings included; comments are
    not code and are not read;
  - a word of the fix's own (WORDS: its name unless C or English has the
    word, its guest test modules, its taints' kernel names) as an identifier
    or a word of a one-word or path-like string literal ("tlp.ko"), but the
    kernel tree's own paths (KERNELS_OWN: the kernel named its livepatch
    subsystem before we named a fix after it).
Everything else a fix needs (its pieces, layouts, reasons, the guest's load
modes and checks) is read from its record or generated from it.
"""
import ast
import io
import re
import subprocess
import shutil
import tokenize
import tomllib
from pathlib import Path

import pytest

from taintport import REPO, family
from taintport import guest
from taintport.kernel import selftests

LIB = REPO / "tools" / "lib"
AGENT = REPO / "test-matrix" / "agent"
NAMES = frozenset(family.NAMES)
TAINTS = frozenset(info.taint for info in family.FAMILY)
# a fix's name that is also a word of C or English is only a fix as a whole literal
COMMON = frozenset({"unsigned", "test"})
KERNELS_OWN = frozenset({str(selftests.SELFTESTS), str(selftests.IN_TREE)})


def _guest_words():
    """Each fix's words from its guest file: its name, its test modules and
    the kernel names of its taints (TAINT_...)."""
    words = set()
    for name in NAMES:
        data = tomllib.loads((guest.FIXES / f"{name}.toml").read_text())
        words |= {name, *data.get("modules", {})}
        words |= {t["name"] for t in data.get("taint", {}).values()}
    return frozenset(words - COMMON)


WORDS = _guest_words()
IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# a C comment, or a string or character literal (kept: it is code)
C_LEXEME = re.compile(r'/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.S)


def _taint_word(taints):
    return re.compile(r"\b(" + "|".join(map(re.escape, sorted(taints))) + r")\b")


def python_naming(text, names=NAMES, taints=TAINTS, words=frozenset()):
    """(line, what) of each place a Python source names one of the fixes."""
    taint_word = _taint_word(taints)
    words = words - taints  # a taint is found anywhere, as a word
    found = []
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type == tokenize.STRING:
            try:
                value = ast.literal_eval(tok.string)
            except (ValueError, SyntaxError):  # an f-string part
                value = None
            if value in names:
                found.append((tok.start[0], tok.string))
            elif isinstance(value, str) and value not in KERNELS_OWN and \
                    re.fullmatch(r"[\w./{}-]+", value):
                found += [(tok.start[0], w) for w in IDENTIFIER.findall(value) if w in words]
        if tok.type == tokenize.NAME and tok.string in words:
            found.append((tok.start[0], tok.string))
        if tok.type in (tokenize.STRING, tokenize.NAME):
            found += [(tok.start[0], m.group(0)) for m in taint_word.finditer(tok.string)]
    return found


def c_naming(text, names=NAMES, taints=TAINTS, words=frozenset()):
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
    found += [(code.count("\n", 0, m.start()) + 1, m.group(0))
              for m in IDENTIFIER.finditer(code) if m.group(0) in words - taints]
    return found


def _tracked(folder: Path, *patterns: str) -> list[Path]:
    out = subprocess.run(["git", "ls-files", "-z", "--", *patterns], cwd=folder,
                         capture_output=True, text=True, check=True).stdout
    return [folder / name for name in out.split("\0") if name]


def _report(paths, reader, root=REPO):
    return [f"{path.relative_to(root)}:{line}: {what}" for path in paths
            for line, what in reader(path.read_text(), words=WORDS)]


def python_sources(lib=LIB):
    return sorted(lib.rglob("*.py")) + [AGENT / "gen-checks.py"]


def c_sources():
    # parse-test.c is the parser's test data: lines the kernel printed
    return [p for p in _tracked(AGENT, "*.c", "*.h") if p.name != "parse-test.c"]


def test_the_family_has_names_and_taints_to_look_for():
    assert len(NAMES) == len(TAINTS) == len(family.FAMILY) >= 2


# the examples' family: the three fixes of the allow-list
EXAMPLE = (frozenset({"unsigned", "test", "livepatch"}),
           frozenset({"TAINT_UNSIGNED_MODULE", "TAINT_TEST", "TAINT_LIVEPATCH"}),
           frozenset({"livepatch", "tlp", "utt", "TAINT_LIVEPATCH"}))


def test_the_words_are_each_fixs_and_its_modules():
    assert {"utt", "tlp", "TAINT_LIVEPATCH", "livepatch"} <= WORDS
    assert not WORDS & COMMON


def test_no_python_under_tools_lib_names_a_fix():
    assert _report(python_sources(), python_naming) == []


def test_no_c_of_the_agent_names_a_fix():
    assert _report(c_sources(), c_naming) == []


def test_the_check_finds_a_fix_named_in_a_copy_of_the_library(tmp_path):
    """The same check, on a copy of the library with a fix's module named in it."""
    planted = tmp_path / "lib"
    shutil.copytree(LIB, planted, ignore=shutil.ignore_patterns("__pycache__"))
    assert _report(python_sources(planted), python_naming, tmp_path) == []
    (planted / "taintport" / "judge" / "planted.py").write_text('MODULE = "tlp.ko"\n')
    assert _report(python_sources(planted), python_naming, tmp_path) == \
        ["lib/taintport/judge/planted.py:1: tlp"]


@pytest.mark.parametrize("source,named", [
    ('kind = "livepatch"\n', ['"livepatch"']),
    ("if fix.name == 'test':\n    pass\n", ["'test'"]),
    ('bits = 1 << TAINT_TEST\n', ["TAINT_TEST"]),
    ('say("TAINT_LIVEPATCH missing")\n', ["TAINT_LIVEPATCH"]),
    ('# TAINT_TEST in a comment, "test" too\nx = "a test"\n', []),
    ('"""The unsigned fix, in a docstring."""\n', []),
    ('MODULE = "tlp.ko"\n', ["tlp"]),
    ('where = "semantic-patches/livepatch/fix.toml"\n', ["livepatch"]),
    ('livepatch = folder / "x"\n', ["livepatch"]),
    ('say("tlp did not load")\n', []),
    (f'SELFTESTS = "{sorted(KERNELS_OWN)[0]}"\n', []),
])
def test_what_counts_as_naming_a_fix_in_python(source, named):
    assert [what for _, what in python_naming(source, *EXAMPLE)] == named


@pytest.mark.parametrize("source,named", [
    ('static const char *mode = "unsigned";\n', ['"unsigned"']),
    ("unsigned int bit = TAINT_UNSIGNED_MODULE;\n", ["TAINT_UNSIGNED_MODULE"]),
    ('#define TAINT_LIVEPATCH 15\n', ["TAINT_LIVEPATCH"]),
    ('/* TAINT_TEST, "test" */\n// TAINT_LIVEPATCH\nint x;\n', []),
    ('puts("a \\"test\\" module");\n', []),
    ('load("utt.ko");\n', ["utt"]),
    ('static int tlp_fire(void);\n', []),
    ('int tlp = 1; /* tlp */\n', ["tlp"]),
])
def test_what_counts_as_naming_a_fix_in_c(source, named):
    assert [what for _, what in c_naming(source, *EXAMPLE)] == named
