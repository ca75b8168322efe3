"""Command line: the matrix, and one verb per stage for debugging a single step."""
import argparse
import json
import os
import signal
import sys
import time
import traceback
from collections.abc import Callable
from typing import Mapping
from pathlib import Path
from types import FrameType

from taintport import ci
from taintport.cache import Cache
from taintport.errors import InputError, TaintportError
from taintport.kernel import boot, build
from taintport.layer import carry, dep3, engine, fixes, pointreleases, regen
from taintport.layer.model import FixCondition, PieceState
from taintport.results import compare, folder, render, report
from taintport.results.cells import FAULTS, Matrix, exit_code, fault_in, word
from taintport.results.reports import kcidb
from taintport.results.seen import seen
from taintport.run import bench, matrix, selftests, sources, stages, store
from taintport.run.progress import Progress
from taintport.tree import fetch, series, variants, versions
from taintport.tree.archive import pins
from taintport.tree.archive.indexes import Indexes, standing
from taintport.tree.variants import Variant
from taintport.tree.versions import Version

Args = argparse.Namespace
Verb = Callable[[Args, Cache], int]


def description() -> str:
    """The family of fixes and the variants, as their files say them."""
    family = "\n".join(f"  {fix.name:<11} {fix.info.title} (upstream {fix.commit[:12]}, "
                       f"{fix.release})" for fix in fixes.FIXES)
    rows = "\n".join(f"  {v.name:<11} {v.what}" for v in variants.table().booted())
    return f"""\
Carry a family of kernel fixes (semantic-patches/) onto distribution kernels
and prove them by booting each kernel:
{family}

Each kernel in versions/ is fetched with apt, built from tinyconfig plus
kconfigs/, and booted under QEMU with a dracut initramfs that loads an
out-of-tree module signed, unsigned and forced, and a livepatch. Variants
(test-matrix/variants.toml):
{rows}

Exit codes: 0 every cell as expected, 1 a cell unexpected (the kernel is not
what test-matrix/expectations.toml says), 2 the run itself broke.
"""


def names(values: list[str] | None) -> list[str]:
    """Accept both `--versions a b` and `--versions a,b`."""
    out = []
    for value in values or []:
        out += [v for v in value.split(",") if v]
    return out


def add_common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--cache", type=Path, default=None,
                   help="cache root (default ${XDG_CACHE_HOME:-~/.cache}/taintport, "
                        "or $TAINTPORT_CACHE)")
    p.add_argument("--quilt-dir", type=Path, default=series.QUILT_DIR,
                   help="folder of per-version quilt series (default: quilt/)")
    p.add_argument("--jobs", "-j", type=int, default=build.default_jobs(),
                   help="make -j for kernel builds (default: cores + 1)")


def artifacts_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--artifacts-url", metavar="BASE",
                   help="where the results folder is published: the KCIDB view's URLs "
                        f"become BASE/<path> (default ${kcidb.ARTIFACTS_ENV}, which the "
                        "generated CI pipelines set; else file:// URLs of the folder)")


def versions_dir(p: argparse.ArgumentParser) -> None:
    p.add_argument("--versions-dir", type=Path, default=versions.VERSIONS_DIR, metavar="DIR",
                   help="the version descriptors (default: versions/)")


def fix_params(p: argparse.ArgumentParser) -> None:
    """One option per parameter a fix declares (--letter for the unsigned fix)."""
    for fix in fixes.FIXES:
        for param in fix.params:
            p.add_argument(f"--{param.name}", dest=f"param_{param.name}",
                           metavar=param.name.upper(), help=f"{param.help} ({fix.name} fix)")


def given_params(args: argparse.Namespace) -> dict[str, str]:
    return {fix_param.name: getattr(args, f"param_{fix_param.name}")
            for fix in fixes.FIXES for fix_param in fix.params
            if getattr(args, f"param_{fix_param.name}") is not None}


