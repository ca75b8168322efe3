"""The taintport layer engine: a family of upstream fixes, carried onto any tree.

A fix (tools/lib/taintport/layer/fixes/<name>.py, with its semantic patches and
patch header under semantic-patches/) is a list of pieces. Each piece knows
the files it lives in, recognises its shapes there (present, missing or
conflicting), and is fixed by a semantic patch, a re-layout of what spatch
added, and sometimes a scripted text edit SmPL cannot express. The engine
never names a fix: it finds every piece, carries the missing ones fix after
fix on a scratch copy (spatch must prove that the rule for the recognised
shape fired), checks that each piece is then present, and returns one diff
per fix, in upstream order. A fix a tree already has gives an empty diff
("already upstream"); a fix a tree cannot have ("not applicable", with the
reason) is left out. Anything unexpected raises LayerError.
"""
import difflib
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, NamedTuple

from taintport import REPO
from taintport.errors import InputError

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


class Finding(NamedTuple):
    """What a recogniser saw: the piece, and why it conflicts (if it does)."""
    piece: Piece
    conflict: str = ""
    rules: frozenset = frozenset()   # spatch rules that must fire to fix it


def keep_spatch_output(piece, before, after):
    """The default re-layout: spatch's own output is already right."""
    return after


@dataclass(frozen=True)
class PieceSpec:
    name: str
    paths: tuple[str, ...]          # where to look, first claim wins
    expected: str                   # what an unknown shape lacks
    recognise: Callable             # (text, path, letter) -> Finding | None
    cocci: str = ""                 # semantic patch, if SmPL does it
    relayout: Callable = keep_spatch_output
    scripted: Callable | None = None  # text edits SmPL cannot do
    conflict: str = ""              # what must be free for the piece, said on a conflict


@dataclass(frozen=True)
class Fix:
    """One upstream fix of the family: its pieces and its patch header data."""
    name: str
    pieces: tuple[PieceSpec, ...]
    info: dict                      # semantic-patches/<name>.toml
    # (read) -> "" when the tree can have the bug, else why it cannot;
    # read(rel) gives a file's text or None
    applies: Callable = field(default=lambda read: "")
    # (missing piece) -> "" when the hunk is upstream's text, else what was adapted
    adaptation: Callable = field(default=lambda piece: "")

    @property
    def order(self):
        return self.info["order"]

    @property
    def commit(self):
        return self.info["upstream"]["commit"]

    @property
    def release(self):
        return self.info["upstream"]["release"]

    @property
    def patch_name(self):
        return self.info["patch"]["name"]


@dataclass(frozen=True)
class FixPatch:
    """What the layer does for one fix on one tree."""
    fix: Fix
    pieces: tuple[Piece, ...]
    diff: str = ""
    not_applicable: str = ""        # why this tree cannot have the bug
    adapted: tuple[str, ...] = ()   # how the hunk departs from upstream's text

    @property
    def state(self):
        if self.not_applicable:
            return "not applicable"
        return "carried" if self.diff else "already upstream"


@dataclass(frozen=True)
class LayerPatch:
    diff: str                       # the whole layer: original -> every fix
    patches: tuple[FixPatch, ...]

    @property
    def pieces(self):
        return tuple(p for fp in self.patches for p in fp.pieces)

    @property
    def empty(self):
        return self.diff == ""

    @property
    def carried(self):
        return tuple(fp for fp in self.patches if fp.diff)

    @property
    def summary(self):
        """One line for logs and reports."""
        words = []
        for fp in self.patches:
            if fp.state == "carried":
                missing = [p.name for p in fp.pieces if p.state == "missing"]
                words.append(f"{fp.fix.name}: carried {', '.join(missing)}")
            elif fp.state == "not applicable":
                words.append(f"{fp.fix.name}: not applicable")
            else:
                words.append(f"{fp.fix.name}: already upstream")
        if self.empty and all(fp.state == "already upstream" for fp in self.patches):
            return "already upstream"
        return "; ".join(words)


def _fixes(names=None):
    from taintport.layer.fixes import FIXES  # the fixes import this engine
    if names is None:
        return FIXES
    return tuple(f for f in FIXES if f.name in names)


def _spec(name):
    from taintport.layer.fixes import SPEC
    return SPEC[name]


# ---------------------------------------------------------- recogniser tools

def line_of(text, offset):
    return text.count("\n", 0, offset) + 1


