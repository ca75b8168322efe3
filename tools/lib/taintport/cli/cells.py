# SPDX-License-Identifier: GPL-2.0
"""The verbs that build and boot cells: matrix, build, boot, bench."""
import argparse
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from taintport.cache import Cache
from taintport.cli import options
from taintport.cli.verb import AnyVerb, Verb
from taintport.errors import InputError, TaintportError
from taintport.kernel import boot
from taintport.results import folder, render, report
from taintport.results.cells import FAULTS, exit_code, fault_in, word
from taintport.run import bench, matrix, selftests, sources, stages, store
from taintport.run.progress import Progress
from taintport.tree import fetch, series, variants, versions
from taintport.tree.variants import Variant
from taintport.tree.versions import Version

Args = argparse.Namespace


@dataclass(frozen=True)
class MatrixRequest:
    versions: tuple[Version, ...]
    variants: tuple[Variant, ...]
    out: Path | None          # None: a new results/<timestamp>/, made when the run starts
    resume: bool
    quilt_dir: Path
    jobs: int
    parallel: int
    timeout: int
    rerun: bool
    build_identical: bool
    artifacts_url: str | None


def matrix_options(p: argparse.ArgumentParser) -> None:
    options.cache(p)
    options.versions_dir(p)
    options.version_names(p)
    p.add_argument("--variants", nargs="+", metavar="NAME",
                   help="default: " + " ".join(options.booted()))
    options.out(p, "results folder, new or empty (default results/<timestamp>/)")
    options.quilt_dir(p)
    options.jobs(p)
    options.parallel(p)
    options.timeout(p)
    p.add_argument("--rerun", action="store_true",
                   help="build and boot again even when a cell's inputs are unchanged")
    p.add_argument("--build-identical", action="store_true",
                   help="build and boot a variant whose C sources are byte-identical to "
                        "another's (patched vs backported) instead of reusing that cell")
    p.add_argument("--resume", type=Path, metavar="DIR",
                   help="finish an interrupted run in DIR: only the cells it lacks")
    options.artifacts_url(p)


def matrix_request(args: Args) -> MatrixRequest:
    if args.resume and args.out and args.resume != args.out:
        raise InputError("--resume DIR already names the results folder; drop --out")
    if args.resume and not args.resume.is_dir():
        raise InputError(f"--resume {args.resume}: no such results folder")
    return MatrixRequest(
        versions=tuple(versions.select(list(options.split_names(args.versions)),
                                       args.versions_dir)),
        variants=tuple(variants.named(name, "--variants")
                       for name in options.split_names(args.variants))
        or tuple(variants.table().booted()),
        out=args.resume or options.new_folder(args.out), resume=bool(args.resume),
        quilt_dir=args.quilt_dir, jobs=args.jobs, parallel=args.parallel,
        timeout=args.timeout, rerun=args.rerun, build_identical=args.build_identical,
        artifacts_url=options.checked_url(args.artifacts_url))


def run_matrix(req: MatrixRequest, cache: Cache) -> int:
    out = req.out or matrix.default_out()
    with folder.writing(out, resume=req.resume):
        print(f"results: {out}", flush=True)
        runner = matrix.Runner(cache, out, quilt_dir=req.quilt_dir, jobs=req.jobs,
                               parallel=req.parallel, timeout=req.timeout,
                               reuse=not req.rerun, resume=req.resume,
                               reuse_builds=not req.build_identical)
        try:
            code = runner.run(list(req.versions), list(req.variants))
        except KeyboardInterrupt:
            print(f"taintport: interrupted; the cells that finished are kept in {out}; "
                  f"finish with 'tools/taintport matrix --resume {out}'", file=sys.stderr)
            return 2
        print()
        report.table(runner.ordered_cells())
        if runner.ordered_cells():
            doc = folder.load_matrix(out)
            render.publish(out, doc, render.read_patches(doc, req.quilt_dir),
                           with_document=bool(req.artifacts_url),
                           artifacts_url=req.artifacts_url)
    print(f"\nmatrix.json: {out / 'matrix.json'}\nreport: {out / 'index.html'}")
    return code


@dataclass(frozen=True)
class CellRequest:
    """One cell of the matrix, for build and boot."""
    version: Version
    variant: Variant
    quilt_dir: Path
    jobs: int


def cell_options(p: argparse.ArgumentParser) -> None:
    options.cache(p)
    options.versions_dir(p)
    options.one_cell(p, options.booted())
    options.quilt_dir(p)
    options.jobs(p)


def cell_request(args: Args) -> CellRequest:
    return CellRequest(versions.select([args.version], args.versions_dir)[0],
                       variants.named(args.variant, "--variant"), args.quilt_dir, args.jobs)


def cell_tree(req: CellRequest, cache: Cache) -> tuple[Path, series.Series]:
    """The cell's fetched tree (its kernel's, or the distribution's binary's
    selftests') and series."""
    tree = fetch.fetch(cache, req.version,
                       cache.root / "logs" / f"fetch-{req.version.name}.log").tree
    return tree, series.load(req.version.name, req.quilt_dir)


