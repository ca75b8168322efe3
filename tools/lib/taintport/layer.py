"""The taintport layer: upstream's TAINT_UNSIGNED_MODULE, carried onto any tree.

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

inspect() finds each piece's shape and state with plain text recognisers.
generate() patches a scratch copy with the semantic patches in
semantic-patches/ (spatch does the matching and the change, and must prove
that the rule for the recognised shape fired), relays out whitespace that
spatch pretty-prints differently from the kernel, applies the two scripted
pieces SmPL cannot express (comments, a multi-line #define body), checks that
inspect() then finds every piece present, and returns one diff. A tree that
already has the fix gets an empty diff. Anything unexpected raises LayerError.
"""
import difflib
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, NamedTuple

from . import REPO
from .errors import InputError

SEMANTIC_PATCHES = REPO / "semantic-patches"
SPATCH_TIMEOUT = 600
TAB = 8


class LayerError(InputError):
    """A piece of the layer cannot be carried onto this tree."""

    def __init__(self, piece, path, expected):
        self.piece = piece
        self.path = str(path)
        self.expected = expected
        super().__init__(f"layer piece {piece}: {self.path}: expected {expected}")


@dataclass(frozen=True)
class Piece:
    name: str
    shape: str
    path: str
    line: int
    state: str  # "present", "missing" or "conflicting"


@dataclass(frozen=True)
class LayerPatch:
    diff: str
    pieces: tuple[Piece, ...]

    @property
    def empty(self):
        return self.diff == ""

    @property
    def summary(self):
        """One line for logs and reports."""
        if self.empty:
            return "already upstream"
        carried = [p.name for p in self.pieces if p.state == "missing"]
        return "carried: " + ", ".join(carried)


class Finding(NamedTuple):
    """What a recogniser saw: the piece, and why it conflicts (if it does)."""
    piece: Piece
    conflict: str = ""
    rules: frozenset = frozenset()   # spatch rules that must fire to fix it


# ---------------------------------------------------------------- recognisers
# Each takes (text, path, letter) and returns a Finding, or None when the text
# holds no shape it knows.

def _line_of(text, offset):
    return text.count("\n", 0, offset) + 1


def _finding(name, shape, path, text, offset, state, conflict="", rules=()):
    return Finding(Piece(name, shape, path, _line_of(text, offset), state),
                   conflict, frozenset(rules))


def _recognise_define(text, path, letter):
    oot = re.search(r"^#define[ \t]+TAINT_OOT_MODULE[ \t]+12\b", text, re.M)
    if not oot:
        return None
    shape = f"#define in {path}"
    ours = re.search(r"^#define[ \t]+TAINT_UNSIGNED_MODULE[ \t]+(\w+)", text, re.M)
    if ours:
        if ours.group(1) == "13":
            return _finding("define", shape, path, text, ours.start(), "present")
        return _finding("define", shape, path, text, ours.start(), "conflicting",
                        f"TAINT_UNSIGNED_MODULE defined as {ours.group(1)}, not 13")
    for other in re.finditer(r"^#define[ \t]+(TAINT_\w+)[ \t]+13\b", text, re.M):
        if other.group(1) != "TAINT_FLAGS_COUNT":
            return _finding("define", shape, path, text, other.start(), "conflicting",
                            f"bit 13 belongs to {other.group(1)}")
    rules = {"define"}
    if re.search(r"^#define[ \t]+TAINT_FLAGS_COUNT[ \t]+13\b", text, re.M):
        rules.add("count")
    return _finding("define", shape, path, text, oot.start(), "missing", rules=rules)


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
            return _finding(name, shape, path, text, at, "present")
        return _finding(name, shape, path, text, at, "conflicting",
                        f"TAINT_UNSIGNED_MODULE already has letter '{c}', not '{letter}'")
    for flag, (c, at) in flags.items():
        if c == letter:
            return _finding(name, shape, path, text, at, "conflicting",
                            f"letter '{letter}' already belongs to {flag}")
    return _finding(name, shape, path, text, missing_at, "missing", rules=rules)


SIG_NOTICE = re.compile(
    r"\b(pr_notice_once|printk_once)\([^;]*?module verification failed[^;]*;"
    r"\s*add_taint_module\(\s*\w+,\s*(TAINT_\w+),")
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
        return _finding("sigcheck", shape, path, text, at, "present")
    if m.group(2) == "TAINT_FORCED_MODULE":
        return _finding("sigcheck", shape, path, text, at, "missing", rules={"sigcheck"})
    return None


