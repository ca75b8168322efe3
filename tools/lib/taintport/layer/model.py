# SPDX-License-Identifier: GPL-2.0
"""What the layer knows and says: fixes, their pieces, and their states in a tree.

A fix (semantic-patches/<name>/fix.toml, read by fixes.py) is a list of
pieces plus its header data (taintport.family). A piece lives in one file of
a tree (which one can depend on the kernel's version), is judged and carried
by one semantic patch (a .cocci of its fix's folder, or a shared one with the
record's -D values), and may need a re-layout of what spatch printed or a
scripted edit SmPL cannot make (a comment, a multi-line #define): the
record names them among strategies.py's rules. The engine (engine.py) runs
them; nothing here runs anything.
"""
import enum
import re
from dataclasses import dataclass, field
from typing import Callable, Mapping, Optional

from taintport.errors import InputError
from taintport.family import FixInfo

# the values of the fixes' parameters, by name ({"letter": "E"})
Params = Mapping[str, str]
# a tree's file as the layer reads it: relative path -> text, or None when absent
Read = Callable[[str], Optional[str]]


class LayerError(InputError):
    """A piece of the layer cannot be judged or carried on this tree."""

    def __init__(self, piece: str, path: str, expected: str) -> None:
        self.piece = piece
        self.path = str(path)
        self.expected = expected
        super().__init__(f"layer piece {piece}: {self.path}: expected {expected}")


class PieceState(str, enum.Enum):
    """A piece in a tree, as its semantic patch judges it."""
    PRESENT = "present"            # the fixed code is there
    MISSING = "missing"            # the place the fix goes is there, the fix is not
    CONFLICTING = "conflicting"    # what the fix needs belongs to something else
    UNRECOGNISED = "unrecognised"  # the file is there, no shape the semantic patch knows
    NO_FILE = "no file"            # the file the piece lives in is absent


class FixCondition(str, enum.Enum):
    """A fix in a tree: its pieces taken together."""
    PRESENT = "present"
    MISSING = "missing"
    CONFLICTING = "conflicting"
    UNRECOGNISED = "unrecognised"
    NOT_APPLICABLE = "not applicable"


class Outcome(str, enum.Enum):
    """What the layer did for one fix on one tree."""
    CARRIED = "carried"
    ALREADY_UPSTREAM = "already upstream"
    NOT_APPLICABLE = "not applicable"


@dataclass(frozen=True)
class Span:
    """Where spatch matched: first line and column to last line and column
    (lines from 1, columns from 0, the end column one past the match)."""
    line: int
    column: int
    line_end: int
    column_end: int


@dataclass(frozen=True)
class Piece:
    """One piece of a fix as the judge found it in one tree."""
    name: str
    path: str
    line: int                      # 0 when there is no place to name
    state: PieceState
    detail: str = ""               # what the semantic patch said there
    span: Span | None = None       # the match spatch reported (the place a fix goes)


@dataclass(frozen=True)
class Relaid:
    """A re-layout's result: the file's text, and what a patch header must say
    when the change is not laid out as upstream's hunk ("" when it is)."""
    text: str
    note: str = ""


# (piece as judged, text before, spatch's output) -> the text laid out
Relayout = Callable[[Piece, str, str], Relaid]
# (piece, text, params) -> the text with an edit SmPL cannot make
Scripted = Callable[[Piece, str, Params], str]
# (text, path, params) -> the piece, for a piece no semantic patch can see
TextJudge = Callable[[str, str, Params], Optional[Piece]]


def keep_spatch_output(piece: Piece, before: str, after: str) -> Relaid:
    """The default re-layout: spatch's own output is upstream's layout."""
    return Relaid(after)


@dataclass(frozen=True)
class Where:
    """A file a piece can live in, and the release that put it there."""
    path: str
    since: tuple[int, int] = (0, 0)


@dataclass(frozen=True)
class PieceSpec:
    name: str
    where: tuple[Where, ...]       # newest first: a tree of version V uses the first
    #                                whose `since` is at most V
    expected: str                  # what a tree in no known shape lacks
    cocci: str = ""                # the semantic patch that judges and carries it
    #                                (relative to semantic-patches/)
    defines: tuple[tuple[str, str], ...] = ()  # its -D values, from the record
    judge: TextJudge | None = None  # only for a piece no semantic patch can see,
    not_smpl: str = ""             # and then the record says why SmPL cannot judge it
    relayout: Relayout = keep_spatch_output
    scripted: Scripted | None = None

    @property
    def paths(self) -> tuple[str, ...]:
        return tuple(w.path for w in self.where)

    def candidates(self, version: tuple[int, int] | None) -> tuple[str, ...]:
        """The files to judge, in order: first the one a tree of this version
        keeps the piece in (the newest when the tree does not say its
        version), then the others, for a tree laid out unlike its version."""
        own = next((w.path for w in self.where if version is None or w.since <= version),
                   self.where[-1].path)
        return (own, *(p for p in self.paths if p != own))


