"""The livepatch fix: upstream's TAINT_LIVEPATCH in tracing's allow-list (v6.3).

Upstream commit e7bb66f79a7b adds (1 << TAINT_LIVEPATCH) to the mask of
taints that trace_module_has_bad_taint() tolerates, so a livepatch module
(tainted K) keeps its trace events. It has one piece, the mask, which
tracepoint_livepatch.cocci judges and carries in every shape it has had
(OOT | CRAP | UNSIGNED to v5.19, | TEST from v6.0, the inline test of v3.10)
and every vendor spelling of it (terms in any order, BIT(), extra bits).
"""
from taintport import family
from taintport.layer.model import Fix, Piece, PieceSpec, Read, Relaid, Where
from taintport.layer.relayout import column, indent_to, inserted, leading, line_bounds, offset
from taintport.layer.sources import code_only, defines

# The lines e7bb66f79a7b rewrote, as v6.0-v6.2 (Debian's 6.1) have them, and
# what it made of them: where a tree's mask ends in exactly these lines, the
# hunk is upstream's, byte for byte.
UPSTREAM_PRE = ("\t\t\t       (1 << TAINT_UNSIGNED_MODULE) |\n"
                "\t\t\t       (1 << TAINT_TEST));\n")
UPSTREAM_POST = ("\t\t\t\t(1 << TAINT_UNSIGNED_MODULE) | (1 << TAINT_TEST) |\n"
                 "\t\t\t\t(1 << TAINT_LIVEPATCH));\n")
NOT_UPSTREAM = ("upstream's hunk rewraps the last two lines of the v6.2 mask "
                "(UNSIGNED_MODULE | TEST); this tree's mask ends otherwise, so ")


def _relayout(piece: Piece, before: str, after: str) -> Relaid:
    """Add the new term the way this mask is written, touching as few lines
    as it can: upstream's own hunk where the mask ends in the lines upstream
    rewrote; else the mask's last line gives its closing parenthesis to a
    new line holding the term, laid out like the mask's other lines; a mask
    on one line gets a continuation line aligned under its first term (as
    v3.15 wrapped it)."""
    assert piece.span is not None  # a missing mask always has spatch's span
    at = offset(before, piece.span.line_end, piece.span.column_end)
    term = inserted(piece, before, after, at).removeprefix(" | ")
    bol, eol = line_bounds(before, at)
    line = before[bol:eol]
    prev = before.rfind("\n", 0, max(bol - 1, 0)) + 1
    style = "" if term.startswith("(1 << ") else f"; the term is {term}, as this mask writes its terms"
    if piece.span.line_end > piece.span.line and \
            before[prev:eol + 1] == UPSTREAM_PRE and not style:
        return Relaid(before[:prev] + UPSTREAM_POST + before[eol + 1:])
    if piece.span.line_end == piece.span.line:
        first = column(before[bol:offset(before, piece.span.line, piece.span.column)])
        return Relaid(before[:at] + " |\n" + indent_to(first) + term + before[at:],
                      NOT_UPSTREAM + "the mask, on one line here, is wrapped after its last "
                      "term and the new term goes on a continuation line aligned under "
                      "its first" + style)
    if line.lstrip().startswith("|"):
        return Relaid(before[:at] + "\n" + leading(line) + "| " + term + before[at:],
                      NOT_UPSTREAM + "its last line gives its closing parenthesis to a new "
                      "line holding the new term, starting with '|' as the mask's other "
                      "lines do; no other line changes" + style)
    return Relaid(before[:at] + " |\n" + leading(line) + term + before[at:],
                  NOT_UPSTREAM + "its last line gets ' |' and gives its closing parenthesis "
                  "to a new line holding the new term, indented like it; no other line "
                  "changes" + style)


def _applies(read: Read) -> str:
    """TAINT_LIVEPATCH came with livepatch itself (v4.0)."""
    headers = [read(rel) for rel in ("include/linux/panic.h", "include/linux/kernel.h")]
    if any(h is not None for h in headers) and \
            not any("TAINT_LIVEPATCH" in defines(code_only(h or "")) for h in headers):
        return ("this kernel predates livepatch (v4.0, no TAINT_LIVEPATCH in "
                "include/linux/kernel.h or panic.h): it cannot have this bug")
    return ""


PIECES = (
    PieceSpec("livepatch", (Where("kernel/tracepoint.c"),),
              "a mask ~(...) of the taints tracing tolerates, in "
              "trace_module_has_bad_taint() or tracepoint_module_coming()",
              cocci="tracepoint_livepatch.cocci", relayout=_relayout),
)

FIX = Fix(info=family.BY_NAME["livepatch"], pieces=PIECES, applies=_applies)
