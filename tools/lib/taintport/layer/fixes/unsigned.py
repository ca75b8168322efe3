"""The unsigned-module fix: upstream's TAINT_UNSIGNED_MODULE (v3.15).

Upstream commits 66cc69e34e86 and 57673c2b0baa (v3.15) add taint bit 13
(letter 'E') for modules that fail signature verification, taint them with it
instead of TAINT_FORCED_MODULE, and let tracing accept it. The change has six
pieces; each has taken several shapes between 3.10 and 7.3:

  define        #define TAINT_UNSIGNED_MODULE 13  (kernel.h, later panic.h)
  letter        kernel/panic.c's letter table (+ the comment listing letters)
  sigcheck      add_taint_module() after "module verification failed"
  tracepoint    the mask of taints tracing tolerates (+ its comment)
  module-flags  explicit per-module letter tests (before v4.10)
  trace-event   show_module_flags in include/trace/events/module.h

The recognisers are plain text matchers that accept what the semantic
patches accept (comments and blank lines inside a matched block included).
"""
import re

from taintport.layer import engine
from taintport.layer.engine import (Finding, LayerError, Piece, PieceSpec, TAB, column,
                                    finding, offset_of_line, relayout_like_neighbours,
                                    render_like, tokens)
from taintport.layer.fixes import info

FREE = "bit 13 and letter '{letter}' free for TAINT_UNSIGNED_MODULE"


# ---------------------------------------------------------------- recognisers
# Each takes (text, path, letter) and returns a Finding, or None when the text
# holds no shape it knows.

def _recognise_define(text, path, letter):
    oot = re.search(r"^#define[ \t]+TAINT_OOT_MODULE[ \t]+12\b", text, re.M)
    if not oot:
        return None
    shape = f"#define in {path}"
    ours = re.search(r"^#define[ \t]+TAINT_UNSIGNED_MODULE[ \t]+(\w+)", text, re.M)
    if ours:
        if ours.group(1) == "13":
            return finding("define", shape, path, text, ours.start(), "present")
        return finding("define", shape, path, text, ours.start(), "conflicting",
                        f"TAINT_UNSIGNED_MODULE defined as {ours.group(1)}, not 13")
    for other in re.finditer(r"^#define[ \t]+(TAINT_\w+)[ \t]+13\b", text, re.M):
        if other.group(1) != "TAINT_FLAGS_COUNT":
            return finding("define", shape, path, text, other.start(), "conflicting",
                            f"bit 13 belongs to {other.group(1)}")
    rules = {"define"}
    if re.search(r"^#define[ \t]+TAINT_FLAGS_COUNT[ \t]+13\b", text, re.M):
        rules.add("count")
    return finding("define", shape, path, text, oot.start(), "missing", rules=rules)


# The letter table's shapes: name, SmPL rule, one entry -> (flag, letter).
LETTER_TABLES = (
    ("struct tnt tnts[]", "tnt",
     re.compile(r"\{\s*(TAINT_\w+),\s*'(.)',\s*'.'\s*\}")),
    ("designated taint_flags[]", "designated",
     re.compile(r"\[\s*(TAINT_\w+)\s*\]\s*=\s*\{\s*'(.)',\s*'.',\s*\w+\s*\}")),
    ("TAINT_FLAG() with 4 arguments", "flag4",
     re.compile(r"TAINT_FLAG\(\s*(\w+),\s*'(.)',\s*'.',\s*\w+\s*\)")),
    ("TAINT_FLAG() with 3 arguments", "flag3",
     re.compile(r"TAINT_FLAG\(\s*(\w+),\s*'(.)',\s*'.'\s*\)")),
)


def _recognise_letter(text, path, letter):
    for shape, rule, entry in LETTER_TABLES:
        entries = [(m.group(1) if m.group(1).startswith("TAINT_") else "TAINT_" + m.group(1),
                    m.group(2), m.start()) for m in entry.finditer(text)]
        flags = {flag: (c, at) for flag, c, at in entries}
        if "TAINT_OOT_MODULE" not in flags:
            continue
        return _letter_state("letter", shape, path, text, letter, flags,
                             flags["TAINT_OOT_MODULE"][1], {rule})
    return None


def _letter_state(name, shape, path, text, letter, flags, missing_at, rules):
    """The state of a piece that maps flags to letters, in any of its shapes."""
    if "TAINT_UNSIGNED_MODULE" in flags:
        c, at = flags["TAINT_UNSIGNED_MODULE"]
        if c == letter:
            return finding(name, shape, path, text, at, "present")
        return finding(name, shape, path, text, at, "conflicting",
                        f"TAINT_UNSIGNED_MODULE already has letter '{c}', not '{letter}'")
    for flag, (c, at) in flags.items():
        if c == letter:
            return finding(name, shape, path, text, at, "conflicting",
                            f"letter '{letter}' already belongs to {flag}")
    return finding(name, shape, path, text, missing_at, "missing", rules=rules)


