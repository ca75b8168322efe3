"""The unsigned-module fix: upstream's TAINT_UNSIGNED_MODULE (v3.15).

Upstream commits 66cc69e34e86 and 57673c2b0baa (v3.15) add taint bit 13
(letter 'E') for modules that fail signature verification, taint them with it
instead of TAINT_FORCED_MODULE, and let tracing accept it. The change has six
pieces; each has taken several shapes between 3.10 and 7.3:

  define        #define TAINT_UNSIGNED_MODULE 13  (kernel.h, panic.h from v5.14)
  letter        kernel/panic.c's letter table (+ the comment listing letters)
  sigcheck      add_taint_module() after "module verification failed"
  tracepoint    the mask of taints tracing tolerates (+ its comment)
  module-flags  explicit per-module letter tests (before v4.10)
  trace-event   show_module_flags in include/trace/events/module.h

Five are judged and carried by their semantic patches. The sixth lives in
the body of a multi-line #define, which SmPL cannot read: it is judged and
edited here, on the file's code with its comments blanked.
"""
import re

from taintport import family
from taintport.layer.model import (Fix, LayerError, Param, Params, Piece, PieceSpec,
                                   PieceState, Read, Relaid, Where)
from taintport.layer.relayout import (column, indent_to, inserted, leading, line_bounds,
                                      offset, relayout_like_neighbours, render_like, words)
from taintport.layer.sources import code_only

LETTER = Param("letter", "E", r"[A-Z]", "one capital letter",
               "taint letter for TAINT_UNSIGNED_MODULE (default E; X reproduces the 2014 "
               "posting where X is free)")
MODULE_C = (Where("kernel/module/main.c", (5, 19)), Where("kernel/module.c"))


# ------------------------------------------------------------- tracing's mask

def _relayout_mask(piece: Piece, before: str, after: str) -> Relaid:
    """Put the new term where upstream's tree has it, or else where it changes
    the fewest lines.

    spatch appends it after the TAINT_CRAP term, on that term's line.
    Upstream's layouts: a mask on one line wraps with the term on a
    continuation line aligned under the first term (v3.15); when a line of
    its own closes the mask, the term gets a line of its own above it
    (v6.0, TAINT_TEST); when that line is upstream's "(1 << TAINT_TEST) |",
    the term starts it (v6.3). Any other mask gets a line of its own for the
    term after the TAINT_CRAP line, laid out like the line below, or the
    term inline after TAINT_CRAP when more terms follow on its line.
    """
    assert piece.span is not None  # a missing term always has spatch's span
    at = offset(before, piece.span.line_end, piece.span.column_end)
    term = inserted(piece, before, after, at).removeprefix(" | ")
    bol, eol = line_bounds(before, at)
    line, rest = before[bol:eol], before[at:eol]
    nxt_bol = eol + 1
    nxt = before[nxt_bol:line_bounds(before, nxt_bol)[1]] if nxt_bol < len(before) else ""
    own_line = ("this tree's mask is laid out unlike upstream's; the new term gets "
                "a line of its own after the TAINT_CRAP line, laid out like the mask's "
                "other lines, and no other line changes")
    if rest.rstrip() == " |":
        if nxt.strip() == "(1 << TAINT_TEST) |":
            return Relaid(before[:nxt_bol] + leading(nxt) + term + " | " + nxt.lstrip()
                          + before[nxt_bol + len(nxt):])
        note = "" if nxt.strip().startswith("(1 << TAINT_TEST)") else own_line
        return Relaid(before[:nxt_bol] + leading(nxt) + term + " |\n" + before[nxt_bol:], note)
    if rest.startswith(")"):
        if line.lstrip().startswith("|"):
            return Relaid(before[:at] + "\n" + leading(line) + "| " + term + before[at:],
                          own_line)
        start = line.rfind("~(", 0, at - bol)
        if start < 0:
            return Relaid(before[:at] + " |\n" + leading(line) + term + before[at:], own_line)
        col = column(line[:start + 2])
        return Relaid(before[:at] + " |\n" + indent_to(col) + term + before[at:])
    if rest == "" and nxt.lstrip().startswith("|"):
        return Relaid(before[:eol] + "\n" + leading(nxt) + "| " + term + before[eol:], own_line)
    return Relaid(after, "this tree's mask has more terms after TAINT_CRAP on its "
                  "line; the new term goes right after TAINT_CRAP, on that line")


# --------------------------------------------------------- scripted pieces
# SmPL cannot insert a line into a comment or into a multi-line #define body,
# so these are done here, on the text.

def _letter_comment(piece: Piece, text: str, params: Params) -> str:
    """print_tainted()'s comment listing letters (to v4.9)."""
    letter = params["letter"]
    if re.search(rf"^ \*\s+'{letter}' - Unsigned module", text, re.M):
        return text
    return re.sub(r"^( \*\s+)'O' - Out-of-tree module has been loaded\.\n",
                  rf"\g<0>\1'{letter}' - Unsigned module has been loaded.\n", text,
                  count=1, flags=re.M)


def _tracepoint_comment(piece: Piece, text: str, params: Params) -> str:
    """The 3.10 comment above the mask test, as upstream rewrote it."""
    return text.replace("Staging and out-of-tree GPL modules are fine.",
                        "Staging, out-of-tree, and unsigned GPL modules are fine.", 1)


SHOW_MODULE_FLAGS = re.compile(r"^#define show_module_flags\(flags\)(?:.*\\\n)*.*\n", re.M)
SHOW_ENTRY = re.compile(r"\{ \(1UL << (TAINT_\w+)\),\s*\"(.)\" \}")


