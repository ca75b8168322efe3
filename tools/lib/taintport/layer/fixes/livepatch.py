"""The livepatch fix: upstream's TAINT_LIVEPATCH in tracing's allow-list (v6.3).

Upstream commit e7bb66f79a7b adds (1 << TAINT_LIVEPATCH) to the mask of
taints that trace_module_has_bad_taint() tolerates, so a livepatch module
(tainted K) keeps its trace events. It has one piece, the mask, in three
shapes: OOT | CRAP | UNSIGNED (v3.15 to v5.19, Debian's 5.10), the same with
TEST (v6.0 to v6.2, Debian's 6.1: upstream's hunk was written for this one)
and the inline test in tracepoint_module_coming() (v3.10, which has no
livepatch and so never needs the fix, but the semantic patch knows it).
"""
from taintport.layer import engine
from taintport.layer.engine import LayerError, PieceSpec, TAB, column, finding
from taintport.layer.fixes import info

INFO = info("livepatch")
NEW = "(1 << TAINT_LIVEPATCH)"


def _shape(name, terms):
    return name + ": " + "|".join(t[len("TAINT_"):] for t in terms)


def _recognise(text, path, letter):
    found = engine.mask(text)
    if not found or found[3][:2] != ["TAINT_OOT_MODULE", "TAINT_CRAP"]:
        return None
    name, start, end, terms = found
    shape = _shape(name, [t for t in terms if t != "TAINT_LIVEPATCH"])
    if "TAINT_LIVEPATCH" in terms:
        return finding("livepatch", shape, path, text, text.index("TAINT_LIVEPATCH", start),
                       "present")
    # the line the mask starts on, as the semantic patch's report says it
    return finding("livepatch", shape, path, text, start, "missing", rules={"livepatch"})


def _relayout(piece, before, after):
    """Lay the new term out as upstream did, or as close as the shape allows.

    spatch appends " | (1 << TAINT_LIVEPATCH)" before the mask's closing
    parenthesis. Upstream (v6.3, on the v6.0 mask whose last two lines hold
    one term each) joined those two lines and put the new term on the next,
    all three indented with four tabs. Where the last line is the only
    continuation line (v3.15 to v5.19), the new term gets a line of its own,
    indented like it, as TAINT_TEST was added in v6.0. A mask on one line
    gets a continuation line aligned under its first term, as upstream
    wrapped it in v3.15.
    """
    name, start, end, _ = engine.mask(before)
    if after != before[:end] + " | " + NEW + before[end:]:
        raise LayerError(piece.name, piece.path,
                         f"spatch to add only {NEW} at the end of the mask")
    first_bol = before.rindex("\n", 0, start) + 1
    bol = before.rindex("\n", 0, end) + 1
    eol = before.index("\n", end)
    last = before[bol:eol]
    indent = last[:len(last) - len(last.lstrip())]
    if bol == first_bol:
        first = before.index("(1 << ", start)
        col = column(before[bol:first])
        pad = "\t" * (col // TAB) + " " * (col % TAB)
        return before[:end] + " |\n" + pad + NEW + before[end:]
    prev_bol = before.rindex("\n", 0, bol - 1) + 1
    prev = before[prev_bol:bol - 1]
    if prev_bol != first_bol and prev.strip().count("(1 << ") == 1 and \
            last.strip().count("(1 << ") == 1:
        joined = "\t\t\t\t" + prev.strip() + " " + before[bol:end].strip()
        return (before[:prev_bol] + joined + " |\n\t\t\t\t" + NEW + before[end:])
    return before[:end] + " |\n" + indent + NEW + before[end:]


def adaptation(piece):
    """What the patch header says when the hunk is not upstream's text."""
    if piece.shape == INFO["patch"]["upstream-shape"]:
        return ""
    return (f"upstream's hunk is for the mask "
            f"{INFO['patch']['upstream-shape'].split(': ', 1)[1]}; this tree's "
            f"{piece.shape} gets the term the same way the mask grew before "
            "(a line of its own, indented like the line above)")


def _applies(read):
    """TAINT_LIVEPATCH came with livepatch itself (v4.0)."""
    headers = [read(rel) for rel in ("include/linux/panic.h", "include/linux/kernel.h")]
    if any(h is not None for h in headers) and \
            not any("TAINT_LIVEPATCH" in (h or "") for h in headers):
        return ("this kernel predates livepatch (v4.0, no TAINT_LIVEPATCH in "
                "include/linux/kernel.h or panic.h): it cannot have this bug")
    return ""


PIECES = (
    PieceSpec("livepatch", ("kernel/tracepoint.c",),
              "a mask ~((1 << TAINT_OOT_MODULE) | (1 << TAINT_CRAP) ...) of tolerated taints",
              _recognise, "tracepoint_livepatch.cocci", relayout=_relayout),
)

FIX = engine.Fix(name="livepatch", pieces=PIECES, info=INFO, applies=_applies,
                adaptation=adaptation)
