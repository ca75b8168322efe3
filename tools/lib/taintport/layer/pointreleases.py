# SPDX-License-Identifier: GPL-2.0
"""`taintport check --all-point-releases`: the layer on every linux-source the suites offer.

No build and no full extraction. The suites read are every one a version
names: where its release's users take the kernel from (the release, its
-updates and -security suites) and the backports they may opt into. For
each linux-source-X.Y version those suites list now, the .deb is fetched
(and checked against the index's size and SHA256), only the files the
layer's pieces live in are pulled out of its source tarball (a thread ahead
does both for the next upload while the layer runs on this one), and the
layer must report each fix as the tree has it. A point release of a series some version pins is then brought
to the full pre-fix state by that version's reverted-full/ (fuzz 0), and
the layer carried onto it must give the files as shipped back, byte for
byte (as `regen --check` does for the pin itself). A .deb two suites share
(a point release that also went out as a security upload) is read once.
"""
import re
import time
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable, Iterator

from taintport.cache import Cache, scratch, sweep
from taintport.errors import InputError, RunError, TaintportError
from taintport.layer import engine, fixes, model, regen
from taintport.process import stop_all
from taintport.tree import series, variants
from taintport.tree.archive.apt import NotServed
from taintport.tree.archive.download import fetch_deb
from taintport.tree.archive.indexes import Indexes
from taintport.tree.archive.published import Published
from taintport.tree.disk import disk_error
from taintport.tree.untar import untar
from taintport.tree.versions import Source, Version

# the files the pieces can live in, and the Makefile that says which (the version)
PIECE_FILES = sorted({rel for spec in fixes.PIECES for rel in spec.paths} | {"Makefile"})
SOURCE_PACKAGE = re.compile(r"^linux-source-\d+\.\d+$")
SCRATCH = ".layer-"


NOT_SERVED = "not served: "


@dataclass(frozen=True)
class Outcome:
    suite: str
    package: str
    version: str
    verdict: str  # the layer's summary per fix, "error: ..." or "not served: ..."
    seconds: float

    @property
    def broken(self) -> bool:
        """The check could not be made for a reason of ours (not the archive's)."""
        return self.verdict.startswith("error")


@dataclass(frozen=True)
class Offer:
    """One linux-source upload a suite lists, with the version whose suite it is."""
    template: Version
    published: Published


def suites_of(templates: list[Version]) -> list[tuple[Source, Version]]:
    """Every suite the versions name (their users' and the backports they may
    opt into), once each, with the first version that names it."""
    seen: dict[Source, Version] = {}
    for template in templates:
        for suite in (*template.suites, *template.backports):
            seen.setdefault(template.source(suite), template)
    return list(seen.items())


def offered(indexes: Indexes, source: Source) -> list[Published]:
    """Every version of every linux-source-X.Y in source's suite, oldest first."""
    apt = indexes.apt(source)
    found = []
    for name in apt.pkgnames("linux-source-"):
        if SOURCE_PACKAGE.match(name):
            found += indexes.published([source], name)
    return found


def quilt_for(package: str, release: str, templates: list[Version]) -> series.Series | None:
    """The series whose reverted-full/ a point release of package is checked
    on: that of the version pinning the same kernel series, of the same
    release first (trixie-backports' 7.2 takes sid-7.2's)."""
    same = sorted((t for t in templates if t.package == package),
                  key=lambda t: t.release != release)
    for template in same:
        try:
            return series.load(template.name)
        except InputError:
            continue  # a template of the tests' own archive has no quilt/ folder
    return None


def piece_files(deb: Path, package: str, dest: Path,
                files: list[str] = PIECE_FILES) -> Path:
    """Stream the .deb's source tarball and keep only the layer's files.

    GNU tar extracts the named members (reading the 1.4 GB stream with
    Python's tarfile took three times as long); a name this tree does not
    have is no error, anything else tar says is."""
    members = [f"{package}/{rel}" for rel in files]
    codes, told = untar(deb, f"usr/src/{package}.tar.xz", dest, members)
    absent = {f"tar: {m}: Not found in archive" for m in members} | {
        "tar: Exiting with failure status due to previous errors"}
    # GNU tar exits 2 for a named member the archive lacks (kernel/module.c on 6.1)
    only_absent = codes[3] == 2 and all(line in absent for line in told.strip().splitlines())
    if any(codes[:3]) or (codes[3] and not only_absent):
        raise RunError("check", f"{deb.name}: reading {package}.tar.xz failed "
                       f"(dpkg-deb | tar | xz | tar exit codes {codes})", told.strip())
    for rel in files:
        path = dest / package / rel
        if path.is_symlink() or (path.exists() and not path.is_file()):
            raise RunError("check", f"{deb.name}: {package}/{rel} is not a regular file")
    tree = dest / package
    (tree / "kernel").mkdir(parents=True, exist_ok=True)
    return tree


def as_version(offer: Offer) -> Version:
    """The offered upload as a version of its own, fetched from its suite."""
    p = offer.published
    return replace(p.pinning(offer.template), suites=(p.suite,), name=f"{p.suite}-{p.package}")


@dataclass
class Pieces:
    """An offered upload's layer files, read into a scratch folder that
    `done` removes (read by the ahead thread, judged by the caller's)."""
    tree: Path
    done: ExitStack


