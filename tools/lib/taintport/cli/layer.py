# SPDX-License-Identifier: GPL-2.0
"""The verbs of the layer: regen, inspect, apply."""
import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

from taintport.cache import Cache
from taintport.cli import options
from taintport.cli.verb import AnyVerb, Verb
from taintport.errors import InputError
from taintport.layer import carry, dep3, engine, fixes, regen
from taintport.layer.model import FixCondition, PieceState
from taintport.results.seen import seen
from taintport.tree import fetch, series, variants, versions
from taintport.tree.variants import Variant
from taintport.tree.versions import Version

Args = argparse.Namespace
# what inspect's exit 1 means: a fix the tree can have is not (all) there
NOT_THERE = (FixCondition.MISSING, FixCondition.CONFLICTING, FixCondition.UNRECOGNISED)


@dataclass(frozen=True)
class RegenRequest:
    versions: tuple[Version, ...]
    quilt_dir: Path
    check: bool


def regen_options(p: argparse.ArgumentParser) -> None:
    options.cache(p)
    options.versions_dir(p)
    options.version_names(p)
    options.quilt_dir(p)
    p.add_argument("--check", action="store_true",
                   help="change nothing; exit 1 when a committed patch is stale")


def regen_request(args: Args) -> RegenRequest:
    return RegenRequest(tuple(versions.select(list(options.split_names(args.versions)),
                                              args.versions_dir)), args.quilt_dir, args.check)


def run_regen(req: RegenRequest, cache: Cache) -> int:
    stale = []
    for version in req.versions:
        with cache.locked(version.name):
            log = cache.root / "logs" / f"regen-{version.name}.log"
            tree = fetch.fetch(cache, version,
                               cache.root / "logs" / f"fetch-{version.name}.log").tree
            done = regen.regen(tree, version, req.quilt_dir, log, cache, check=req.check)
        state = ("stale" if req.check else "rewritten") if done.changed else "up to date"
        print(f"{version.name}: {len(done.paths)} generated patches {state} "
              f"(layer {done.seconds:.1f}s; as shipped: {done.upstream})")
        if done.full:
            print(f"{version.name}: on the full pre-fix state: {done.full.summary} "
                  f"(layer {done.full.seconds:.1f}s)")
        if done.changed:
            stale.append(version.name)
    if req.check and stale:
        print(f"taintport: committed patches differ from the semantic patches for "
              f"{', '.join(stale)}; run 'tools/taintport regen'", file=sys.stderr)
        return 1
    return 0


@dataclass(frozen=True)
class InspectRequest:
    tree: Path
    params: dict[str, str]


def tree_option(p: argparse.ArgumentParser, what: str, required: bool = False) -> None:
    p.add_argument("--tree", type=Path, required=required, metavar="DIR", help=what)


def inspect_options(p: argparse.ArgumentParser) -> None:
    tree_option(p, "any kernel source tree (only read)", required=True)
    options.fix_params(p)


def inspect_request(args: Args) -> InspectRequest:
    return InspectRequest(carry.kernel_tree(args.tree), options.given_params(args))


def run_inspect(req: InspectRequest, cache: Cache) -> int:
    """Each fix, then its pieces; exit 1 when a fix the tree can have is not
    there (a script's "is a fix missing?"), as `versions --outdated` does."""
    rows = []
    found = engine.inspect(req.tree, fixes.FIXES, req.params, cache)
    for state in found:
        fix = state.fix
        rows.append((f"{fix.name}:", state.condition.value, f"{fix.commit[:12]} ({fix.release})",
                     state.not_applicable or fix.info.title))
        for p in state.pieces:
            # a tree that cannot have the bug lacks no piece: its place is not a
            # gap, and what the semantic patch says is missing there is moot
            moot = bool(state.not_applicable) and p.state is PieceState.MISSING
            rows.append((f"  {p.name}", FixCondition.NOT_APPLICABLE.value if moot
                         else p.state.value, f"{p.path}:{p.line}" if p.line else p.path,
                         "" if moot else p.detail))
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    for r in rows:
        print("  ".join(r[i].ljust(widths[i]) for i in range(3)) + "  " + r[3])
    return 1 if any(state.condition in NOT_THERE for state in found) else 0


@dataclass(frozen=True)
class TreeRequest:
    """apply --tree: the layer carried onto the user's tree, or exported."""
    tree: Path
    params: dict[str, str]
    export: Path | None
    mail: bool
    identity: dep3.Identity | None
    seen: tuple[dep3.Seen, ...]  # --results: the boots that back a mail's 'booted' line


@dataclass(frozen=True)
class VariantRequest:
    """apply --version --variant: a fetched tree switched to one variant."""
    version: Version
    variant: Variant
    quilt_dir: Path