def one_cell(p: argparse.ArgumentParser) -> None:
    p.add_argument("--version", required=True, help="a name from versions/")
    p.add_argument("--variant", required=True, choices=[v.name for v in variants.table().booted()])


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="taintport", description=description(),
                                  formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = top.add_subparsers(dest="verb", required=True, metavar="VERB")

    p = sub.add_parser("matrix", help="build, boot and judge versions x variants")
    add_common(p)
    p.add_argument("--versions", nargs="+", help="names from versions/ (default: all)")
    p.add_argument("--variants", nargs="+", help="default: " + " ".join(
        v.name for v in variants.table().booted()))
    p.add_argument("--out", type=Path, help="results folder (default results/<timestamp>/)")
    p.add_argument("--timeout", type=int, default=matrix.DEFAULT_TIMEOUT,
                   help="seconds a guest may run before it is killed (default %(default)s)")
    p.add_argument("--parallel", type=int, default=2,
                   help="kernels worked on at once (default %(default)s): one builds while "
                        "another fetches or boots")
    p.add_argument("--rerun", action="store_true",
                   help="build and boot again even when a cell's inputs are unchanged")
    p.add_argument("--build-identical", action="store_true",
                   help="build and boot a variant whose C sources are byte-identical to "
                        "another's (patched vs backported) instead of reusing that cell")
    p.add_argument("--resume", type=Path, metavar="DIR",
                   help="finish an interrupted run in DIR: only the cells it lacks")
    p.add_argument("--fault", choices=FAULTS,
                   help="make the guest agent break on purpose, to test that the harness "
                        "reports an error (never a pass or a fail)")
    artifacts_option(p)

    p = sub.add_parser("fetch", help="download, verify and extract kernel sources")
    add_common(p)
    versions_dir(p)
    p.add_argument("--versions", nargs="+", help="names from versions/ (default: all)")

    p = sub.add_parser("versions", help="list the pinned kernels; --repin moves pins on "
                                        "purpose, --outdated lists pins behind their suites")
    add_common(p)
    versions_dir(p)
    what = p.add_mutually_exclusive_group()
    what.add_argument("--repin", nargs="+", metavar="NAME",
                      help="rewrite these descriptors to the newest upload their suites serve")
    what.add_argument("--outdated", action="store_true",
                      help="list every pin behind what its suites serve now; exit 1 when "
                           "any is, 0 when none, 2 when an index cannot be read")

    p = sub.add_parser("regen", help="rewrite the generated quilt patches from semantic-patches/")
    add_common(p)
    p.add_argument("--versions", nargs="+", help="names from versions/ (default: all)")
    p.add_argument("--check", action="store_true",
                   help="change nothing; exit 1 when a committed patch is stale")

    p = sub.add_parser("check", help="run the layer (no build) on every linux-source the "
                                     "suites of versions/ offer now")
    add_common(p)
    versions_dir(p)
    p.add_argument("--all-point-releases", action="store_true", required=True,
                   help="every linux-source-X.Y version in each suite, one line each")

    p = sub.add_parser("bench", help="measure one cold matrix, reruns and the naive way; "
                                     "write docs/benchmarks.md")
    add_common(p)
    p.add_argument("--versions", nargs="+", help="names from versions/ (default: all)")
    p.add_argument("--out", type=Path, help="results of the bench runs (default "
                                            "results/bench-<timestamp>/)")
    p.add_argument("--parallel", type=int, default=2)
    p.add_argument("--upload-cost", action="store_true",
                   help=f"only phase 5: what moving {bench.UPLOAD_COST} to its pin from the "
                        "upload before costs against its cold build (docs/ is not written)")

    p = sub.add_parser("inspect", help="for each fix and each of its pieces: state and "
                                       "file:line, as the semantic patches judge them")
    p.add_argument("--tree", type=Path, required=True, help="any kernel source tree")
    fix_params(p)

    p = sub.add_parser("apply", help="put a fetched tree into one variant, or carry the "
                                     "layer onto your own tree (--tree)")
    add_common(p)
    p.add_argument("--version", help="a name from versions/ (with --variant)")
    p.add_argument("--variant", choices=[v.name for v in variants.table().from_tree()])
    p.add_argument("--tree", type=Path, help="your kernel tree: push the layer onto it with "
                                            "quilt (patches/), all or nothing")
    fix_params(p)
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

    p = sub.add_parser("build", help="build the kernel, test module and agent of one cell")
    add_common(p)
    one_cell(p)

    p = sub.add_parser("boot", help="boot a built cell once, judge it as the matrix does, "
                                    "print its verdict")
    add_common(p)
    one_cell(p)
    p.add_argument("--timeout", type=int, default=matrix.DEFAULT_TIMEOUT)
    p.add_argument("--accel", choices=("kvm", "tcg"), help="skip the KVM probe")
    p.add_argument("--append", default="", help="extra kernel command line")
    p.add_argument("--out", type=Path, help="results folder for the cell (default "
                                            "results/<timestamp>/)")

    p = sub.add_parser(
        "report", help="re-render reports, compare two runs, merge CI runs",
        formatter_class=argparse.RawDescriptionHelpFormatter, description="""\
  report DIR                   re-render matrix.json's KCIDB view, junit.xml,
                               summary.md and index.html in DIR
  report compare OLD NEW       cells whose status changed, regressions first
                               (exit 1 when a cell became unexpected or an
                               error, or went missing)
  report merge DIR... --out D  one results folder from runs that each did
                               some kernels (CI jobs); a cell twice is an error;
                               D is new or empty, and none of the DIRs
  report kcidb DIR             print DIR's KCIDB view as one JSON document, the
                               form kcidb-submit reads on standard input""")
    p.add_argument("words", nargs="+", metavar="DIR | compare OLD NEW | merge DIR... | kcidb DIR")
    p.add_argument("--out", type=Path, help="with merge: the merged results folder")
    artifacts_option(p)
    p.add_argument("--origin", default=kcidb.ORIGIN,
                   help="with kcidb: the origin the KCIDB instance gave you "
                        "(default %(default)s)")
    p.add_argument("--quilt-dir", type=Path, default=series.QUILT_DIR,
                   help="quilt series whose patches index.html shows (default: quilt/)")

    p = sub.add_parser("ci", help="generate the CI pipelines under ci/ from versions/")
    p.add_argument("--check", action="store_true",
                   help="write nothing; list the ci/ files that drifted (exit 1 if any)")
    p.add_argument("--annotate", type=Path, metavar="DIR",
                   help="print GitHub workflow annotations for DIR's regressions, broken "
                        "cells and known bugs (the generated workflow runs this)")
    p.add_argument("--local", action="store_true",
                   help="run ci/gitlab/ here with gitlab-ci-local (install it with "
                        "'sh tools/install-deps --ci-tools'); --versions narrows it")
    p.add_argument("--versions", nargs="+", help="with --local: names from versions/")
    return top