def finding(name, shape, path, text, offset, state, conflict="", rules=()):
    return Finding(Piece(name, shape, path, line_of(text, offset), state),
                   conflict, frozenset(rules))


# Whitespace, blank lines and comments between two tokens of a matched block:
# SmPL's "..." and token matching skip them, so the recognisers must too.
GAP = r"(?:\s|/\*.*?\*/|//[^\n]*)*"


def mask(text):
    """The tolerated-taints mask of tracing: (shape, offset of its '~(',
    offset of its closing ')', its terms). The mask is returned by
    trace_module_has_bad_taint() (v3.15, and 3.10/3.14 stable) or tested
    inline in tracepoint_module_coming() (3.10)."""
    fn = re.search(rf"^bool trace_module_has_bad_taint\(struct module \*\w+\)\n\{{{GAP}"
                   r"return \w+->taints & ~\(", text, re.M | re.S)
    shape = "trace_module_has_bad_taint()"
    if not fn:
        fn = re.search(r"^\tif \(\w+->taints & ~\(", text, re.M)
        shape = "tracepoint_module_coming() inline mask"
    if not fn:
        return None
    start = fn.end() - 1
    depth = 0
    for end in range(start, len(text)):
        depth += {"(": 1, ")": -1}.get(text[end], 0)
        if depth == 0:
            break
    terms = re.findall(r"\(1 << (TAINT_\w+)\)", text[start:end])
    return shape, start, end, terms


# ------------------------------------------------------------- whitespace work

TOKEN = re.compile(r"""^[ \t]*#[ \t]*\w+|'(?:\\.|[^'\\])'|"(?:\\.|[^"\\])*"|\w+|->|<<|>>|\+\+|\S""",
                   re.M)


def tokens(text):
    return [(m.start(), m.end(), m.group(0).strip()) for m in TOKEN.finditer(text)]


def _skeleton(words):
    return tuple("W" if re.fullmatch(r"\w+", w) else
                 "C" if w.startswith("'") else
                 "S" if w.startswith('"') else w for w in words)


