# SPDX-License-Identifier: GPL-2.0
"""The family of fixes, each read from its folder's record.

semantic-patches/<fix>/fix.toml says, besides its header data
(taintport.family), what the layer needs: its pieces (the files each lives
in per layout, its semantic patch and -D values, its re-layout, the edits
SmPL cannot make, a flag table SmPL cannot read), its parameters, and when a
tree can have the bug ([applies]). This module turns those tables into
model.Fix values built from strategies.py's generic rules; no code names a
fix: one is added by adding its folder (docs/new-fix.md).
"""
from typing import Any, Callable

from taintport import family
from taintport.errors import InputError
from taintport.family import SEMANTIC_PATCHES, FixInfo
from taintport.layer.model import (Fix, Param, Params, Piece, PieceSpec, Read, Relayout,
                                   Scripted, TextJudge, Where, keep_spatch_output)
from taintport.layer.relayout import relayout_like_neighbours
from taintport.layer.strategies import (Edit, Edits, FlagTable, Hunk, MaskTerm, Requires,
                                        Shown)

PIECE_FIELDS = ("name", "where", "expected", "cocci", "defines", "relayout", "mask",
                "edits", "table", "not_smpl")


class _Table:
    """One table of a record, read field by field: a wrong type or an
    unknown field is an InputError naming the record and the table."""

    def __init__(self, data: Any, where: str, known: tuple[str, ...]) -> None:
        if not isinstance(data, dict):
            raise InputError(f"{where} must be a table")
        unknown = sorted(set(data) - set(known))
        if unknown:
            raise InputError(f"{where} has unknown field(s) {', '.join(unknown)}")
        self.data, self.where = data, where

    def text(self, key: str, default: str | None = None) -> str:
        value = self.data.get(key, default)
        if not isinstance(value, str):
            raise InputError(f"{self.where}: {key} must be a string")
        return value

    def flag(self, key: str) -> bool:
        value = self.data.get(key, False)
        if not isinstance(value, bool):
            raise InputError(f"{self.where}: {key} must be true or false")
        return value

    def tables(self, key: str, known: tuple[str, ...]) -> list["_Table"]:
        value = self.data.get(key, [])
        if not isinstance(value, list):
            raise InputError(f"{self.where}: {key} must be a list of tables")
        return [_Table(v, f"{self.where} {key}[{i}]", known) for i, v in enumerate(value)]

    def strings(self, key: str) -> tuple[str, ...]:
        value = self.data.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise InputError(f"{self.where}: {key} must be a list of strings")
        return tuple(value)


def _since(text: str, where: str) -> tuple[int, int]:
    major, _, minor = text.partition(".")
    if not (major.isdigit() and minor.isdigit()):
        raise InputError(f"{where}: since must be a release, \"5.14\", got {text!r}")
    return int(major), int(minor)


def _relayout(piece: _Table) -> Relayout:
    kind = piece.text("relayout", "spatch")
    if kind == "spatch":
        return keep_spatch_output
    if kind == "neighbours":
        return relayout_like_neighbours
    if kind == "mask":
        mask = _Table(piece.data.get("mask", {}), f"{piece.where} mask",
                      ("hunks", "wrap_is_upstream", "adapted"))
        return MaskTerm(tuple(Hunk(h.text("before"), h.text("after"))
                              for h in mask.tables("hunks", ("before", "after"))),
                        mask.flag("wrap_is_upstream"), mask.text("adapted", ""))
    raise InputError(f"{piece.where}: relayout must be spatch, neighbours or mask, got {kind!r}")


def _table(piece: _Table, name: str) -> tuple[TextJudge, Scripted]:
    table = _Table(piece.data["table"], f"{piece.where} table",
                   ("macro", "anchor", "flag", "letter", "also"))
    rule = FlagTable(table.text("macro"), table.text("anchor"), table.text("flag"),
                     table.text("letter"),
                     tuple(Shown(a.text("flag"), a.text("letter"))
                           for a in table.tables("also", ("flag", "letter"))))

    def judge(text: str, path: str, params: Params) -> Piece | None:
        return rule.judge(text, path, params, name)
    return judge, rule.edit