def _mask(text):
    """The tolerated-taints mask: (shape, offset of its '~(', its terms)."""
    fn = re.search(r"^bool trace_module_has_bad_taint\(struct module \*\w+\)\n\{\n"
                   r"\treturn \w+->taints & ~\(", text, re.M)
    if not fn:
        fn = re.search(r"^\tif \(\w+->taints & ~\(", text, re.M)
    if not fn:
        return None
    start = fn.end() - 1
    depth = 0
    for end in range(start, len(text)):
        depth += {"(": 1, ")": -1}.get(text[end], 0)
        if depth == 0:
            break
    terms = re.findall(r"\(1 << (TAINT_\w+)\)", text[start:end])
    shape = ("trace_module_has_bad_taint()" if "trace_module_has_bad_taint" in fn.group(0)
             else "tracepoint_module_coming() inline mask")
    return shape, start, terms


def _recognise_tracepoint(text, path, letter):
    mask = _mask(text)
    if not mask or mask[2][:2] != ["TAINT_OOT_MODULE", "TAINT_CRAP"]:
        return None
    shape, start, terms = mask
    shape += ": " + "|".join(t[len("TAINT_"):] for t in terms)
    if "TAINT_UNSIGNED_MODULE" in terms:
        return _finding("tracepoint", shape, path, text,
                        text.index("TAINT_UNSIGNED_MODULE", start), "present")
    return _finding("tracepoint", shape, path, text, text.index("TAINT_CRAP", start),
                    "missing", rules={"tracepoint"})