@dataclass(frozen=True)
class Param:
    """A value a fix's semantic patches take (-D name=value)."""
    name: str
    default: str
    pattern: str                   # a full match of this regex is a valid value
    describe: str                  # what a valid value is, for an error
    help: str

    def check(self, value: str) -> str:
        if not re.fullmatch(self.pattern, value):
            raise LayerError(self.name, f"-D {self.name}", f"{self.describe}, got {value!r}")
        return value


def _always(read: Read) -> str:
    return ""


@dataclass(frozen=True)
class Fix:
    """One upstream fix of the family: its pieces, parameters and header data."""
    info: FixInfo
    pieces: tuple[PieceSpec, ...]
    # (read) -> "" when the tree can have the bug, else why it cannot
    applies: Callable[[Read], str] = _always
    params: tuple[Param, ...] = ()

    @property
    def name(self) -> str:
        return self.info.name

    @property
    def order(self) -> int:
        return self.info.order

    @property
    def commit(self) -> str:
        return self.info.upstream.commit

    @property
    def release(self) -> str:
        return self.info.upstream.release

    @property
    def patch_name(self) -> str:
        return self.info.patch_name


def resolve_params(fixes: tuple[Fix, ...], given: Params) -> dict[str, str]:
    """Every parameter the fixes declare, checked; the defaults where not given."""
    declared = {p.name: p for fix in fixes for p in fix.params}
    unknown = sorted(set(given) - set(declared))
    if unknown:
        raise InputError(f"unknown parameter(s) {', '.join(unknown)}; the fixes take: "
                         f"{', '.join(sorted(declared)) or 'none'}")
    return {name: p.check(given.get(name, p.default)) for name, p in declared.items()}


@dataclass(frozen=True)
class FixInspection:
    """One fix in one tree: each piece as judged, and whether the tree can
    have the bug at all."""
    fix: Fix
    pieces: tuple[Piece, ...]
    not_applicable: str = ""

    @property
    def condition(self) -> FixCondition:
        if self.not_applicable:
            return FixCondition.NOT_APPLICABLE
        states = {p.state for p in self.pieces}
        if PieceState.CONFLICTING in states:
            return FixCondition.CONFLICTING
        if states & {PieceState.UNRECOGNISED, PieceState.NO_FILE}:
            return FixCondition.UNRECOGNISED
        return FixCondition.MISSING if PieceState.MISSING in states else FixCondition.PRESENT


@dataclass(frozen=True)
class FixPatch:
    """What the layer does for one fix on one tree."""
    fix: Fix
    pieces: tuple[Piece, ...]
    params: Params = field(default_factory=dict)  # the values it was carried with
    diff: str = ""
    not_applicable: str = ""       # why this tree cannot have the bug
    adapted: tuple[str, ...] = ()  # how the hunk departs from upstream's

    @property
    def outcome(self) -> Outcome:
        if self.not_applicable:
            return Outcome.NOT_APPLICABLE
        return Outcome.CARRIED if self.diff else Outcome.ALREADY_UPSTREAM


@dataclass(frozen=True)
class LayerPatch:
    diff: str                      # the whole layer: original -> every fix
    patches: tuple[FixPatch, ...]
    after: Mapping[str, str] = field(default_factory=dict)  # each file the layer changes

    @property
    def pieces(self) -> tuple[Piece, ...]:
        return tuple(p for fp in self.patches for p in fp.pieces)

    @property
    def empty(self) -> bool:
        return self.diff == ""

    @property
    def carried(self) -> tuple[FixPatch, ...]:
        return tuple(fp for fp in self.patches if fp.diff)

    @property
    def summary(self) -> str:
        """One line for logs and reports."""
        return self.describe({})

    def describe(self, pushed: Mapping[str, str]) -> str:
        """The summary, where pushed ({fix: patch}) names the fixes present
        only because taintport's own patch, already pushed, put them there."""
        if not pushed and self.empty and all(fp.outcome is Outcome.ALREADY_UPSTREAM
                                             for fp in self.patches):
            return Outcome.ALREADY_UPSTREAM.value
        words = []
        for fp in self.patches:
            if fp.outcome is Outcome.CARRIED:
                missing = [p.name for p in fp.pieces if p.state is PieceState.MISSING]
                words.append(f"{fp.fix.name}: carried {', '.join(missing)}")
            elif fp.fix.name in pushed:
                words.append(f"{fp.fix.name}: carried by {pushed[fp.fix.name]} (pushed before)")
            else:
                words.append(f"{fp.fix.name}: {fp.outcome.value}")
        return "; ".join(words)