def read(cache: Cache, offer: Offer, quilt: series.Series | None, log: Path,
         indexes: Indexes | None = None, keep: Callable[[str], bool] = lambda _: True
         ) -> Pieces:
    """Fetch the upload's .deb (dropped afterwards unless keep(sha256)) and
    read the files the layer and the full pre-fix state look at."""
    p = offer.published
    deb, _ = fetch_deb(cache, as_version(offer), log, None, indexes)
    done = ExitStack()
    try:
        tmp = done.enter_context(scratch(cache.root / "check", SCRATCH))
        files = sorted(set(PIECE_FILES) | (regen.full_state_files(quilt) if quilt else set()))
        tree = piece_files(deb, p.package, tmp, files)
    except BaseException:
        done.close()
        raise
    finally:
        if not keep(p.sha256):
            deb.unlink(missing_ok=True)  # 150 MB each: keep only what the matrix pins
    return Pieces(tree, done)


def judge(pieces: Pieces, quilt: series.Series | None, name: str, log: Path,
          cache: Cache) -> str:
    """The layer's verdict on the upload as shipped, and on its full pre-fix state."""
    with pieces.done:
        as_shipped = engine.generate(pieces.tree, fixes.FIXES, None, cache)
        verdict = as_shipped.summary
        if quilt:
            verdict += "; " + full_state(pieces.tree, quilt, name, as_shipped, log, cache)
    return verdict


def outcome_of(offer: Offer, work: Callable[[], str], start: float) -> Outcome:
    """The Outcome of work (the verdict), or of why it could not be made."""
    p = offer.published
    try:
        verdict = work()
    except NotServed as err:
        # listed but not served: every upload the archive serves is still checked
        verdict = NOT_SERVED + str(err).splitlines()[0].removeprefix("fetch: ")
    except TaintportError as err:
        verdict = "error: " + str(err).splitlines()[0]
    except OSError as err:
        verdict = "error: " + str(disk_error(err, f"reading {p.package} {p.version}",
                                                   Path(err.filename or ".")))
    return Outcome(p.suite, p.package, p.version, verdict, time.monotonic() - start)


def check_one(cache: Cache, template: Version, published: Published, log: Path,
              quilt: series.Series | None = None) -> Outcome:
    """The layer on one offered upload, fetched here."""
    offer = Offer(template, published)
    return outcome_of(offer, lambda: judge(read(cache, offer, quilt, log), quilt,
                                           as_version(offer).name, log, cache),
                      time.monotonic())


def full_state(tree: Path, quilt: series.Series, name: str, as_shipped: model.LayerPatch,
               log: Path, cache: Cache) -> str:
    """The whole layer on this point release brought to the full pre-fix state
    by the pinned version's reverted-full/: byte-identical to it as shipped,
    or why it could not be checked (an error when the layer got it wrong)."""
    ships = [fp.fix.name for fp in as_shipped.patches
             if fp.outcome is model.Outcome.ALREADY_UPSTREAM]
    shipped = {rel: (tree / rel).read_bytes() for rel in sorted(regen.full_state_files(quilt))
               if (tree / rel).is_file()}
    try:
        full = regen.on_full_state(shipped, quilt, name, ships, log, cache)
    except regen.DoesNotApply as err:
        return (f"full pre-fix state not checked: {variants.table().full_state().folders} "
                f"of {quilt.directory.name} does not apply ({str(err).splitlines()[0]})")
    return f"full pre-fix state: identical in {len(full.compared)} files"


def offers(indexes: Indexes, templates: list[Version]) -> list[Offer]:
    """Every upload the versions' suites list, suite by suite."""
    return [Offer(template, published) for source, template in suites_of(templates)
            for published in offered(indexes, source)]


def check_all(cache: Cache, templates: list[Version], log: Path,
              keep_debs: bool = False) -> Iterator[Outcome]:
    """One Outcome per offered upload, suite by suite. A thread ahead fetches
    the next upload and reads its files (xz on both cores) while the layer
    (spatch, one core) runs on this one; only the .debs a version pins stay
    in the cache."""
    indexes = Indexes(cache, log)
    todo = offers(indexes, templates)
    sweep(cache.root / "check", SCRATCH)
    pinned = {t.sha256 for t in templates} | {
        p.sha256 for t in templates if t.shipped for p in t.shipped.packages}
    first: dict[str, Outcome] = {}  # by sha256: a .deb two suites list is read once
    unique = [o for i, o in enumerate(todo)
              if o.published.sha256 not in {x.published.sha256 for x in todo[:i]}]
    quilts = {id(o): quilt_for(o.published.package, o.template.release, templates)
              for o in unique}
    reading: dict[int, Future[Pieces]] = {}
    try:
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="read-ahead") as ahead:
            def read_ahead(index: int) -> None:
                if index < len(unique):
                    offer = unique[index]
                    reading[id(offer)] = ahead.submit(
                        read, cache, offer, quilts[id(offer)], log, indexes,
                        lambda sha256: keep_debs or sha256 in pinned)
            read_ahead(0)
            for offer in todo:
                p = offer.published
                if p.sha256 in first:
                    yield replace(first[p.sha256], suite=p.suite, seconds=0.0)
                    continue
                read_ahead(unique.index(offer) + 1)
                start = time.monotonic()
                pieces = reading[id(offer)]
                outcome = outcome_of(offer, lambda: judge(
                    pieces.result(), quilts[id(offer)], as_version(offer).name, log, cache),
                    start)
                first[p.sha256] = outcome
                yield outcome
    except KeyboardInterrupt:
        stop_all()  # a download or read still running is ended, not waited for
        raise