def cmd_matrix(args: Args, cache: Cache) -> int:
    chosen = versions.select(names(args.versions))
    wanted = [variants.named(name, "--variants") for name in names(args.variants)] or \
        list(variants.table().booted())
    if args.resume and args.out and args.resume != args.out:
        raise InputError("--resume DIR already names the results folder; drop --out")
    if args.resume and not args.resume.is_dir():
        raise InputError(f"--resume {args.resume}: no such results folder")
    out = args.resume or args.out or matrix.default_out()
    kcidb.artifacts(out, args.artifacts_url)  # a bad URL is refused now, not after the run
    with folder.writing(out, resume=bool(args.resume)):
        return run_matrix(args, cache, out, chosen, wanted)


def run_matrix(args: Args, cache: Cache, out: Path, chosen: list[Version],
               wanted: list[Variant]) -> int:
    print(f"results: {out}", flush=True)
    runner = matrix.Runner(cache, out, quilt_dir=args.quilt_dir, jobs=args.jobs,
                           parallel=args.parallel, timeout=args.timeout,
                           reuse=not args.rerun, resume=bool(args.resume),
                           fault=args.fault, reuse_builds=not args.build_identical)
    try:
        code = runner.run(chosen, wanted)
    except KeyboardInterrupt:
        print(f"taintport: interrupted; finished cells are kept in {out}; finish with "
              f"'tools/taintport matrix --resume {out}'", file=sys.stderr)
        return 2
    print()
    report.table(runner.ordered_cells())
    if runner.ordered_cells():
        doc = folder.load_matrix(out)
        render.publish(out, doc, render.read_patches(doc, args.quilt_dir),
                       with_document=bool(args.artifacts_url), artifacts_url=args.artifacts_url)
    print(f"\nmatrix.json: {out / 'matrix.json'}\nreport: {out / 'index.html'}")
    return code