def _show_entries(code: str) -> tuple[re.Match[str], dict[str, tuple[str, int]]] | None:
    macro = SHOW_MODULE_FLAGS.search(code)
    if not macro:
        return None
    flags = {m.group(1): (m.group(2), macro.start() + m.start())
             for m in SHOW_ENTRY.finditer(macro.group(0))}
    return macro, flags


def _judge_trace_event(text: str, path: str, params: Params) -> Piece | None:
    """show_module_flags: present, missing (after the last entry), or the
    letter another flag shows."""
    code = code_only(text)
    found = _show_entries(code)
    if found is None or "TAINT_CRAP" not in found[1]:
        return None
    flags = found[1]
    letter = params["letter"]

    def at(offset_: int, state: PieceState, detail: str = "") -> Piece:
        return Piece("trace-event", path, code.count("\n", 0, offset_) + 1, state, detail)
    if "TAINT_UNSIGNED_MODULE" in flags:
        c, where = flags["TAINT_UNSIGNED_MODULE"]
        if c == letter:
            return at(where, PieceState.PRESENT)
        return at(where, PieceState.CONFLICTING,
                  f"TAINT_UNSIGNED_MODULE already shows letter '{c}', not '{letter}'")
    for flag, (c, where) in flags.items():
        if c == letter:
            return at(where, PieceState.CONFLICTING, f"letter '{letter}' already belongs to {flag}")
    return at(max(where for _, where in flags.values()), PieceState.MISSING,
              f"show_module_flags lacks letter {letter} for TAINT_UNSIGNED_MODULE")


def _show_module_flags(piece: Piece, text: str, params: Params) -> str:
    """Add O (if absent) after P, and the unsigned letter last, as upstream
    did in include/trace/events/module.h. Each new line is rendered like an
    existing entry line. The macro is found in the code with its comments
    blanked, which has the same offsets as text."""
    found = _show_entries(code_only(text))
    if found is None:
        raise LayerError(piece.name, piece.path, "show_module_flags")
    macro = found[0]
    lines = text[macro.start():macro.end()].splitlines(True)
    entries = [i for i, line in enumerate(lines) if SHOW_ENTRY.search(line)]
    if len(entries) < 2:
        raise LayerError(piece.name, piece.path, "show_module_flags with two entries or more")

    def shown(line: str) -> re.Match[str]:
        entry_match = SHOW_ENTRY.search(line)
        assert entry_match, line  # entries holds only the lines SHOW_ENTRY finds
        return entry_match

    def entry(anchor: str, flag: str, c: str) -> str:
        line_words = words(anchor)
        line_words[line_words.index(shown(anchor).group(1))] = flag
        line_words = [f'"{c}"' if re.fullmatch(r'"."', w) else w for w in line_words]
        return render_like(anchor, line_words)

    inner, last = lines[entries[-2]], lines[entries[-1]]
    flag, c = shown(last).groups()
    lines[entries[-1]] = entry(inner, flag, c)
    lines.insert(entries[-1] + 1, entry(last, "TAINT_UNSIGNED_MODULE", params["letter"]))
    if not any("TAINT_OOT_MODULE" in line for line in lines):
        lines.insert(entries[0] + 1, entry(lines[entries[0]], "TAINT_OOT_MODULE", "O"))
    return text[:macro.start()] + "".join(lines) + text[macro.end():]


# ------------------------------------------------------------------ the pieces

PIECES = (
    PieceSpec("define", (Where("include/linux/panic.h", (5, 14)), Where("include/linux/kernel.h")),
              "#define TAINT_OOT_MODULE 12", cocci="taint_unsigned_define.cocci",
              relayout=relayout_like_neighbours),
    PieceSpec("letter", (Where("kernel/panic.c"),),
              "a taint letter table with a TAINT_OOT_MODULE entry",
              cocci="taint_unsigned_letter.cocci", relayout=relayout_like_neighbours,
              scripted=_letter_comment),
    PieceSpec("sigcheck", MODULE_C,
              "add_taint_module() after the \"module verification failed\" notice",
              cocci="taint_unsigned_sigcheck.cocci", relayout=relayout_like_neighbours),
    PieceSpec("tracepoint", (Where("kernel/tracepoint.c"),),
              "a mask ~(... (1 << TAINT_CRAP) ...) of the taints tracing tolerates",
              cocci="taint_unsigned_tracepoint.cocci", relayout=_relayout_mask,
              scripted=_tracepoint_comment),
    PieceSpec("module-flags", MODULE_C,
              "module_flags_taint() with a TAINT_CRAP test or a taint_flags[] loop",
              cocci="taint_unsigned_module_flags.cocci", relayout=relayout_like_neighbours),
    PieceSpec("trace-event", (Where("include/trace/events/module.h"),),
              "#define show_module_flags(flags) with a TAINT_CRAP entry",
              judge=_judge_trace_event, scripted=_show_module_flags),
)


def _applies(read: Read) -> str:
    """Module signing (v3.7) is what taints an unsigned module at all."""
    texts = [read(w.path) for w in MODULE_C]
    if any(t is not None for t in texts) and \
            not any(re.search(r"\bsig_ok\b", code_only(t or "")) for t in texts):
        return ("this kernel predates module signing (v3.7, no sig_ok in kernel/module.c): "
                "it never taints an unsigned module, so it cannot have this bug")
    return ""


FIX = Fix(info=family.BY_NAME["unsigned"], pieces=PIECES, applies=_applies, params=(LETTER,))
