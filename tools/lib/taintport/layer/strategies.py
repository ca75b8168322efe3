# SPDX-License-Identifier: GPL-2.0
"""The generic rules a fix's record names, each parameterised by its data.

A fix's record (semantic-patches/<fix>/fix.toml) says how each of its pieces
is laid out, edited where SmPL cannot reach and judged where SmPL cannot
read, and when a tree can have the bug at all; these are the rules it can
name. None knows a fix: every identifier, layout and reason is the record's.
"""
import re
from dataclasses import dataclass

from taintport.layer.model import (LayerError, Params, Piece, PieceState, Read, Relaid)
from taintport.layer.relayout import (column, indent_to, inserted, leading, line_bounds,
                                      offset, render_like, same_code, words)
from taintport.layer.sources import code_only, defines


def fill(template: str, params: Params) -> str:
    """A record's text with the fix's parameters put in ({letter})."""
    for name, value in params.items():
        template = template.replace("{" + name + "}", value)
    return template


# ------------------------------------------------------------- a mask's term

@dataclass(frozen=True)
class Hunk:
    """Lines of a mask as a tree had them before upstream's change, and after."""
    before: str
    after: str


@dataclass(frozen=True)
class MaskTerm:
    """Lay out a term spatch added to a mask ~(...): upstream's own hunk where
    the tree has the lines it rewrote, else only the lines the term needs.

    spatch puts the term right after the place its rule reported (the span's
    end) on that line. A mask on one line wraps after it with the term on a
    continuation line aligned under the first term (v3.15's layout); at the
    end of a longer mask the last line gives its closing parenthesis to a
    new line holding the term; after a term that ends its line, the term
    gets a line of its own below it; each new line is laid out like the
    mask's lines (a leading '|', the indent). Every other line stays.
    """
    hunks: tuple[Hunk, ...] = ()    # upstream's own: lines a tree had, as it rewrote them
    wrap_is_upstream: bool = False  # the one-line wrap is upstream's own layout
    adapted: str = ""               # the note's start where the layout is not upstream's

    def __call__(self, piece: Piece, before: str, after: str) -> Relaid:
        assert piece.span is not None  # a missing term always has spatch's span
        at = offset(before, piece.span.line_end, piece.span.column_end)
        term = inserted(piece, before, after, at).removeprefix(" | ")
        for hunk in self.hunks:
            start = before.find(hunk.before)
            while start >= 0:
                if start <= at <= start + len(hunk.before):
                    text = before[:start] + hunk.after + before[start + len(hunk.before):]
                    if same_code(text, after):
                        return Relaid(text)
                start = before.find(hunk.before, start + 1)
        style = "" if term.startswith("(1 << ") else f"; the term is {term}, as this mask writes its terms"
        bol, eol = line_bounds(before, at)
        line, rest = before[bol:eol], before[at:eol]
        nxt_bol = eol + 1
        nxt = before[nxt_bol:line_bounds(before, nxt_bol)[1]] if nxt_bol < len(before) else ""
        opens = line.rfind("~(", 0, at - bol)
        if rest.startswith(")") and opens >= 0:
            note = ("" if self.wrap_is_upstream and not style else
                    "the mask, on one line here, is wrapped after its last term and the new "
                    "term goes on a continuation line aligned under its first")
            return self._relaid(before[:at] + " |\n" + indent_to(column(line[:opens + 2]))
                                + term + before[at:], note, style)
        if rest.startswith(")") and line.lstrip().startswith("|"):
            return self._relaid(before[:at] + "\n" + leading(line) + "| " + term + before[at:],
                                "its last line gives its closing parenthesis to a new line "
                                "holding the new term, starting with '|' as the mask's other "
                                "lines do; no other line changes", style)
        if rest.startswith(")"):
            return self._relaid(before[:at] + " |\n" + leading(line) + term + before[at:],
                                "its last line gets ' |' and gives its closing parenthesis "
                                "to a new line holding the new term, indented like it; no "
                                "other line changes", style)
        if rest.rstrip() == " |":
            return self._relaid(before[:nxt_bol] + leading(nxt) + term + " |\n"
                                + before[nxt_bol:],
                                "the new term gets a line of its own after the line of the "
                                "term it follows, laid out like the mask's other lines, and "
                                "no other line changes", style)
        if rest == "" and nxt.lstrip().startswith("|"):
            return self._relaid(before[:eol] + "\n" + leading(nxt) + "| " + term + before[eol:],
                                "the new term gets a line of its own after the line of the "
                                "term it follows, starting with '|' as the mask's other lines "
                                "do; no other line changes", style)
        return self._relaid(after, "more terms follow the term it goes after on its line; "
                            "the new term goes right after it, on that line", style)

    def _relaid(self, text: str, note: str, style: str) -> Relaid:
        return Relaid(text, self.adapted + note + style if note or style else "")


# ---------------------------------------------------- edits SmPL cannot make

@dataclass(frozen=True)
class Edit:
    """A regular expression replaced once (a line in a comment), unless the
    text already has what `unless` matches; {param}s are filled in first."""
    pattern: str
    replacement: str
    unless: str = ""

    def __call__(self, piece: Piece, text: str, params: Params) -> str:
        if self.unless and re.search(fill(self.unless, params), text, re.M):
            return text
        return re.sub(fill(self.pattern, params), fill(self.replacement, params), text,
                      count=1, flags=re.M)