def cmd_fetch(args: Args, cache: Cache) -> int:
    for version in versions.select(names(args.versions), args.versions_dir):
        log = cache.root / "logs" / f"fetch-{version.name}.log"
        with cache.locked(version.name):
            got = fetch.fetch(cache, version, log)
        print(f"{version.name}: {got.tree} ({'reused' if got.reused else 'fetched'}, "
              f"sha256 {got.sha256[:12]}...)")
    return 0


def cmd_versions(args: Args, cache: Cache) -> int:
    if args.repin:
        for version in versions.select(names(args.repin), args.versions_dir):
            log = cache.root / "logs" / f"repin-{version.name}.log"
            with cache.locked(version.name):
                moved = pins.repin(cache, version, log)
            print(f"{version.name}: {moved.old} -> {moved.new}" if moved.old != moved.new
                  else f"{version.name}: {moved.old} is still the newest", f"({moved.shipped})")
        return 0
    if args.outdated:
        return outdated(versions.select([], args.versions_dir), cache)
    for v in versions.select([], args.versions_dir):
        print(f"{v.name:14} {v.release:12} {v.package:17} {v.upload:38} "
              f"sha256 {v.sha256[:16]}...  (from {', '.join(v.suites)})")
    return 0


def outdated(chosen: list[Version], cache: Cache) -> int:
    """Each pin against the newest upload its suites serve: exit 1 when one
    is behind (a scheduled CI job's "a new security upload is out")."""
    indexes = Indexes(cache, cache.root / "logs" / "versions-outdated.log")
    behind = 0
    for v in chosen:
        now = standing(indexes, v)
        if now.current:
            print(f"{v.name:16} {v.upload}: current (the newest in {', '.join(v.suites)})")
            continue
        behind += 1
        newest = f"{now.newest.suite} {now.newest.version}" if now.newest else \
            "nothing: no suite serves the package any more"
        if now.newest and now.newest.version == v.version:
            newest += f" with another sha256 ({now.newest.sha256[:16]}...)"
        print(f"{v.name:16} {v.upload} -> {newest}  OUTDATED "
              f"(taintport versions --repin {v.name})")
    print(f"{behind} of {len(chosen)} pins behind their suites")
    return 1 if behind else 0


def cmd_regen(args: Args, cache: Cache) -> int:
    stale = []
    for version in versions.select(names(args.versions)):
        with cache.locked(version.name):
            log = cache.root / "logs" / f"regen-{version.name}.log"
            tree = fetch.fetch(cache, version,
                               cache.root / "logs" / f"fetch-{version.name}.log").tree
            done = regen.regen(tree, version, args.quilt_dir, log, check=args.check)
        state = ("stale" if args.check else "rewritten") if done.changed else "up to date"
        print(f"{version.name}: {len(done.paths)} generated patches {state} "
              f"(layer {done.seconds:.1f}s; as shipped: {done.upstream})")
        if done.full:
            print(f"{version.name}: on the full pre-fix state: {done.full.summary} "
                  f"(layer {done.full.seconds:.1f}s)")
        if done.changed:
            stale.append(version.name)
    if args.check and stale:
        print(f"taintport: committed patches differ from the semantic patches for "
              f"{', '.join(stale)}; run 'tools/taintport regen'", file=sys.stderr)
        return 1
    return 0


def cell_setup(args: Args, cache: Cache,
               variant: Variant) -> tuple[Version, Path | None, series.Series]:
    """The version, its fetched tree (None when the variant's kernel is not
    built from it) and its series."""
    version = versions.select([args.version])[0]
    tree = None
    if variant.from_tree:
        tree = fetch.fetch(cache, version,
                           cache.root / "logs" / f"fetch-{version.name}.log").tree
    return version, tree, series.load(version.name, args.quilt_dir)


