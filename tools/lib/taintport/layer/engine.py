# SPDX-License-Identifier: GPL-2.0
"""The layer engine: a family of upstream fixes, judged and carried by spatch.

The caller hands the engine the fixes (taintport.layer.fixes.FIXES, read from
their records, or some of them); the engine never names one. Each piece is judged by its semantic
patch (spatch.py: present, missing or conflicting, at file:line), or, for a
piece no semantic patch can see, by the fix's own judge. generate() carries
the missing pieces fix after fix on a scratch copy: spatch fixes the code,
the piece's re-layout may change whitespace only (checked token by token),
a scripted edit may touch what SmPL cannot, and the semantic patches must
then judge every piece present. The result is one -p1 diff per fix, in
upstream order. A fix a tree already has gives an empty diff ("already
upstream"); a fix a tree cannot have is left out, with the reason ("not
applicable"). Anything unexpected raises LayerError, before any file of the
tree is written: the engine only reads the tree.
"""
import difflib
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Callable, Iterable, Sequence, TypeVar

from taintport.cache import Cache, scratch as scratch_folder, sweep
from taintport.layer import sources, spatch
from taintport.layer.model import (Fix, FixInspection, FixPatch, LayerError, LayerPatch,
                                   Params, Piece, PieceSpec, PieceState, resolve_params)
from taintport.layer.relayout import same_code

# the scratch copies of a tree's files, in the cache (cache.scratch)
SCRATCH = "layer-"
JOBS = 2  # spatch runs at once: the machines the layer runs on have two cores
T = TypeVar("T")
R = TypeVar("R")


def _each(run: Callable[[T], R], items: Iterable[T]) -> list[R]:
    """run on every item, JOBS at a time, in order. Interrupted (Ctrl-C, an
    error in one), the runs not yet started never start: a plain pool's exit
    waited for every queued spatch run, a minute after Ctrl-C on a big tree."""
    pool = ThreadPoolExecutor(max_workers=JOBS)
    try:
        return list(pool.map(run, items))
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _from_verdicts(spec: PieceSpec, rel: str, verdicts: Sequence[spatch.Verdict]) -> Piece:
    for kind, state in (("taken", PieceState.CONFLICTING), ("present", PieceState.PRESENT),
                        ("missing", PieceState.MISSING)):
        mine = sorted((v for v in verdicts if v.kind == kind), key=lambda v: v.span.line)
        if mine:
            detail = "; ".join(dict.fromkeys(v.message for v in mine if v.message))
            return Piece(spec.name, rel, mine[0].span.line, state, detail, mine[0].span)
    raise AssertionError("a verdict of no kind")  # VERDICT matches only these three


def _judged(spec: PieceSpec, root: Path, version: tuple[int, int] | None, params: Params,
            answers: Path, patch: bool) -> tuple[Piece, frozenset[str], Path | None]:
    """(the piece as judged, the rules that fired, spatch's output) on the
    tree at root (files already checked); with patch, spatch also carries a
    missing piece in the same run, into the output file. answers: the
    cache's folder of spatch's answers (spatch_cache)."""
    candidates = spec.candidates(version)
    existing = [rel for rel in candidates if (root / rel).is_file()]
    for rel in existing:
        # no judge can say what a file half-way through a merge holds
        marker = sources.conflict_marker(sources.load(root / rel))
        if marker is not None:
            line, sign = marker
            return (Piece(spec.name, rel, line, PieceState.UNRECOGNISED,
                          f"a merged file, found an unresolved conflict marker ({sign} at "
                          f"line {line}): resolve the merge first"), frozenset(), None)
    if spec.judge is not None:
        for rel in existing:
            found = spec.judge(sources.load(root / rel), rel, params)
            if found:
                return found, frozenset(), None
    else:
        # one run per file: spatch matches the files of one run as one group,
        # where a rule that matched in one file changes what another may match
        for rel in existing:
            out = (root / rel).with_name(f"{Path(rel).name}.spatch-out") if patch else None
            said = spatch.run(spec.cocci, [rel], root, {**params, **dict(spec.defines)},
                              spec.name, answers, out=out)
            if said.verdicts:
                return _from_verdicts(spec, rel, said.verdicts), said.fired, out
    own = candidates[0] if version is not None or not existing else existing[0]
    if own in existing:
        return Piece(spec.name, own, 0, PieceState.UNRECOGNISED, spec.expected), frozenset(), None
    return Piece(spec.name, own, 0, PieceState.NO_FILE, "file not found"), frozenset(), None