@dataclass(frozen=True)
class Edits:
    """A piece's edits, in order."""
    edits: tuple[Edit, ...]

    def __call__(self, piece: Piece, text: str, params: Params) -> str:
        for edit in self.edits:
            text = edit(piece, text, params)
        return text


# ------------------------------------- a flag table in a multi-line #define
# SmPL cannot read a multi-line #define body, so a table of
# { (1UL << FLAG), "L" } entries there (show_module_flags) is judged and
# edited here, on the file's code with its comments blanked.

ENTRY = re.compile(r"\{ \(1UL << (TAINT_\w+)\),\s*\"(.)\" \}")


@dataclass(frozen=True)
class Shown:
    """An entry the fix adds where the table lacks it."""
    flag: str
    letter: str


@dataclass(frozen=True)
class FlagTable:
    """The fix's flag, shown with its letter, in the #define table `macro`
    that has an `anchor` entry; the entries of `also` added after the first
    one where absent."""
    macro: str
    anchor: str
    flag: str
    letter: str                      # may name a parameter: "{letter}"
    also: tuple[Shown, ...] = ()

    def _entries(self, code: str) -> tuple[re.Match[str], dict[str, tuple[str, int]]] | None:
        found = re.search(rf"^#define {re.escape(self.macro)}\(\w+\)(?:.*\\\n)*.*\n", code, re.M)
        if not found:
            return None
        return found, {m.group(1): (m.group(2), found.start() + m.start())
                       for m in ENTRY.finditer(found.group(0))}

    def judge(self, text: str, path: str, params: Params, name: str) -> Piece | None:
        """Present, missing (after the last entry), or the letter another flag shows."""
        code = code_only(text)
        found = self._entries(code)
        if found is None or self.anchor not in found[1]:
            return None
        flags = found[1]
        letter = fill(self.letter, params)

        def at(offset_: int, state: PieceState, detail: str = "") -> Piece:
            return Piece(name, path, code.count("\n", 0, offset_) + 1, state, detail)
        if self.flag in flags:
            shown, where = flags[self.flag]
            if shown == letter:
                return at(where, PieceState.PRESENT)
            return at(where, PieceState.CONFLICTING,
                      f"{self.flag} already shows letter '{shown}', not '{letter}'")
        for flag, (shown, where) in flags.items():
            if shown == letter:
                return at(where, PieceState.CONFLICTING,
                          f"letter '{letter}' already belongs to {flag}")
        return at(max(where for _, where in flags.values()), PieceState.MISSING,
                  f"{self.macro} lacks letter {letter} for {self.flag}")

    def edit(self, piece: Piece, text: str, params: Params) -> str:
        """The flag last, each entry of `also` after the first where absent,
        each new line rendered like an existing entry line."""
        found = self._entries(code_only(text))
        if found is None:
            raise LayerError(piece.name, piece.path, self.macro)
        macro = found[0]
        lines = text[macro.start():macro.end()].splitlines(True)
        entries = [i for i, line in enumerate(lines) if ENTRY.search(line)]
        if len(entries) < 2:
            raise LayerError(piece.name, piece.path, f"{self.macro} with two entries or more")

        def shown(line: str) -> re.Match[str]:
            entry_match = ENTRY.search(line)
            assert entry_match, line  # entries holds only the lines ENTRY finds
            return entry_match

        def entry(anchor: str, flag: str, letter: str) -> str:
            line_words = words(anchor)
            line_words[line_words.index(shown(anchor).group(1))] = flag
            line_words = [f'"{letter}"' if re.fullmatch(r'"."', w) else w for w in line_words]
            return render_like(anchor, line_words)

        inner, last = lines[entries[-2]], lines[entries[-1]]
        flag, letter = shown(last).groups()
        lines[entries[-1]] = entry(inner, flag, letter)
        lines.insert(entries[-1] + 1, entry(last, self.flag, fill(self.letter, params)))
        for also in reversed(self.also):
            if not any(also.flag in line for line in lines):
                lines.insert(entries[0] + 1, entry(lines[entries[0]], also.flag, also.letter))
        return text[:macro.start()] + "".join(lines) + text[macro.end():]


# ------------------------------------------------ whether a tree can have it

@dataclass(frozen=True)
class Requires:
    """A tree can have the bug only when one of the files `among` has a word
    (kind "word") or a #define (kind "define") in its code; where some are
    there and none has it, the fix is not applicable, because `reason`."""
    word: str
    kind: str                        # "word" or "define"
    among: tuple[str, ...]
    reason: str

    def __call__(self, read: Read) -> str:
        texts = [read(rel) for rel in self.among]
        if all(t is None for t in texts):
            return ""
        codes = [code_only(t) for t in texts if t is not None]
        if self.kind == "define":
            has = any(self.word in defines(code) for code in codes)
        else:
            has = any(re.search(rf"\b{re.escape(self.word)}\b", code) for code in codes)
        return "" if has else self.reason