def cmd_check(args: Args, cache: Cache) -> int:
    templates = versions.select([], args.versions_dir)
    log = cache.root / "logs" / "check-point-releases.log"
    outcomes = []
    start = time.monotonic()
    for o in pointreleases.check_all(cache, templates, log):
        print(f"{o.suite:18} {o.package:18} {o.version:20} {o.verdict} ({o.seconds:.1f}s)",
              flush=True)
        outcomes.append(o)
    broken = sum(o.broken for o in outcomes)
    unserved = sum(o.verdict.startswith(pointreleases.NOT_SERVED) for o in outcomes)
    print(f"{len(outcomes)} uploads listed, {len(outcomes) - broken - unserved} checked in "
          f"{time.monotonic() - start:.0f} s; {unserved} not served by their archive, "
          f"{broken} could not be checked")
    # an upload the check could not fetch or read for a reason of its own says
    # nothing about a kernel: the run broke (a tree lacking a fix is a finding,
    # not a failure; an upload its archive does not serve is the archive's state)
    return 2 if broken else 0


def cmd_bench(args: Args, cache: Cache) -> int:
    if args.upload_cost:
        print(bench.upload_table(bench.upload_cost_alone(cache)))
        return 0
    chosen = versions.select(names(args.versions))
    out = args.out or matrix.REPO / "results" / time.strftime("bench-%Y%m%dT%H%M%S")
    text = bench.run(cache, chosen, out, args.parallel)
    bench.write(text)
    print(text)
    return 0


def cmd_inspect(args: Args, cache: Cache) -> int:
    """Each fix, then its pieces; a tree that lacks a fix is a finding, not a failure."""
    if not args.tree.is_dir():
        raise InputError(f"{args.tree}: no such folder (--tree names a kernel source tree)")
    rows = []
    for state in engine.inspect(args.tree, fixes.FIXES, given_params(args)):
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
    return 0


def cmd_apply(args: Args, cache: Cache) -> int:
    if args.results and not (args.tree and args.mail):
        raise InputError("--results backs a stable mail's 'booted' line: give --tree, "
                         "--export and --mail too")
    if args.tree:
        if args.version or args.variant:
            raise InputError("use either --tree DIR or --version/--variant, not both")
        if args.mail and not args.export:
            raise InputError("--mail writes mails into the --export DIR: give --export too")
        boots = seen(args.results) if args.results else []
        identity = (dep3.parse_identity(args.signoff) if args.signoff
                    else dep3.git_identity(args.tree))
        none: Mapping[str, str] = {}
        if args.export:
            done = carry.export(args.tree, given_params(args), args.export, cache, args.mail,
                                identity, boots)
            none = done.no_mail
        else:
            done = carry.apply(args.tree, given_params(args), cache, identity)
        if done.recovered:
            print(f"{args.export or args.tree}: {done.recovered}")
        print(f"{args.tree}: {done.layer.describe(carry.pushed(args.tree, done.layer))}")
        for fix, why in none.items():
            print(f"  {fix}: no stable mail: {why}; wrote the distribution patch only")
        for path in done.written:
            print(f"  {'written' if args.export else 'pushed'}: {path}")
        if done.written and identity is None:
            print("  no identity (--signoff 'Name <mail>', or git's user.name and user.email): "
                  "left out your Signed-off-by and the name on each backport note; add them "
                  "before you send or upload")
        return 0
    if not (args.version and args.variant):
        raise InputError("apply needs --tree DIR, or --version and --variant")
    versions.select([args.version])  # a known name before it names a lock
    with cache.locked(args.version):
        return apply_variant(args, cache)


def apply_variant(args: Args, cache: Cache) -> int:
    variant = variants.named(args.variant, "--variant")
    version, tree, quilt_series = cell_setup(args, cache, variant)
    assert tree is not None  # --variant's choices are the variants built from the tree
    log = cache.root / "logs" / f"apply-{version.name}.log"
    touched = series.switch(tree, quilt_series, variant, log)
    print(f"{tree}: now {args.variant}; series touches {', '.join(sorted(touched)) or 'nothing'}")
    return 0