# Comments and blank lines may sit between the notice and the taint, as
# taint_unsigned_sigcheck.cocci allows (SmPL skips them).
SIG_NOTICE = re.compile(
    r"\b(pr_notice_once|printk_once)\([^;]*?module verification failed[^;]*;"
    + engine.GAP + r"add_taint_module\(\s*\w+,\s*(TAINT_\w+),", re.S)
FUNCTION_HEAD = re.compile(r"^[a-z][^;(=]*?\b(\w+)\(", re.M)


def _recognise_sigcheck(text, path, letter):
    m = SIG_NOTICE.search(text)
    if not m:
        return None
    heads = [h.group(1) for h in FUNCTION_HEAD.finditer(text, 0, m.start())]
    function = heads[-1] if heads else "?"
    shape = f"{function}() in {path}, {m.group(1)}"
    at = m.start(2)
    if m.group(2) == "TAINT_UNSIGNED_MODULE":
        return finding("sigcheck", shape, path, text, at, "present")
    if m.group(2) == "TAINT_FORCED_MODULE":
        return finding("sigcheck", shape, path, text, at, "missing", rules={"sigcheck"})
    return None


def _recognise_tracepoint(text, path, letter):
    found = engine.mask(text)
    if not found or found[3][:2] != ["TAINT_OOT_MODULE", "TAINT_CRAP"]:
        return None
    shape, start, _, terms = found
    shape += ": " + "|".join(t[len("TAINT_"):] for t in terms)
    if "TAINT_UNSIGNED_MODULE" in terms:
        return finding("tracepoint", shape, path, text,
                        text.index("TAINT_UNSIGNED_MODULE", start), "present")
    return finding("tracepoint", shape, path, text, text.index("TAINT_CRAP", start),
                    "missing", rules={"tracepoint"})


def _recognise_module_flags(text, path, letter):
    head = re.search(r"^(?:static )?size_t module_flags_taint\(", text, re.M)
    if not head:
        return None
    body = text[head.start():text.find("\n}\n", head.start())]
    if re.search(r"taint_flags\[i\]", body):
        # The letters come from the table: the letter piece covers them.
        return finding("module-flags", "loop over taint_flags[]", path, text,
                        head.start(), "present")
    tests = re.compile(r"if \(\w+->taints & \(1 << (TAINT_\w+)\)\)\n\s*\w+\[\w+\+\+\] = '(.)';")
    flags = {m.group(1): (m.group(2), head.start() + m.start())
             for m in tests.finditer(body)}
    if "TAINT_CRAP" not in flags:
        return None
    return _letter_state("module-flags", "explicit if per letter", path, text, letter,
                         flags, flags["TAINT_CRAP"][1], {"module_flags"})


SHOW_MODULE_FLAGS = re.compile(r"^#define show_module_flags\(flags\)(?:.*\\\n)*.*\n", re.M)
SHOW_ENTRY = re.compile(r"\{ \(1UL << (TAINT_\w+)\),\s*\"(.)\" \}")


def _recognise_trace_event(text, path, letter):
    macro = SHOW_MODULE_FLAGS.search(text)
    if not macro:
        return None
    flags = {m.group(1): (m.group(2), macro.start() + m.start())
             for m in SHOW_ENTRY.finditer(macro.group(0))}
    if "TAINT_CRAP" not in flags:
        return None
    last = max(at for _, at in flags.values())
    return _letter_state("trace-event", "show_module_flags #define", path, text, letter,
                         flags, last, ())

# ------------------------------------------------------------- tracing's mask

MASK_NEW = " | (1 << TAINT_UNSIGNED_MODULE)"


