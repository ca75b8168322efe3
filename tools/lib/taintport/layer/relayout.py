# SPDX-License-Identifier: GPL-2.0
"""Whitespace work: lay out what spatch added the way the tree lays out its code.

spatch decides the code; these functions decide only where its lines break
and how they are indented. The engine checks every result against spatch's
own output token by token (same_code), so a re-layout can never change,
drop or add code, only whitespace.
"""
import difflib
import re

from taintport.layer.model import LayerError, Piece, Relaid

TAB = 8
TOKEN = re.compile(r"""^[ \t]*#[ \t]*\w+|'(?:\\.|[^'\\])'|"(?:\\.|[^"\\])*"|\w+|->|<<|>>|\+\+|\S""",
                   re.M)


def tokens(text: str) -> list[tuple[int, int, str]]:
    """(start, end, token) of every C token of text (comments as their words)."""
    return [(m.start(), m.end(), m.group(0).strip()) for m in TOKEN.finditer(text)]


def words(text: str) -> list[str]:
    return [w for _, _, w in tokens(text)]


def same_code(a: str, b: str) -> bool:
    """Whether two texts differ in whitespace only."""
    return words(a) == words(b)


def _skeleton(line_words: list[str]) -> tuple[str, ...]:
    return tuple("W" if re.fullmatch(r"\w+", w) else
                 "C" if w.startswith("'") else
                 "S" if w.startswith('"') else w for w in line_words)


def column(text: str) -> int:
    col = 0
    for ch in text:
        col = (col // TAB + 1) * TAB if ch == "\t" else col + 1
    return col


def indent_to(col: int) -> str:
    """Tabs, then spaces, up to a column: the kernel's continuation indent."""
    return "\t" * (col // TAB) + " " * (col % TAB)


def render_like(anchor: str, line_words: list[str]) -> str:
    """Lay out words (one line's tokens) the way anchor lays out its own.

    Spacing inside a field is copied; a gap that holds a tab is an alignment
    gap and is refilled with tabs (then spaces) up to the anchor's column, at
    least one tab. This is how the kernel aligns its tables and #defines.
    """
    toks = tokens(anchor)
    out = anchor[:toks[0][0]]
    for i, word in enumerate(line_words):
        out += word
        if i + 1 == len(line_words):
            break
        gap = anchor[toks[i][1]:toks[i + 1][0]]
        if "\t" not in gap:
            out += gap
            continue
        target = column(anchor[:toks[i + 1][0]].rsplit("\n", 1)[-1])
        line = out.rsplit("\n", 1)[-1]
        fill = ""
        while (column(line + fill) // TAB + 1) * TAB <= target:
            fill += "\t"
        fill += " " * max(0, target - column(line + fill))
        out += fill or "\t"
    return out + anchor[toks[-1][1]:]


def relayout_like_neighbours(piece: Piece, before: str, after: str) -> Relaid:
    """Re-lay out the lines spatch added to before so they look like their
    neighbours: each added line is spatch's own tokens rendered like an
    anchor line with the same token skeleton (the line it replaced, or one
    just above it)."""
    old, new = before.splitlines(True), after.splitlines(True)
    out: list[str] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, old, new,
                                                      autojunk=False).get_opcodes():
        if op == "equal":
            out += old[i1:i2]
        if op in ("equal", "delete"):
            continue
        anchors = old[i1:i2] + old[max(0, i1 - 8):i1][::-1]
        pending = words("".join(new[j1:j2]))
        while pending:
            for anchor in anchors:
                n = len(tokens(anchor))
                if n and _skeleton(pending[:n]) == _skeleton(words(anchor)):
                    out.append(render_like(anchor, pending[:n]))
                    pending = pending[n:]
                    break
            else:
                raise LayerError(piece.name, piece.path,
                                 "spatch output laid out like its neighbours, got: "
                                 + "".join(new[j1:j2]).strip())
    return Relaid("".join(out))


def offset(text: str, line: int, col: int) -> int:
    """The offset of (line from 1, column from 0) in text."""
    start = 0
    for _ in range(line - 1):
        start = text.index("\n", start) + 1
    return start + col


def inserted(piece: Piece, before: str, after: str, at: int) -> str:
    """What spatch inserted into before at offset at (and nothing else), or
    LayerError: the one edit a mask re-layout knows how to lay out."""
    added = after[at:at + len(after) - len(before)]
    if len(after) <= len(before) or before[:at] + added + before[at:] != after:
        raise LayerError(piece.name, piece.path,
                         f"spatch to add only a term at line {piece.line}, got another change")
    return added


def line_bounds(text: str, at: int) -> tuple[int, int]:
    """(start, end) of the line holding offset at, its newline excluded."""
    end = text.find("\n", at)
    return text.rfind("\n", 0, at) + 1, len(text) if end < 0 else end


def leading(line: str) -> str:
    return line[:len(line) - len(line.lstrip())]