def judge(spec: PieceSpec, root: Path, version: tuple[int, int] | None,
          params: Params, answers: Path) -> Piece:
    """The state of one piece in the tree at root (files already checked)."""
    return _judged(spec, root, version, params, answers, patch=False)[0]


def _judge_all(specs: Sequence[PieceSpec], root: Path, version: tuple[int, int] | None,
               params: Params, answers: Path) -> tuple[Piece, ...]:
    return tuple(_each(lambda spec: judge(spec, root, version, params, answers), specs))


def _own_params(fix: Fix, params: Params) -> dict[str, str]:
    return {p.name: params[p.name] for p in fix.params}


def _checked_texts(root: Path, fixes: Sequence[Fix]) -> dict[str, str]:
    """Every file a piece of these fixes can live in that the tree has, read
    byte for byte (a link is refused here, before anything runs)."""
    texts: dict[str, str] = {}
    for fix in fixes:
        for spec in fix.pieces:
            for rel in spec.paths:
                if rel not in texts:
                    text = sources.read_text(root, rel, spec.name)
                    if text is not None:
                        texts[rel] = text
    return texts


def _check_root(tree: Path) -> Path:
    root = Path(tree)
    if not root.is_dir():
        raise LayerError("tree", str(tree), "a folder holding a kernel source tree; "
                         "no such folder")
    return root


def inspect(tree: Path, fixes: Sequence[Fix], params: Params | None = None,
            cache: Cache | None = None) -> list[FixInspection]:
    """Every fix, each piece with its file:line and state in tree (only read);
    spatch's answers kept in the cache (by default the user's)."""
    root = _check_root(tree)
    values = resolve_params(tuple(fixes), params or {})
    texts = _checked_texts(root, fixes)
    version = sources.kernel_version(root)
    # every fix's pieces in one pool: a fix of one piece does not wait for the next
    jobs = [(spec, _own_params(fix, values)) for fix in fixes for spec in fix.pieces]
    answers = (cache or Cache()).spatch_answers()
    judged = iter(_each(lambda job: judge(job[0], root, version, job[1], answers), jobs))
    return [FixInspection(fix, tuple(next(judged) for _ in fix.pieces), fix.applies(texts.get))
            for fix in fixes]


def _refuse_unknown(spec: PieceSpec, piece: Piece) -> None:
    if piece.state is PieceState.NO_FILE:
        raise LayerError(piece.name, piece.path, f"the file ({spec.expected}); file not found")
    if piece.state is PieceState.UNRECOGNISED:
        raise LayerError(piece.name, f"{piece.path}:{piece.line}" if piece.line else piece.path,
                         piece.detail or spec.expected)
    if piece.state is PieceState.CONFLICTING:
        raise LayerError(piece.name, f"{piece.path}:{piece.line}",
                         f"room for the fix, but {piece.detail}")


def _carry_piece(spec: PieceSpec, scratch: Path, version: tuple[int, int] | None,
                 params: Params, answers: Path) -> tuple[Piece, str]:
    """One piece judged and, when missing, carried onto its file in scratch,
    in one spatch run; returns the piece as it was judged and the
    adaptation note of its re-layout ("" when laid out as upstream's)."""
    piece, fired, out = _judged(spec, scratch, version, params, answers, patch=True)
    try:
        if piece.state is not PieceState.MISSING:
            return piece, ""
        path = scratch / piece.path
        # the one file the piece changes: refused here when it could not be given back
        before = sources.check_writable(sources.load(path), piece.path, spec.name)
        text, note = before, ""
        if spec.cocci:
            after = sources.load(out) if out is not None and out.exists() else before
            if not fired or after == before:
                raise LayerError(piece.name, piece.path,
                                 f"a rule of {spec.cocci} to fix the place it reported "
                                 f"(line {piece.line}); fired: {sorted(fired) or 'none'}")
            relaid = spec.relayout(piece, before, after)
            if not same_code(relaid.text, after):
                raise LayerError(piece.name, piece.path,
                                 "a re-layout of spatch's output that changes whitespace only")
            text, note = relaid.text, relaid.note
        if spec.scripted is not None:
            text = spec.scripted(piece, text, params)
        sources.save(path, text)
        return piece, note
    finally:
        if out is not None:
            out.unlink(missing_ok=True)