def cmd_build(args: Args, cache: Cache) -> int:
    """The kernel (unless the distribution built it), test modules and agent of one cell."""
    variant = variants.named(args.variant, "--variant")
    version, tree, quilt_series = cell_setup(args, cache, variant)
    art = sources.of(variant).build(cache, version, tree, quilt_series, variant, args.jobs)
    print(f"{art.bzimage} ({art.release}), {', '.join(map(str, art.modules))}, {art.agent}")
    return 0


def cmd_boot(args: Args, cache: Cache) -> int:
    """One cell through the matrix's own chain (stages.Chain), from the
    artifacts `taintport build` left (for the distribution's binary, made
    here: they take seconds): the same checks, files and verdict."""
    fault = fault_in(args.append)
    if fault is not None and fault not in FAULTS:
        raise InputError(f"--append: taintport.fault={fault!r} is not a fault the agent "
                         f"knows (one of {', '.join(FAULTS)})")
    variant = variants.named(args.variant, "--variant")
    source = sources.of(variant)
    version, tree, quilt_series = cell_setup(args, cache, variant)
    out = args.out or matrix.default_out()
    with folder.writing(out):
        print(f"results: {out}", flush=True)
        progress = Progress(1)
        chain = stages.Chain(cache, out, stages.expectations(), progress, jobs=args.jobs,
                             timeout=args.timeout, append=args.append,
                             accel=boot.Accel(args.accel, "chosen on the command line")
                             if args.accel else None)
        cell = chain.new_cell(version, variant,
                              source.inputs(version, quilt_series, variant))
        try:
            prepared = source.prepared(chain, version, tree, quilt_series, cell)
            chain.boot(cell, prepared)
            # one cell alone: no upstream cell to tell the kernel's own failures by
            selftests.stage(chain, cell, prepared, None)
        except TaintportError as err:
            cell.errors.append(str(err))
        results = folder.Folder(out, time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                                store.tool_versions())
        results.order, results.accelerator = [cell.where], chain.accel
        results.publish(cell)
        progress.close()
    ktap = folder.read_log(out / cell.logs.ktap)
    if ktap is not None:
        print(report.printable(ktap))
    boot_time = cell.timings.boot
    print(f"\n{version.name} {args.variant}: {cell.status.value} "
          f"({cell.accelerator or 'no boot'}, "
          f"{f'{boot_time:.1f}s' if boot_time is not None else 'no boot'}, "
          f"console {out / cell.logs.console})")
    for line in cell.errors:
        print(f"  error: {report.printable(line)}")
    for check in cell.failing:
        print(f"  {check.name}: expected {word(check.expected)}, observed {word(check.observed)}")
    return exit_code([cell])


def locked_cell(func: Verb) -> Verb:
    """apply/build/boot work on one version's tree and build dir: hold its lock."""
    def wrapper(args: Args, cache: Cache) -> int:
        versions.select([args.version])  # a known name before it names a lock
        with cache.locked(args.version):
            return func(args, cache)
    return wrapper


def merge(sources: list[str], out: Path, quilt_dir: Path,
          artifacts_url: str | None = None) -> int:
    """report merge: every source read and checked before out is touched; out
    is new or empty (as matrix's --out) and none of the sources, and gets the
    whole merge at once or nothing (folder.replacing)."""
    for source in sources:
        theirs, mine = Path(source).resolve(), Path(out).resolve()
        if mine.is_relative_to(theirs) or theirs.is_relative_to(mine):
            raise InputError(f"--out {out}: {source} is merged from it: the merged "
                             "results go to a new or empty folder of their own")
    doc = compare.merge(sources)
    # file:// URLs of out, not of the folder the merge is made in
    base = kcidb.artifacts(out, artifacts_url).base
    with folder.replacing(out) as made:
        folder.copy_logs(sources, made)
        written = render.publish(made, doc, render.read_patches(doc, quilt_dir),
                                 with_document=True, artifacts_url=base)
    for path in written:
        print(Path(out) / path.name)
    return doc.exit_code  # a CI report job fails as its cells do