def column(text):
    col = 0
    for ch in text:
        col = (col // TAB + 1) * TAB if ch == "\t" else col + 1
    return col


def render_like(anchor, words):
    """Lay out words (one line's tokens) the way anchor lays out its own.

    Spacing inside a field is copied; a gap that holds a tab is an alignment
    gap and is refilled with tabs (then spaces) up to the anchor's column, at
    least one tab. This is how the kernel aligns its tables and #defines.
    """
    toks = tokens(anchor)
    out = anchor[:toks[0][0]]
    for i, word in enumerate(words):
        out += word
        if i + 1 == len(words):
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


def relayout_like_neighbours(piece, before, after):
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
        words = [w for _, _, w in tokens("".join(new[j1:j2]))]
        while words:
            for anchor in anchors:
                n = len(tokens(anchor))
                if n and _skeleton(words[:n]) == _skeleton(w for _, _, w in tokens(anchor)):
                    out.append(render_like(anchor, words[:n]))
                    words = words[n:]
                    break
            else:
                raise LayerError(piece.name, piece.path,
                                 "spatch output laid out like its neighbours, got: "
                                 + "".join(new[j1:j2]).strip())
    return "".join(out)


def offset_of_line(text, line):
    offset = 0
    for _ in range(line - 1):
        offset = text.index("\n", offset) + 1
    return offset


def check_letter(letter):
    if not re.fullmatch(r"[A-Z]", letter):
        raise LayerError("letter", "-D letter", f"one capital letter, got {letter!r}")


# ------------------------------------------------------------------ recognition

def _find(spec, read, letter):
    """The Finding for one piece; an unknown shape is missing."""
    for rel in spec.paths:
        text = read(rel)
        if text is not None:
            found = spec.recognise(text, rel, letter)
            if found:
                return found
    present = [rel for rel in spec.paths if read(rel) is not None]
    if not present:
        return Finding(Piece(spec.name, "file not found", spec.paths[-1], 0, "missing"))
    return Finding(Piece(spec.name, "unknown", present[0], 0, "missing"))


def reader(tree):
    tree = Path(tree)

    def read(rel):
        path = tree / rel
        return path.read_text(errors="replace") if path.is_file() else None
    return read


@dataclass(frozen=True)
class FixState:
    """inspect()'s view of one fix in one tree."""
    fix: Fix
    pieces: tuple[Piece, ...]
    not_applicable: str = ""

    @property
    def state(self):
        if self.not_applicable:
            return "not applicable"
        states = {p.state for p in self.pieces}
        if "conflicting" in states:
            return "conflicting"
        return "missing" if "missing" in states else "present"


def inspect_fixes(tree=None, letter="E", read=None, fixes=None) -> list[FixState]:
    """Every fix, each piece with its shape, file:line and state in tree."""
    check_letter(letter)
    read = read or reader(tree)
    out = []
    for fix in _fixes(fixes):
        why = fix.applies(read)
        pieces = tuple(_find(spec, read, letter).piece for spec in fix.pieces)
        out.append(FixState(fix, pieces, why))
    return out


def inspect(tree: Path, letter: str = "E") -> list[Piece]:
    """Every piece of every fix, in order."""
    return [p for fs in inspect_fixes(tree, letter) for p in fs.pieces]


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


def _fix_piece(spec, found, path, letter):
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


def _claim(spec, tree, rel, letter):
    found = spec.recognise((tree / rel).read_text(), rel, letter)
    if not found:
        raise LayerError(spec.name, rel, spec.expected)
    return found


def _carry(scratch, findings, letter):
    """Fix every missing piece in scratch, then prove each is present."""
    for found in findings:
        piece = found.piece
        spec = _spec(piece.name)
        if piece.shape == "file not found":
            raise LayerError(piece.name, piece.path, f"the file ({spec.expected}); "
                             "file not found")
        if piece.shape == "unknown":
            raise LayerError(piece.name, piece.path, spec.expected)
        if piece.state == "conflicting":
            raise LayerError(piece.name, f"{piece.path}:{piece.line}",
                             f"{spec.conflict.format(letter=letter)}, but {found.conflict}")
    for found in findings:
        if found.piece.state == "missing":
            _fix_piece(_spec(found.piece.name), found, scratch / found.piece.path, letter)
    for found in findings:
        after = _claim(_spec(found.piece.name), scratch, found.piece.path, letter)
        if after.piece.state != "present":
            raise LayerError(found.piece.name, found.piece.path,
                             f"the piece present after patching, found {after.piece.state}")


def transform(name: str, text: str, letter: str = "E") -> str:
    """One piece applied to one file's text (what the fixtures test)."""
    check_letter(letter)
    spec = _spec(name)
    with tempfile.TemporaryDirectory(prefix="taintport-layer-") as scratch:
        rel = spec.paths[-1]
        target = Path(scratch) / rel
        target.parent.mkdir(parents=True)
        target.write_text(text)
        _carry(Path(scratch), [_claim(spec, Path(scratch), rel, letter)], letter)
        return target.read_text()


def generate(tree: Path, letter: str = "E", fixes=None) -> LayerPatch:
    """The layer for tree: one -p1 unified diff per fix, in upstream order.

    tree is only read: the work happens on a scratch copy of the files the
    pieces live in, each fix on top of the ones before it. All or nothing:
    either every diff or LayerError.
    """
    check_letter(letter)
    tree = Path(tree)
    chosen = _fixes(fixes)
    files = sorted({rel for fix in chosen for spec in fix.pieces for rel in spec.paths
                    if (tree / rel).is_file()})
    with tempfile.TemporaryDirectory(prefix="taintport-layer-") as scratch_name:
        scratch = Path(scratch_name)
        for rel in files:
            (scratch / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(tree / rel, scratch / rel)
        patches = []
        for fix in chosen:
            read = reader(scratch)
            why = fix.applies(read)
            findings = [_find(spec, read, letter) for spec in fix.pieces]
            pieces = tuple(found.piece for found in findings)
            if why:
                patches.append(FixPatch(fix, pieces, not_applicable=why))
                continue
            before = {rel: (scratch / rel).read_text() for rel in files}
            _carry(scratch, findings, letter)
            diff = "".join(_unified(rel, before[rel], (scratch / rel).read_text())
                           for rel in files)
            adapted = tuple(note for note in (fix.adaptation(p) for p in pieces
                                              if p.state == "missing") if note)
            patches.append(FixPatch(fix, pieces, diff, adapted=adapted))
        diff = "".join(_unified(rel, (tree / rel).read_text(), (scratch / rel).read_text())
                       for rel in files)
    return LayerPatch(diff, tuple(patches))


def _unified(rel, before, after):
    if before == after:
        return ""
    lines = difflib.unified_diff(before.splitlines(True), after.splitlines(True),
                                 f"a/{rel}", f"b/{rel}")
    return "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n"
                   for line in lines)