def apply_options(p: argparse.ArgumentParser) -> None:
    options.cache(p)
    options.versions_dir(p)
    p.add_argument("--version", metavar="NAME", help="a name from versions/ (with --variant)")
    p.add_argument("--variant", choices=[v.name for v in variants.table().from_tree()])
    options.quilt_dir(p, "with --variant: the folder of per-version quilt series",
                      default=None)
    tree_option(p, "your kernel tree: push the layer onto it with quilt (patches/), "
                   "all or nothing")
    options.fix_params(p)
    p.add_argument("--export", type=Path, metavar="DIR",
                   help="with --tree: only write the patches (one per fix) and append them "
                        "to DIR/series")
    p.add_argument("--mail", action="store_true",
                   help="with --export: write each patch as a mail for the stable list "
                        "(git format-patch shape, 'commit <sha> upstream.'), where upstream "
                        "maintains a stable branch for the tree and the tree's change is that "
                        "branch's own hunk; else the patch only, and why")
    p.add_argument("--signoff", metavar="'NAME <MAIL>'",
                   help="with --tree: who carries the patches: the name on a backport note "
                        "and your Signed-off-by (default: git's user.name and user.email)")
    p.add_argument("--results", type=Path, metavar="DIR",
                   help="with --mail: a results folder whose boots of the tree as shipped "
                        "back the mail's 'booted with the bug seen' line (left out without)")


def apply_request(args: Args) -> TreeRequest | VariantRequest:
    if args.results and not (args.tree and args.mail):
        raise InputError("--results backs a stable mail's 'booted' line: give --tree, "
                         "--export and --mail too")
    if args.tree:
        options.unused(args, "apply --tree", {
            "version": "use either --tree DIR or --version/--variant, not both",
            "variant": "use either --tree DIR or --version/--variant, not both",
            "quilt_dir": "--quilt-dir is for --version/--variant; --tree carries the "
                         "layer from semantic-patches/",
            "versions_dir": "--versions-dir is for --version/--variant"})
        if args.mail and not args.export:
            raise InputError("--mail writes mails into the --export DIR: give --export too")
        tree = carry.kernel_tree(args.tree)
        return TreeRequest(tree, options.given_params(args), args.export, args.mail,
                           dep3.parse_identity(args.signoff) if args.signoff
                           else dep3.git_identity(tree),
                           tuple(seen(args.results)) if args.results else ())
    options.unused(args, "apply --version/--variant", {
        "export": "--export is for --tree", "mail": "--mail is for --tree --export",
        "signoff": "--signoff is for --tree",
        **{f"param_{p.name}": f"--{p.name} is for --tree"
           for fix in fixes.FIXES for p in fix.params}})
    if not (args.version and args.variant):
        raise InputError("apply needs --tree DIR, or --version and --variant")
    return VariantRequest(versions.select([args.version], args.versions_dir)[0],
                          variants.named(args.variant, "--variant"),
                          args.quilt_dir or series.QUILT_DIR)


def run_apply(req: TreeRequest | VariantRequest, cache: Cache) -> int:
    if isinstance(req, VariantRequest):
        return apply_variant(req, cache)
    try:
        return carry_tree(req, cache)
    except KeyboardInterrupt:
        print("taintport: interrupted; the tree (or --export folder) is as before, or holds "
              "the journal of a change half-written, which the next apply rolls back first "
              "and says so", file=sys.stderr)
        return 2


def carry_tree(req: TreeRequest, cache: Cache) -> int:
    none: dict[str, str] = {}
    if req.export:
        done = carry.export(req.tree, req.params, req.export, cache, req.mail, req.identity,
                            req.seen)
        none = dict(done.no_mail)
    else:
        done = carry.apply(req.tree, req.params, cache, req.identity)
    if done.recovered:
        print(f"{req.export or req.tree}: {done.recovered}")
    print(f"{req.tree}: {done.layer.describe(carry.pushed(req.tree, done.layer))}")
    for fix, why in none.items():
        print(f"  {fix}: no stable mail: {why}; wrote the distribution patch only")
    for path in done.written:
        print(f"  {'written' if req.export else 'pushed'}: {path}")
    if done.written and req.identity is None:
        print("  no identity (--signoff 'Name <mail>', or git's user.name and user.email): "
              "left out your Signed-off-by and the name on each backport note; add them "
              "before you send or upload")
    return 0


def apply_variant(req: VariantRequest, cache: Cache) -> int:
    with cache.locked(req.version.name):
        tree = fetch.fetch(cache, req.version,
                           cache.root / "logs" / f"fetch-{req.version.name}.log").tree
        log = cache.root / "logs" / f"apply-{req.version.name}.log"
        touched = series.switch(tree, series.load(req.version.name, req.quilt_dir),
                                req.variant, log)
    print(f"{tree}: now {req.variant}; series touches {', '.join(sorted(touched)) or 'nothing'}")
    return 0


VERBS: list[AnyVerb] = [
    Verb("regen", "rewrite the generated quilt patches from semantic-patches/",
         regen_options, regen_request, run_regen),
    Verb("inspect", "for each fix and each of its pieces: state and file:line, as the "
                    "semantic patches judge them; exit 1 when a fix is not there",
         inspect_options, inspect_request, run_inspect),
    Verb("apply", "put a fetched tree into one variant, or carry the layer onto your own "
                  "tree (--tree)", apply_options, apply_request, run_apply),
]