def _piece(info: FixInfo, piece: _Table) -> PieceSpec:
    name = piece.text("name")
    where = tuple(Where(w.text("path"), _since(w.text("since", "0.0"), w.where))
                  for w in piece.tables("where", ("path", "since")))
    if not where:
        raise InputError(f"{piece.where}: where must name the file(s) the piece lives in")
    cocci = piece.text("cocci", "")
    if cocci:
        path = (info.folder / cocci).resolve()
        if not path.is_file() or not path.is_relative_to(SEMANTIC_PATCHES.resolve()):
            raise InputError(f"{piece.where}: cocci {cocci!r}: no such file under "
                             f"{SEMANTIC_PATCHES}")
        cocci = str(path.relative_to(SEMANTIC_PATCHES.resolve()))
    defines = piece.data.get("defines", {})
    if not isinstance(defines, dict) or not all(isinstance(v, str) for v in defines.values()):
        raise InputError(f"{piece.where}: defines must be a table of strings")
    edits = tuple(Edit(e.text("pattern"), e.text("replacement"), e.text("unless", ""))
                  for e in piece.tables("edits", ("pattern", "replacement", "unless")))
    judge: TextJudge | None = None
    scripted: Scripted | None = Edits(edits) if edits else None
    not_smpl = piece.text("not_smpl", "")
    if "table" in piece.data:
        if cocci or edits:
            raise InputError(f"{piece.where}: a piece with a table has no cocci and no edits")
        if not not_smpl:
            raise InputError(f"{piece.where}: a piece SmPL does not judge says why (not_smpl)")
        judge, scripted = _table(piece, name)
    elif not cocci or not_smpl:
        raise InputError(f"{piece.where}: a piece is judged by its cocci, or else by a "
                         "table with the reason SmPL cannot (not_smpl)")
    return PieceSpec(name, where, piece.text("expected"), cocci=cocci,
                     defines=tuple(sorted(defines.items())), judge=judge, not_smpl=not_smpl,
                     relayout=_relayout(piece), scripted=scripted)


def _applies(record: dict[str, Any], where: str) -> Callable[[Read], str]:
    if "applies" not in record:
        return lambda read: ""
    applies = _Table(record["applies"], f"{where} [applies]",
                     ("requires", "kind", "in", "reason"))
    kind = applies.text("kind")
    if kind not in ("word", "define"):
        raise InputError(f"{applies.where}: kind must be word or define, got {kind!r}")
    return Requires(applies.text("requires"), kind, applies.strings("in"),
                    applies.text("reason"))


def load(info: FixInfo) -> Fix:
    """One fix, from its record."""
    record = family.read(info.folder)
    where = str(info.folder / family.RECORD)
    top = _Table({k: v for k, v in record.items() if k in family.LAYER_FIELDS}, where,
                 family.LAYER_FIELDS)
    pieces = tuple(_piece(info, p) for p in top.tables("pieces", PIECE_FIELDS))
    if not pieces:
        raise InputError(f"{where}: a fix needs [[pieces]]")
    params = tuple(Param(p.text("name"), p.text("default"), p.text("pattern"),
                         p.text("describe"), p.text("help"))
                   for p in top.tables("params", ("name", "default", "pattern", "describe",
                                                  "help")))
    return Fix(info=info, pieces=pieces, applies=_applies(record, where), params=params)


def _family() -> tuple[Fix, ...]:
    found = tuple(load(info) for info in family.FAMILY)
    for kind, names in (("piece", [s.name for f in found for s in f.pieces]),
                        ("parameter", [p.name for f in found for p in f.params])):
        if len(names) != len(set(names)):
            raise InputError(f"{SEMANTIC_PATCHES}: two fixes declare one {kind}: "
                             f"{', '.join(names)}")
    return found


FIXES = _family()
NAMES = family.NAMES
BY_NAME = {fix.name: fix for fix in FIXES}
PIECES: tuple[PieceSpec, ...] = tuple(spec for fix in FIXES for spec in fix.pieces)
SPEC = {spec.name: spec for spec in PIECES}
