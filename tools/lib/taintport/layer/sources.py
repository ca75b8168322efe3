# SPDX-License-Identifier: GPL-2.0
"""A tree's source files as the layer reads them, and the ones it refuses.

The layer reads and writes a user's tree only through regular files under
it: never through a symbolic link (which could lead out of the tree). A file
it only reads may hold any bytes and line ends (old vendor trees carry
Latin-1 and EUC-KR comments, a header may have CRLF): its text is kept byte
for byte (undecodable bytes as surrogates, line ends untranslated). A file
the layer must write has to be text it can hand to spatch and give back
byte for byte, UTF-8 (the kernel's own encoding) with LF line ends; anything
else is refused with the file, the piece that lives there and the cause,
before anything is written.
"""
import os
import re
import stat
from pathlib import Path

from taintport.errors import InputError
from taintport.journal import Unsafe, regular_file
from taintport.layer.model import LayerError

VERSION_LINE = re.compile(r"^(VERSION|PATCHLEVEL) = (\d+)$", re.M)
# a kernel's top Makefile says its version in its first lines; this much of it is read
MAKEFILE_HEAD = 64 << 10
# the most digits of VERSION or PATCHLEVEL (a kernel's are one or two)
VERSION_DIGITS = 3


def _refuse(piece: str, rel: str, expected: str) -> LayerError:
    return LayerError(piece, rel, expected)


def check_path(root: Path, rel: str, piece: str) -> Path | None:
    """root/rel when it is a regular file reached through folders (no link on
    the way), None when it is absent; anything else is refused."""
    try:
        info = regular_file(root, rel)
    except Unsafe as err:
        if err.what.startswith("a symbolic link"):
            raise _refuse(piece, rel, f"a regular file, found {err.shown}: {err.what} "
                          "(taintport reads and writes no file through a link; put the "
                          "file itself there)") from None
        raise _refuse(piece, rel, f"a regular file, found {err.shown}: {err.what}") from None
    except OSError as err:
        raise _refuse(piece, rel, f"a readable file, got: {err.strerror}") from None
    return Path(root) / rel if info is not None else None


def load(path: Path) -> str:
    """A file's text, byte for byte: undecodable bytes kept as surrogates, no
    line end translated (save() gives back the same bytes)."""
    return path.read_bytes().decode("utf-8", "surrogateescape")


def save(path: Path, text: str) -> None:
    path.write_bytes(text.encode("utf-8", "surrogateescape"))


def check_writable(text: str, rel: str, piece: str) -> str:
    """text, when the layer can change it and give it back byte for byte;
    else why it cannot carry a piece there."""
    bad = next((i for i, ch in enumerate(text) if "\udc80" <= ch <= "\udcff"), None)
    if bad is not None:
        line = text.count("\n", 0, bad) + 1
        raise _refuse(piece, rel, f"UTF-8 text, found byte 0x{ord(text[bad]) - 0xdc00:02x} at "
                      f"line {line} (convert the file to UTF-8, as the kernel's sources are)")
    if "\r" in text:
        line = text.count("\n", 0, text.index("\r")) + 1
        raise _refuse(piece, rel, f"LF line ends, found CR (CRLF) at line {line} "
                      "(convert the file with dos2unix: spatch and quilt --fuzz=0 would "
                      "not give it back byte for byte)")
    return text


def read_text(root: Path, rel: str, piece: str) -> str | None:
    """The text of root/rel byte for byte (load()), None when it is absent."""
    path = check_path(root, rel, piece)
    if path is None:
        return None
    try:
        return load(path)
    except OSError as err:
        raise _refuse(piece, rel, f"a readable file, got: {err.strerror}") from None


def kernel_version(root: Path) -> tuple[int, int] | None:
    """(6, 1) from a tree's top Makefile, None when it does not say (or is no
    regular file); a number no kernel has (5,000 digits) is an InputError."""
    path = Path(root) / "Makefile"
    try:
        # O_NONBLOCK: a FIFO there would wait for a writer; O_NOFOLLOW: no link
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        try:
            head = handle.read(MAKEFILE_HEAD).decode(errors="replace")
        except OSError as err:
            raise InputError(f"{path}: cannot read: {err.strerror or err}") from None
    found = dict(VERSION_LINE.findall(head))
    if len(found) != 2:
        return None
    for key, digits in found.items():
        if len(digits) > VERSION_DIGITS:
            raise InputError(f"{path}: {key} = a number of {len(digits)} digits is not a "
                             f"kernel's version (at most {VERSION_DIGITS} digits)")
    return int(found["VERSION"]), int(found["PATCHLEVEL"])


# what git, quilt's merge and diff3 leave where a merge did not resolve
CONFLICT_MARKER = re.compile(r"^(<{7}|={7}|>{7}|\|{7})(?: |$)", re.M)


def conflict_marker(text: str) -> tuple[int, str] | None:
    """(line, marker) of the first unresolved merge conflict marker in text."""
    found = CONFLICT_MARKER.search(text)
    if found is None:
        return None
    return text.count("\n", 0, found.start()) + 1, found.group(1)


COMMENT_OR_LITERAL = re.compile(r"""/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*'""",
                                re.S)
DEFINE = re.compile(r"^[ \t]*#[ \t]*define[ \t]+(\w+)", re.M)


def code_only(text: str) -> str:
    """text with every comment blanked (same length, same lines): what the
    compiler sees. A piece a semantic patch cannot judge is judged on this,
    so that a comment never counts as code."""
    def blank(m: re.Match[str]) -> str:
        found = m.group(0)
        if found[0] in "\"'":
            return found
        return re.sub(r"[^\n]", " ", found)
    return COMMENT_OR_LITERAL.sub(blank, text)


def defines(code: str) -> set[str]:
    """The macros a file's code #defines."""
    return set(DEFINE.findall(code))