def run_build(req: CellRequest, cache: Cache) -> int:
    """The kernel (unless the distribution built it), test modules and agent of one cell."""
    with cache.locked(req.version.name):
        tree, quilt_series = cell_tree(req, cache)
        art = sources.of(req.variant).build(cache, req.version, tree, quilt_series,
                                            req.variant, req.jobs)
    print(f"{art.bzimage} ({art.release}), {', '.join(map(str, art.modules))}, {art.agent}")
    return 0


@dataclass(frozen=True)
class BootRequest:
    cell: CellRequest
    timeout: int
    accel: boot.Accel | None
    append: str
    out: Path | None


def boot_options(p: argparse.ArgumentParser) -> None:
    cell_options(p)
    options.timeout(p)
    p.add_argument("--accel", choices=("kvm", "tcg"), help="skip the KVM probe")
    p.add_argument("--append", default="", metavar="WORDS",
                   help="more kernel command line (taintport.fault=NAME makes the guest "
                        f"agent break on purpose: {', '.join(FAULTS)})")
    options.out(p, "results folder for the cell, new or empty "
                   "(default results/<timestamp>/)")


def boot_request(args: Args) -> BootRequest:
    fault = fault_in(args.append)
    if fault is not None and fault not in FAULTS:
        raise InputError(f"--append: taintport.fault={fault!r} is not a fault the agent "
                         f"knows (one of {', '.join(FAULTS)})")
    return BootRequest(cell_request(args), args.timeout,
                       boot.Accel(args.accel, "chosen on the command line")
                       if args.accel else None, args.append, options.new_folder(args.out))


def run_boot(req: BootRequest, cache: Cache) -> int:
    """One cell through the matrix's own chain (stages.Chain), from the
    artifacts `taintport build` left (for the distribution's binary, made
    here: they take seconds): the same checks, files and verdict."""
    with cache.locked(req.cell.version.name):
        tree, quilt_series = cell_tree(req.cell, cache)
        out = req.out or matrix.default_out()
        with folder.writing(out):
            print(f"results: {out}", flush=True)
            cell = boot_cell(req, cache, out, tree, quilt_series)
    ktap = folder.read_log(out / cell.logs.ktap)
    if ktap is not None:
        print(report.printable(ktap))
    print()
    report.verdict_lines(cell, out)
    return exit_code([cell])


def boot_cell(req: BootRequest, cache: Cache, out: Path, tree: Path,
              quilt_series: series.Series) -> stages.Cell:
    progress = Progress(1)
    chain = stages.Chain(cache, out, stages.expectations(), progress, jobs=req.cell.jobs,
                         timeout=req.timeout, append=req.append, accel=req.accel)
    version, variant = req.cell.version, req.cell.variant
    source = sources.of(variant)
    cell = chain.new_cell(version, variant, source.inputs(version, quilt_series, variant))
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
    return cell


@dataclass(frozen=True)
class BenchRequest:
    versions: tuple[Version, ...]
    out: Path | None
    parallel: int
    upload_cost: bool


def bench_options(p: argparse.ArgumentParser) -> None:
    options.cache(p)
    options.versions_dir(p)
    options.version_names(p)
    options.out(p, "results of the bench runs (default results/bench-<timestamp>/)")
    p.add_argument("--parallel", type=options.at_least(1, "kernels"), default=None, metavar="N",
                   help="kernels worked on at once in the matrix runs (default 2)")
    p.add_argument("--upload-cost", action="store_true",
                   help=f"only phase 5: what moving {bench.UPLOAD_COST} to its pin from the "
                        "upload before costs against its cold build (docs/ is not written)")


def bench_request(args: Args) -> BenchRequest:
    if args.upload_cost:
        options.unused(args, "bench --upload-cost", {
            name: f"--{name.replace('_', '-')} is for the whole bench, not --upload-cost"
            for name in ("versions", "versions_dir", "out", "parallel")})
    return BenchRequest(tuple(versions.select(list(options.split_names(args.versions)),
                                              args.versions_dir)),
                        options.new_folder(args.out), args.parallel or 2, args.upload_cost)


def run_bench(req: BenchRequest, cache: Cache) -> int:
    if req.upload_cost:
        print(bench.upload_table(bench.upload_cost_alone(cache)))
        return 0
    out = req.out or matrix.REPO / "results" / time.strftime("bench-%Y%m%dT%H%M%S")
    text = bench.run(cache, list(req.versions), out, req.parallel)
    bench.write(text)
    print(text)
    return 0


VERBS: list[AnyVerb] = [
    Verb("matrix", "build, boot and judge versions x variants", matrix_options,
         matrix_request, run_matrix),
    Verb("build", "build the kernel, test module and agent of one cell", cell_options,
         cell_request, run_build),
    Verb("boot", "boot a built cell once, judge it as the matrix does, print its verdict",
         boot_options, boot_request, run_boot),
    Verb("bench", "measure one cold matrix, reruns and the naive way; write "
                  "docs/benchmarks.md", bench_options, bench_request, run_bench),
]