def _recognise_module_flags(text, path, letter):
    head = re.search(r"^(?:static )?size_t module_flags_taint\(", text, re.M)
    if not head:
        return None
    body = text[head.start():text.find("\n}\n", head.start())]
    if re.search(r"taint_flags\[i\]", body):
        # The letters come from the table: the letter piece covers them.
        return _finding("module-flags", "loop over taint_flags[]", path, text,
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


# ------------------------------------------------------------- whitespace work

TOKEN = re.compile(r"""^[ \t]*#[ \t]*\w+|'(?:\\.|[^'\\])'|"(?:\\.|[^"\\])*"|\w+|->|<<|>>|\+\+|\S""",
                   re.M)


def _tokens(text):
    return [(m.start(), m.end(), m.group(0).strip()) for m in TOKEN.finditer(text)]


def _skeleton(words):
    return tuple("W" if re.fullmatch(r"\w+", w) else
                 "C" if w.startswith("'") else
                 "S" if w.startswith('"') else w for w in words)


def _column(text):
    col = 0
    for ch in text:
        col = (col // TAB + 1) * TAB if ch == "\t" else col + 1
    return col


def _render_like(anchor, words):
    """Lay out words (one line's tokens) the way anchor lays out its own.

    Spacing inside a field is copied; a gap that holds a tab is an alignment
    gap and is refilled with tabs (then spaces) up to the anchor's column, at
    least one tab. This is how the kernel aligns its tables and #defines.
    """
    toks = _tokens(anchor)
    out = anchor[:toks[0][0]]
    for i, word in enumerate(words):
        out += word
        if i + 1 == len(words):
            break
        gap = anchor[toks[i][1]:toks[i + 1][0]]
        if "\t" not in gap:
            out += gap
            continue
        target = _column(anchor[:toks[i + 1][0]].rsplit("\n", 1)[-1])
        line = out.rsplit("\n", 1)[-1]
        fill = ""
        while (_column(line + fill) // TAB + 1) * TAB <= target:
            fill += "\t"
        fill += " " * max(0, target - _column(line + fill))
        out += fill or "\t"
    return out + anchor[toks[-1][1]:]


def _relayout(piece, before, after):
    """Re-lay out the lines spatch added to before so they look like their
    neighbours. Only whitespace changes: each added line is spatch's own
    tokens rendered like an anchor line with the same token skeleton (the
    line it replaced, or one just above it)."""
    old, new = before.splitlines(True), after.splitlines(True)
    out = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
        if op == "equal":
            out += old[i1:i2]
        if op in ("equal", "delete"):
            continue
        anchors = old[i1:i2] + old[max(0, i1 - 8):i1][::-1]
        words = [w for _, _, w in _tokens("".join(new[j1:j2]))]
        while words:
            for anchor in anchors:
                n = len(_tokens(anchor))
                if n and _skeleton(words[:n]) == _skeleton(w for _, _, w in _tokens(anchor)):
                    out.append(_render_like(anchor, words[:n]))
                    words = words[n:]
                    break
            else:
                raise LayerError(piece.name, piece.path,
                                 "spatch output laid out like its neighbours, got: "
                                 + "".join(new[j1:j2]).strip())
    return "".join(out)


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
    at = before.index(crap, _offset_of_line(before, piece.line))
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
        col = _column(before[bol:first])
        indent = "\t" * (col // TAB) + " " * (col % TAB)
        return (before[:at + len(crap)] + " |\n" + indent + new_term + rest
                + before[eol:])
    return after  # more terms after TAINT_CRAP on its line: no upstream to follow


def _offset_of_line(text, line):
    offset = 0
    for _ in range(line - 1):
        offset = text.index("\n", offset) + 1
    return offset


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
    lines = macro.group(0).splitlines(True)
    entries = [i for i, line in enumerate(lines) if SHOW_ENTRY.search(line)]
    if len(entries) < 2:
        raise LayerError(piece.name, piece.path, "show_module_flags with two entries or more")

    def entry(anchor, flag, c):
        words = [w for _, _, w in _tokens(anchor)]
        words[words.index(SHOW_ENTRY.search(anchor).group(1))] = flag
        words = [f'"{c}"' if re.fullmatch(r'"."', w) else w for w in words]
        return _render_like(anchor, words)

    inner, last = lines[entries[-2]], lines[entries[-1]]
    flag, c = SHOW_ENTRY.search(last).groups()
    lines[entries[-1]] = entry(inner, flag, c)
    lines.insert(entries[-1] + 1, entry(last, "TAINT_UNSIGNED_MODULE", letter))
    if not any("TAINT_OOT_MODULE" in line for line in lines):
        lines.insert(entries[0] + 1, entry(lines[entries[0]], "TAINT_OOT_MODULE", "O"))
    return text[:macro.start()] + "".join(lines) + text[macro.end():]


# ------------------------------------------------------------------ the pieces

@dataclass(frozen=True)
class PieceSpec:
    name: str
    paths: tuple[str, ...]          # where to look, first claim wins
    expected: str                   # what an unknown shape lacks
    recognise: Callable
    cocci: str = ""                 # semantic patch, if SmPL does it
    relayout: Callable = _relayout
    scripted: Callable = None       # text edits SmPL cannot do


PIECES = (
    PieceSpec("define", ("include/linux/panic.h", "include/linux/kernel.h"),
              "#define TAINT_OOT_MODULE 12", _recognise_define,
              "taint_unsigned_define.cocci"),
    PieceSpec("letter", ("kernel/panic.c",),
              "a taint letter table with a TAINT_OOT_MODULE entry", _recognise_letter,
              "taint_unsigned_letter.cocci", scripted=_letter_comment),
    PieceSpec("sigcheck", ("kernel/module/main.c", "kernel/module.c"),
              "add_taint_module() after the \"module verification failed\" notice",
              _recognise_sigcheck, "taint_unsigned_sigcheck.cocci"),
    PieceSpec("tracepoint", ("kernel/tracepoint.c",),
              "a mask ~((1 << TAINT_OOT_MODULE) | (1 << TAINT_CRAP) ...) of tolerated taints",
              _recognise_tracepoint, "taint_unsigned_tracepoint.cocci",
              relayout=_relayout_mask, scripted=_tracepoint_comment),
    PieceSpec("module-flags", ("kernel/module/main.c", "kernel/module.c"),
              "module_flags_taint() with a TAINT_CRAP test or a taint_flags[] loop",
              _recognise_module_flags, "taint_unsigned_module_flags.cocci"),
    PieceSpec("trace-event", ("include/trace/events/module.h",),
              "#define show_module_flags(flags) with a TAINT_CRAP entry",
              _recognise_trace_event, scripted=_show_module_flags),
)
SPEC = {spec.name: spec for spec in PIECES}


def _check_letter(letter):
    if not re.fullmatch(r"[A-Z]", letter):
        raise LayerError("letter", "-D letter", f"one capital letter, got {letter!r}")


def _find(spec, tree, letter):
    """The Finding for one piece of a tree; an unknown shape is missing."""
    for rel in spec.paths:
        if (tree / rel).is_file():
            found = spec.recognise((tree / rel).read_text(), rel, letter)
            if found:
                return found
    present = [rel for rel in spec.paths if (tree / rel).is_file()]
    rel = present[0] if present else spec.paths[-1]
    return Finding(Piece(spec.name, "unknown", rel, 0, "missing"))


def inspect(tree: Path, letter: str = "E") -> list[Piece]:
    """Every piece of the layer: its shape, file:line and state in tree."""
    _check_letter(letter)
    return [_find(spec, Path(tree), letter).piece for spec in PIECES]


# -------------------------------------------------------------------- spatch

# spatch embeds the python3 it finds on PATH unless told which: ours is
# Debian's (a pyenv shim first on PATH also cost a second per run).
SPATCH_PYTHON = ("--python", "/usr/bin/python3")
SPATCH_FAILURES = ("EXN", "An error occurred", "semantic error", "parse error:",
                   "Fatal error", "Traceback")


def _spatch(spec, piece, path, letter):
    """Run spec's semantic patch on path in place; return the rules that fired.

    -D taintport turns on the files' "taintport: fired <rule>" lines, which a
    plain spatch or coccicheck run never prints."""
    out = path.with_name("spatch-out-" + path.name)
    cmd = ["spatch", *SPATCH_PYTHON, "--sp-file", str(SEMANTIC_PATCHES / spec.cocci),
           "-D", "patch", "-D", "taintport", "-D", f"letter={letter}",
           "--no-includes", "--include-headers", "--very-quiet", "-o", str(out), str(path)]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=SPATCH_TIMEOUT)
    except FileNotFoundError:
        raise LayerError(piece.name, piece.path, "spatch installed (Debian: coccinelle)") from None
    except subprocess.TimeoutExpired:
        raise LayerError(piece.name, piece.path, f"spatch to finish in {SPATCH_TIMEOUT}s") from None
    # spatch exits 0 even when a file failed to transform: read what it said.
    said = proc.stdout + proc.stderr
    failed = [line for line in said.splitlines() if any(f in line for f in SPATCH_FAILURES)]
    if proc.returncode != 0 or failed:
        raise LayerError(piece.name, piece.path,
                         f"spatch {spec.cocci} to run cleanly, got: "
                         + ("; ".join(failed) or f"exit {proc.returncode}"))
    if out.exists():
        shutil.move(out, path)
    return {m.group(1) for m in re.finditer(r"^taintport: fired (\w+) ", proc.stdout, re.M)}


def _fix(spec, found, path, letter):
    """Carry one missing piece onto the file at path (a scratch copy)."""
    piece = found.piece
    before = path.read_text()
    text = before
    if spec.cocci:
        fired = _spatch(spec, piece, path, letter)
        if fired != found.rules:
            raise LayerError(piece.name, piece.path,
                             f"spatch rules {sorted(found.rules)} to fire for shape "
                             f"'{piece.shape}', fired: {sorted(fired) or 'none'}")
        text = spec.relayout(piece, before, path.read_text())
    if spec.scripted:
        text = spec.scripted(piece, text, letter)
    path.write_text(text)


def transform(name: str, text: str, letter: str = "E") -> str:
    """One piece applied to one file's text (what the fixtures test)."""
    _check_letter(letter)
    spec = SPEC[name]
    with tempfile.TemporaryDirectory(prefix="taintport-layer-") as scratch:
        rel = spec.paths[-1]
        target = Path(scratch) / rel
        target.parent.mkdir(parents=True)
        target.write_text(text)
        _carry(Path(scratch), [_claim(spec, Path(scratch), rel, letter)], letter)
        return target.read_text()


def _claim(spec, tree, rel, letter):
    found = spec.recognise((tree / rel).read_text(), rel, letter)
    if not found:
        raise LayerError(spec.name, rel, spec.expected)
    return found


def _carry(scratch, findings, letter):
    """Fix every missing piece in scratch, then prove each is present."""
    for found in findings:
        piece = found.piece
        if piece.shape == "unknown":
            raise LayerError(piece.name, piece.path, SPEC[piece.name].expected)
        if piece.state == "conflicting":
            raise LayerError(piece.name, f"{piece.path}:{piece.line}",
                             f"bit 13 and letter '{letter}' free for TAINT_UNSIGNED_MODULE, "
                             f"but {found.conflict}")
    for found in findings:
        if found.piece.state == "missing":
            _fix(SPEC[found.piece.name], found, scratch / found.piece.path, letter)
    for found in findings:
        after = _claim(SPEC[found.piece.name], scratch, found.piece.path, letter)
        if after.piece.state != "present":
            raise LayerError(found.piece.name, found.piece.path,
                             f"the piece present after patching, found {after.piece.state}")


def generate(tree: Path, letter: str = "E") -> LayerPatch:
    """The layer for tree as a -p1 unified diff ("" when already upstream).

    tree is only read: the work happens on a scratch copy of the files the
    pieces live in. All or nothing: either the whole diff or LayerError.
    """
    _check_letter(letter)
    tree = Path(tree)
    findings = [_find(spec, tree, letter) for spec in PIECES]
    pieces = tuple(found.piece for found in findings)
    files = sorted({p.path for p in pieces if (tree / p.path).is_file()})
    with tempfile.TemporaryDirectory(prefix="taintport-layer-") as scratch:
        scratch = Path(scratch)
        for rel in files:
            (scratch / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(tree / rel, scratch / rel)
        _carry(scratch, findings, letter)
        diff = "".join(_unified(rel, (tree / rel).read_text(), (scratch / rel).read_text())
                       for rel in files)
    return LayerPatch(diff, pieces)


def _unified(rel, before, after):
    if before == after:
        return ""
    lines = difflib.unified_diff(before.splitlines(True), after.splitlines(True),
                                 f"a/{rel}", f"b/{rel}")
    return "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n"
                   for line in lines)