def _relayout_mask(piece, before, after):
    """Put the new mask term where upstream puts it.

    spatch appends it on the TAINT_CRAP line. Upstream: when TAINT_CRAP ends
    the mask, it moves to a continuation line aligned under the first term
    (v3.15); when a line of its own closes the mask, the term gets a line of
    its own above it (v6.0, TAINT_TEST); otherwise it starts the next line
    (v6.3, TAINT_TEST | TAINT_LIVEPATCH). The rule is fitted to those three.
    """
    crap = "(1 << TAINT_CRAP)"
    at = before.index(crap, offset_of_line(before, piece.line))
    if after != before[:at + len(crap)] + MASK_NEW + before[at + len(crap):]:
        raise LayerError(piece.name, piece.path,
                         "spatch to add only (1 << TAINT_UNSIGNED_MODULE) after TAINT_CRAP")
    bol = before.rindex("\n", 0, at) + 1
    eol = before.index("\n", at)
    rest = before[at + len(crap):eol]
    new_term = MASK_NEW[3:]
    if rest == " |":
        nxt_end = before.index("\n", eol + 1)
        nxt = before[eol + 1:nxt_end]
        indent = nxt[:len(nxt) - len(nxt.lstrip())]
        if nxt.rstrip().endswith("|"):
            return before[:eol + 1] + indent + new_term + " | " + nxt.lstrip() + before[nxt_end:]
        return before[:eol + 1] + indent + new_term + " |\n" + before[eol + 1:]
    if rest.startswith(")"):
        first = before.index("(1 << ", before.index("~(", bol))
        col = column(before[bol:first])
        indent = "\t" * (col // TAB) + " " * (col % TAB)
        return (before[:at + len(crap)] + " |\n" + indent + new_term + rest
                + before[eol:])
    return after  # more terms after TAINT_CRAP on its line: no upstream to follow


# --------------------------------------------------------- scripted pieces
# SmPL cannot insert a line into a comment or into a multi-line #define body,
# so these are done here, on the text, and checked by inspect() afterwards.

def _letter_comment(piece, text, letter):
    """print_tainted()'s comment listing letters (to v4.9)."""
    if re.search(rf"^ \*\s+'{letter}' - Unsigned module", text, re.M):
        return text
    return re.sub(r"^( \*\s+)'O' - Out-of-tree module has been loaded\.\n",
                  rf"\g<0>\1'{letter}' - Unsigned module has been loaded.\n", text,
                  count=1, flags=re.M)


def _tracepoint_comment(piece, text, letter):
    """The 3.10 comment above the mask test, as upstream rewrote it."""
    return text.replace("Staging and out-of-tree GPL modules are fine.",
                        "Staging, out-of-tree, and unsigned GPL modules are fine.", 1)


def _show_module_flags(piece, text, letter):
    """Add O (if absent) after P, and the unsigned letter last, as upstream
    did in include/trace/events/module.h. Each new line is rendered like an
    existing entry line."""
    macro = SHOW_MODULE_FLAGS.search(text)
    if macro is None:
        raise LayerError(piece.name, piece.path, "show_module_flags")
    lines = macro.group(0).splitlines(True)
    entries = [i for i, line in enumerate(lines) if SHOW_ENTRY.search(line)]
    if len(entries) < 2:
        raise LayerError(piece.name, piece.path, "show_module_flags with two entries or more")

    def shown(line):
        found = SHOW_ENTRY.search(line)
        assert found, line  # entries holds only the lines SHOW_ENTRY finds
        return found

    def entry(anchor, flag, c):
        words = [w for _, _, w in tokens(anchor)]
        words[words.index(shown(anchor).group(1))] = flag
        words = [f'"{c}"' if re.fullmatch(r'"."', w) else w for w in words]
        return render_like(anchor, words)

    inner, last = lines[entries[-2]], lines[entries[-1]]
    flag, c = shown(last).groups()
    lines[entries[-1]] = entry(inner, flag, c)
    lines.insert(entries[-1] + 1, entry(last, "TAINT_UNSIGNED_MODULE", letter))
    if not any("TAINT_OOT_MODULE" in line for line in lines):
        lines.insert(entries[0] + 1, entry(lines[entries[0]], "TAINT_OOT_MODULE", "O"))
    return text[:macro.start()] + "".join(lines) + text[macro.end():]


# ------------------------------------------------------------------ the pieces

PIECES = (
    PieceSpec("define", ("include/linux/panic.h", "include/linux/kernel.h"),
              "#define TAINT_OOT_MODULE 12", _recognise_define,
              "taint_unsigned_define.cocci", relayout=relayout_like_neighbours, conflict=FREE),
    PieceSpec("letter", ("kernel/panic.c",),
              "a taint letter table with a TAINT_OOT_MODULE entry", _recognise_letter,
              "taint_unsigned_letter.cocci", relayout=relayout_like_neighbours,
              scripted=_letter_comment, conflict=FREE),
    PieceSpec("sigcheck", ("kernel/module/main.c", "kernel/module.c"),
              "add_taint_module() after the \"module verification failed\" notice",
              _recognise_sigcheck, "taint_unsigned_sigcheck.cocci",
              relayout=relayout_like_neighbours),
    PieceSpec("tracepoint", ("kernel/tracepoint.c",),
              "a mask ~((1 << TAINT_OOT_MODULE) | (1 << TAINT_CRAP) ...) of tolerated taints",
              _recognise_tracepoint, "taint_unsigned_tracepoint.cocci",
              relayout=_relayout_mask, scripted=_tracepoint_comment),
    PieceSpec("module-flags", ("kernel/module/main.c", "kernel/module.c"),
              "module_flags_taint() with a TAINT_CRAP test or a taint_flags[] loop",
              _recognise_module_flags, "taint_unsigned_module_flags.cocci",
              relayout=relayout_like_neighbours, conflict=FREE),
    PieceSpec("trace-event", ("include/trace/events/module.h",),
              "#define show_module_flags(flags) with a TAINT_CRAP entry",
              _recognise_trace_event, scripted=_show_module_flags, conflict=FREE),
)


def _applies(read):
    """Module signing (v3.7) is what taints an unsigned module at all."""
    texts = [read(rel) for rel in ("kernel/module/main.c", "kernel/module.c")]
    if any(t is not None for t in texts) and not any("sig_ok" in (t or "") for t in texts):
        return ("this kernel predates module signing (v3.7, no sig_ok in kernel/module.c): "
                "it never taints an unsigned module, so it cannot have this bug")
    return ""


FIX = engine.Fix(name="unsigned", pieces=PIECES, info=info("unsigned"), applies=_applies)