def cmd_report(args: Args, cache: Cache) -> int:
    verb, *rest = args.words
    if verb == "compare":
        if len(rest) != 2:
            raise InputError("usage: taintport report compare OLD NEW")
        changes = compare.compare(*(folder.load_matrix(d) for d in rest))
        for change in changes:
            print(change)
        print(f"{len(changes)} cell(s) changed status")
        return 1 if any(c.worse for c in changes) else 0
    if verb == "merge":
        if not rest or args.out is None:
            raise InputError("usage: taintport report merge DIR... --out DIR")
        return merge(rest, args.out, args.quilt_dir, args.artifacts_url)
    if verb == "kcidb":
        if len(rest) != 1:
            raise InputError("usage: taintport report kcidb DIR [--artifacts-url BASE]")
        view = kcidb.report(folder.load_matrix(rest[0]),
                            kcidb.artifacts(rest[0], args.artifacts_url),
                            kcidb.origin_name(args.origin))
        print(json.dumps(view, indent=2))
        return 0
    if rest:
        raise InputError("usage: taintport report DIR | compare OLD NEW | merge DIR... --out DIR"
                         " | kcidb DIR")
    doc, base = folder.load_published(verb, args.artifacts_url)
    for path in render.republish(Path(verb), doc, render.read_patches(doc, args.quilt_dir),
                                 base):
        print(path)
    return 0


def cmd_ci(args: Args, cache: Cache) -> int:
    if args.annotate:
        print("\n".join(ci.annotations(folder.load_matrix(args.annotate))))
        return 0
    if args.local:
        return ci.run_here([v.name for v in versions.select(names(args.versions))])
    if args.check:
        stale = ci.check_drift()
        for path in stale:
            print(f"{path}: out of date with versions/; run 'tools/taintport ci'")
        return 1 if stale else 0
    for path in ci.write():
        print(path)
    return 0


VERBS: dict[str, Verb] = {"matrix": cmd_matrix, "fetch": cmd_fetch, "versions": cmd_versions,
         "regen": cmd_regen, "check": cmd_check, "bench": cmd_bench, "apply": cmd_apply, "inspect": cmd_inspect,
         "build": locked_cell(cmd_build), "boot": locked_cell(cmd_boot),
         "report": cmd_report, "ci": cmd_ci}


def on_sigterm(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def refused(err: TaintportError) -> int:
    print(f"taintport: error: {report.printable(err)}", file=sys.stderr)
    return 2


def interrupted(args: Args) -> str:
    """What an interrupted run leaves, for the user."""
    if args.verb == "apply" and args.tree:
        return ("the tree (or --export folder) is as before, or holds the journal of a "
                "change half-written, which the next apply rolls back first and says so")
    return "finished cells are kept"


def main(argv: list[str] | None = None) -> int:
    try:
        # the help names the variants: a broken variants.toml is an input error too
        args = parser().parse_args(argv)
    except TaintportError as err:
        return refused(err)
    # SIGTERM (a CI job cancelled, kill) ends the run like Ctrl-C: children
    # killed, finished cells kept.
    signal.signal(signal.SIGTERM, on_sigterm)
    cache = Cache(getattr(args, "cache", None))
    try:
        code = VERBS[args.verb](args, cache)
        sys.stdout.flush()  # a closed pipe is met here, not in the interpreter's exit
        return code
    except TaintportError as err:
        return refused(err)
    except KeyboardInterrupt:
        print(f"taintport: interrupted; {interrupted(args)}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        # the reader went away (`taintport check ... | head`): stop quietly, as a
        # tool that SIGPIPE ended would, with the status a shell gives that one
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 128 + signal.SIGPIPE
    except Exception:  # noqa: BLE001 - exit 1 would say a kernel misbehaved
        traceback.print_exc()
        print("taintport: error: internal error (a bug in taintport, not in a kernel); "
              "the traceback above says where", file=sys.stderr)
        return 2
