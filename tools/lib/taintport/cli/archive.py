# SPDX-License-Identifier: GPL-2.0
"""The verbs that read Debian's archive: fetch, versions, check."""
import argparse
import time
from dataclasses import dataclass

from taintport.cache import Cache
from taintport.cli import options
from taintport.cli.verb import AnyVerb, Verb
from taintport.layer import pointreleases
from taintport.tree import fetch, versions
from taintport.tree.archive import pins
from taintport.tree.archive.indexes import Indexes, standing
from taintport.tree.versions import Version

Args = argparse.Namespace


@dataclass(frozen=True)
class VersionsRequest:
    """fetch's versions, or versions' (with --repin or --outdated, or neither)."""
    versions: tuple[Version, ...]
    repin: bool = False
    outdated: bool = False


def fetch_options(p: argparse.ArgumentParser) -> None:
    options.cache(p)
    options.versions_dir(p)
    options.version_names(p)


def fetch_request(args: Args) -> VersionsRequest:
    return VersionsRequest(tuple(versions.select(list(options.split_names(args.versions)),
                                                 args.versions_dir)))


def run_fetch(req: VersionsRequest, cache: Cache) -> int:
    for version in req.versions:
        log = cache.root / "logs" / f"fetch-{version.name}.log"
        with cache.locked(version.name):
            got = fetch.fetch(cache, version, log)
        print(f"{version.name}: {got.tree} ({'reused' if got.reused else 'fetched'}, "
              f"sha256 {got.sha256[:12]}...)")
    return 0


def versions_options(p: argparse.ArgumentParser) -> None:
    options.cache(p)
    options.versions_dir(p)
    what = p.add_mutually_exclusive_group()
    what.add_argument("--repin", nargs="+", metavar="NAME",
                      help="rewrite these descriptors to the newest upload their suites serve")
    what.add_argument("--outdated", action="store_true",
                      help="list every pin behind what its suites serve now; exit 1 when "
                           "any is, 0 when none, 2 when an index cannot be read")


def versions_request(args: Args) -> VersionsRequest:
    return VersionsRequest(tuple(versions.select(list(options.split_names(args.repin)),
                                                 args.versions_dir)),
                           repin=bool(args.repin), outdated=args.outdated)


def run_versions(req: VersionsRequest, cache: Cache) -> int:
    if req.repin:
        return repin(req.versions, cache)
    if req.outdated:
        return outdated(req.versions, cache)
    for v in req.versions:
        print(f"{v.name:14} {v.release:12} {v.package:17} {v.upload:38} "
              f"sha256 {v.sha256[:16]}...  (from {', '.join(v.suites)})")
    return 0


def repin(chosen: tuple[Version, ...], cache: Cache) -> int:
    for version in chosen:
        log = cache.root / "logs" / f"repin-{version.name}.log"
        with cache.locked(version.name):
            moved = pins.repin(cache, version, log)
        print(f"{version.name}: {moved.old} -> {moved.new}" if moved.old != moved.new
              else f"{version.name}: {moved.old} is still the newest", f"({moved.shipped})")
    return 0


def outdated(chosen: tuple[Version, ...], cache: Cache) -> int:
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


def check_options(p: argparse.ArgumentParser) -> None:
    options.cache(p)
    options.versions_dir(p)
    p.add_argument("--all-point-releases", action="store_true", required=True,
                   help="every linux-source-X.Y version in each suite, one line each")


def check_request(args: Args) -> VersionsRequest:
    return VersionsRequest(tuple(versions.select([], args.versions_dir)))


def run_check(req: VersionsRequest, cache: Cache) -> int:
    log = cache.root / "logs" / "check-point-releases.log"
    outcomes = []
    start = time.monotonic()
    for o in pointreleases.check_all(cache, list(req.versions), log):
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


VERBS: list[AnyVerb] = [
    Verb("fetch", "download, verify and extract kernel sources", fetch_options,
         fetch_request, run_fetch),
    Verb("versions", "list the pinned kernels; --repin moves pins on purpose, --outdated "
                     "lists pins behind their suites", versions_options, versions_request,
         run_versions),
    Verb("check", "run the layer (no build) on every linux-source the suites of "
                  "versions/ offer now", check_options, check_request, run_check),
]
