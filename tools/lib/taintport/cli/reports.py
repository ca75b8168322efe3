# SPDX-License-Identifier: GPL-2.0
"""The verbs on results and pipelines: report (re-render, compare, merge,
kcidb) and ci."""
import argparse
import json
from dataclasses import dataclass
from pathlib import Path

from taintport import ci
from taintport.cache import Cache
from taintport.cli import options
from taintport.cli.verb import AnyVerb, Verb
from taintport.errors import InputError
from taintport.results import compare, folder, render
from taintport.results.reports import kcidb
from taintport.tree import series, versions

Args = argparse.Namespace
USAGE = "usage: taintport report DIR | compare OLD NEW | merge DIR... --out DIR | kcidb DIR"
REPORT_HELP = """\
  report DIR                   re-render matrix.json's KCIDB view, junit.xml,
                               summary.md and index.html in DIR
  report compare OLD NEW       cells whose status changed, regressions first
                               (exit 1 when a cell became unexpected or an
                               error, or went missing)
  report merge DIR... --out D  one results folder from runs that each did
                               some kernels (CI jobs); a cell twice is an error;
                               D is new or empty, and none of the DIRs
  report kcidb DIR             print DIR's KCIDB view as one JSON document, the
                               form kcidb-submit reads on standard input"""


@dataclass(frozen=True)
class ReportRequest:
    form: str                  # render, compare, merge or kcidb
    folders: tuple[Path, ...]  # each a results folder (matrix.json checked there)
    out: Path | None = None
    artifacts_url: str | None = None
    origin: str = kcidb.ORIGIN
    quilt_dir: Path = series.QUILT_DIR


def report_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("words", nargs="+", metavar="DIR | compare OLD NEW | merge DIR... | kcidb DIR")
    options.out(p, "with merge: the merged results folder (new or empty)")
    options.artifacts_url(p)
    p.add_argument("--origin", default=None,
                   help=f"with kcidb: the origin the KCIDB instance gave you "
                        f"(default {kcidb.ORIGIN})")
    options.quilt_dir(p, "quilt series whose patches index.html shows", default=None)


# per form: how many folders (None: one or more), and the options it reads
FORMS = {"compare": (2, ()), "merge": (None, ("out", "artifacts_url", "quilt_dir")),
         "kcidb": (1, ("artifacts_url", "origin")),
         "render": (1, ("artifacts_url", "quilt_dir"))}


def report_request(args: Args) -> ReportRequest:
    form, words = (args.words[0], args.words[1:]) if args.words[0] in FORMS else \
        ("render", args.words)
    count, reads = FORMS[form]
    if (count is not None and len(words) != count) or not words or \
            (form == "merge" and args.out is None):
        raise InputError(USAGE)
    options.unused(args, f"report {form}", {
        name: f"--{name.replace('_', '-')} is not read by 'report {form}'"
        for name in ("out", "artifacts_url", "origin", "quilt_dir") if name not in reads})
    return ReportRequest(form, tuple(options.results_folder(w) for w in words),
                         args.out,  # merge refuses it, before writing, with the reason
                         options.checked_url(args.artifacts_url),
                         kcidb.origin_name(args.origin or kcidb.ORIGIN),
                         args.quilt_dir or series.QUILT_DIR)


def run_report(req: ReportRequest, cache: Cache) -> int:
    if req.form == "compare":
        changes = compare.compare(*(folder.load_matrix(d) for d in req.folders))
        for change in changes:
            print(change)
        print(f"{len(changes)} cell(s) changed status")
        return 1 if any(c.worse for c in changes) else 0
    if req.form == "merge":
        assert req.out is not None  # the request refuses merge without --out
        doc, paths = render.merge(list(req.folders), req.out, req.quilt_dir, req.artifacts_url)
        print("\n".join(map(str, paths)))
        return doc.exit_code  # a CI report job fails as its cells do
    if req.form == "kcidb":
        view = kcidb.report(folder.load_matrix(req.folders[0]),
                            kcidb.artifacts(req.folders[0], req.artifacts_url), req.origin)
        print(json.dumps(view, indent=2))
        return 0
    doc, base = folder.load_published(req.folders[0], req.artifacts_url)
    for path in render.republish(req.folders[0], doc, render.read_patches(doc, req.quilt_dir),
                                 base):
        print(path)
    return 0


@dataclass(frozen=True)
class CiRequest:
    annotate: Path | None
    local: tuple[str, ...] | None  # the versions gitlab-ci-local runs, with --local
    check: bool


def ci_options(p: argparse.ArgumentParser) -> None:
    what = p.add_mutually_exclusive_group()
    what.add_argument("--check", action="store_true",
                      help="write nothing; list the ci/ files that drifted (exit 1 if any)")
    what.add_argument("--annotate", type=Path, metavar="DIR",
                      help="print GitHub workflow annotations for DIR's regressions, broken "
                           "cells and known bugs (the generated workflow runs this)")
    what.add_argument("--local", action="store_true",
                      help="run ci/gitlab/ here with gitlab-ci-local (install it with "
                           "'sh tools/install-deps --ci-tools'); --versions narrows it")
    options.version_names(p, "with --local: names from versions/ (default: all)")


def ci_request(args: Args) -> CiRequest:
    if args.versions and not args.local:
        raise InputError("ci --versions narrows --local: give --local too")
    return CiRequest(options.results_folder(args.annotate) if args.annotate else None,
                     tuple(v.name for v in versions.select(
                         list(options.split_names(args.versions)))) if args.local else None,
                     args.check)


def run_ci(req: CiRequest, cache: Cache) -> int:
    if req.annotate:
        print("\n".join(ci.annotations(folder.load_matrix(req.annotate))))
        return 0
    if req.local is not None:
        return ci.run_here(list(req.local))
    if req.check:
        stale = ci.check_drift()
        for path in stale:
            print(f"{path}: out of date with versions/; run 'tools/taintport ci'")
        return 1 if stale else 0
    for path in ci.write():
        print(path)
    return 0


VERBS: list[AnyVerb] = [
    Verb("report", "re-render reports, compare two runs, merge CI runs", report_options,
         report_request, run_report, description=REPORT_HELP),
    Verb("ci", "generate the CI pipelines under ci/ from versions/", ci_options, ci_request,
         run_ci),
]