def _carry_fix(fix: Fix, scratch: Path, version: tuple[int, int] | None,
               params: Params, answers: Path) -> tuple[tuple[Piece, ...], tuple[str, ...]]:
    """Every piece of fix judged and, when missing, carried onto scratch;
    then every piece carried judged present. Returns the pieces as they were judged
    and the adaptation notes; LayerError on anything else."""
    # pieces that can live in the same file one after the other, the others at once
    groups: dict[tuple[str, ...], list[int]] = {}
    for i, spec in enumerate(fix.pieces):
        groups.setdefault(spec.paths, []).append(i)
    done: dict[int, tuple[Piece, str]] = {}

    def carry_group(indices: list[int]) -> None:
        for i in indices:
            done[i] = _carry_piece(fix.pieces[i], scratch, version, params, answers)
    _each(carry_group, groups.values())
    carried = [done[i] for i in range(len(fix.pieces))]
    pieces = tuple(piece for piece, _ in carried)
    for spec, piece in zip(fix.pieces, pieces):
        _refuse_unknown(spec, piece)
    # judged again: every piece carried (the others' code is as it was judged:
    # each change is spatch's, checked token by token, at its own place)
    again = [spec for spec, piece in zip(fix.pieces, pieces)
             if piece.state is PieceState.MISSING]
    if again:
        for after in _judge_all(again, scratch, version, params, answers):
            if after.state is not PieceState.PRESENT:
                raise LayerError(after.name, after.path, "the piece present after patching, "
                                 f"found {after.state.value}"
                                 + (f" ({after.detail})" if after.detail else ""))
    return pieces, tuple(note for _, note in carried if note)


def generate(tree: Path, fixes: Sequence[Fix], params: Params | None = None,
             cache: Cache | None = None) -> LayerPatch:
    """The layer for tree: one -p1 unified diff per fix, in upstream order.

    tree is only read: the work happens on a scratch copy of the files the
    pieces live in, each fix on top of the ones before it, in the cache
    (by default the user's): a killed run's copy is removed by the next run,
    never left in TMPDIR. All or nothing: either every diff or LayerError.
    """
    root = _check_root(tree)
    values = resolve_params(tuple(fixes), params or {})
    texts = _checked_texts(root, fixes)
    version = sources.kernel_version(root)
    cache = cache or Cache()
    parent, answers = cache.scratch_parent(), cache.spatch_answers()
    sweep(parent, SCRATCH)
    with scratch_folder(parent, SCRATCH) as scratch:
        for rel, text in texts.items():
            (scratch / rel).parent.mkdir(parents=True, exist_ok=True)
            sources.save(scratch / rel, text)
        patches = []
        for fix in fixes:
            own = _own_params(fix, values)
            before = {rel: sources.load(scratch / rel) for rel in texts}
            why = fix.applies(before.get)
            if why:
                pieces = _judge_all(fix.pieces, scratch, version, own, answers)
                patches.append(FixPatch(fix, pieces, own, not_applicable=why))
                continue
            pieces, adapted = _carry_fix(fix, scratch, version, own, answers)
            diff = "".join(_unified(rel, before[rel], sources.load(scratch / rel))
                           for rel in sorted(texts))
            patches.append(FixPatch(fix, pieces, own, diff, adapted=adapted))
        after = {rel: sources.load(scratch / rel) for rel in texts}
    changed = {rel: text for rel, text in after.items() if text != texts[rel]}
    diff = "".join(_unified(rel, texts[rel], changed[rel]) for rel in sorted(changed))
    return LayerPatch(diff, tuple(patches), changed)


def transform(fixes: Sequence[Fix], name: str, text: str, params: Params | None = None) -> str:
    """The piece called name carried onto one file's text (what the fixtures
    test): the file sits where the oldest layout keeps it."""
    fix = next(f for f in fixes if any(s.name == name for s in f.pieces))
    spec = next(s for s in fix.pieces if s.name == name)
    values = _own_params(fix, resolve_params(tuple(fixes), params or {}))
    with tempfile.TemporaryDirectory(prefix="taintport-layer-") as scratch_name:
        scratch = Path(scratch_name)
        rel = spec.paths[-1]
        target = scratch / rel
        target.parent.mkdir(parents=True)
        sources.save(target, sources.check_writable(text, rel, spec.name))
        answers = Cache().spatch_answers()
        piece, _ = _carry_piece(spec, scratch, None, values, answers)
        _refuse_unknown(spec, piece)
        if piece.state is PieceState.MISSING:
            after = judge(spec, scratch, None, values, answers)
            if after.state is not PieceState.PRESENT:
                raise LayerError(after.name, after.path, "the piece present after patching, "
                                 f"found {after.state.value}")
        return sources.load(target)


def _unified(rel: str, before: str, after: str) -> str:
    if before == after:
        return ""
    lines = difflib.unified_diff(before.splitlines(True), after.splitlines(True),
                                 f"a/{rel}", f"b/{rel}")
    return "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n"
                   for line in lines)
