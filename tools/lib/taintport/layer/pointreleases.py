"""`taintport check --all-point-releases`: the layer on every linux-source the suites offer.

No build and no full extraction. The suites read are every one a version
names: where its release's users take the kernel from (the release, its
-updates and -security suites) and the backports they may opt into. For
each linux-source-X.Y version those suites list now, the .deb is fetched
(and checked against the index's size and SHA256; the next one downloads
while this one is read), only the files the layer's pieces live in are
pulled out of its source tarball, and the layer must report each fix as the
tree has it. A point release of a series some version pins is then brought
to the full pre-fix state by that version's reverted-full/ (fuzz 0), and
the layer carried onto it must give the files as shipped back, byte for
byte (as `regen --check` does for the pin itself). A .deb two suites share
(a point release that also went out as a security upload) is read once.
"""
import os
import re
import subprocess
import tarfile
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import IO, Iterator

from taintport.cache import Cache, scratch, sweep
from taintport.errors import InputError, RunError, TaintportError
from taintport.layer import engine, fixes, regen
from taintport.process import kill_group, reap, spawn, stop_all
from taintport.tree import fetch, series
from taintport.tree.versions import Source, Version

PIECE_FILES = sorted({rel for spec in fixes.PIECES for rel in spec.paths})
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
    published: fetch.Published


def suites_of(templates: list[Version]) -> list[tuple[Source, Version]]:
    """Every suite the versions name (their users' and the backports they may
    opt into), once each, with the first version that names it."""
    seen: dict[Source, Version] = {}
    for template in templates:
        for suite in (*template.suites, *template.backports):
            seen.setdefault(template.source(suite), template)
    return list(seen.items())


def offered(indexes: fetch.Indexes, source: Source) -> list[fetch.Published]:
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

    dpkg-deb | tar | xz as argument lists (no shell: the cache path is any
    folder name), each one's exit status checked, each ended with this one."""
    wanted = {f"{package}/{rel}" for rel in files}
    stages: list[subprocess.Popen[bytes]] = []
    said = fetch.StderrTail()
    failure = None
    try:
        upstream: IO[bytes] | None = None
        for cmd in (["dpkg-deb", "--fsys-tarfile", str(deb)],
                    ["tar", "-xO", f"./usr/src/{package}.tar.xz"],
                    ["xz", "-dc", "-T0"]):
            proc = spawn(fetch.orphan_proof(cmd), stdin=upstream, stdout=subprocess.PIPE,
                         stderr=said.fd)
            if upstream is not None:
                upstream.close()
            upstream = proc.stdout
            stages.append(proc)
        said.started()
        assert upstream is not None  # the last stage's stdout is a pipe
        try:
            # read in MB blocks: 1.4 GB skipped in tarfile's 10 kB default took seconds
            with tarfile.open(fileobj=upstream, mode="r|", bufsize=1 << 20) as tar:
                for info in tar:
                    if info.name in wanted and info.isfile():
                        member = tar.extractfile(info)
                        assert member is not None  # a regular file has its data
                        target = dest / info.name.split("/", 1)[1]
                        target.parent.mkdir(parents=True, exist_ok=True)
                        target.write_bytes(member.read())
            while upstream.read(1 << 20):
                pass  # the padding after the archive: xz must not die of SIGPIPE
        except tarfile.TarError as err:
            failure = f"; not a tar stream ({err})"
        finally:
            upstream.close()
        for proc in stages:
            if failure is not None:
                kill_group(proc)  # a stage may still be writing into the closed pipe
            proc.wait()
    except BaseException:
        for proc in stages:
            kill_group(proc)
        raise
    finally:
        said.started()
        for proc in stages:
            reap(proc)
    codes = tuple(proc.returncode for proc in stages)
    if failure or any(codes):
        raise RunError("check", f"{deb.name}: reading {package}.tar.xz failed "
                       f"(dpkg-deb | tar | xz exit codes {codes}{failure or ''})",
                       said.text().strip())
    (dest / "kernel").mkdir(exist_ok=True)
    return dest


def as_version(offer: Offer) -> Version:
    """The offered upload as a version of its own, fetched from its suite."""
    p, t = offer.published, offer.template
    return replace(t, package=p.package, version=p.version, sha256=p.sha256, size=p.size,
                   suite=p.suite, suites=(p.suite,), name=f"{p.suite}-{p.package}")


def check_one(cache: Cache, template: Version, published: fetch.Published, log: Path,
              quilt: series.Series | None = None, deb: Path | None = None) -> Outcome:
    """The layer on one offered upload (deb: already fetched; else fetched here)."""
    start = time.monotonic()
    version = as_version(Offer(template, published))
    try:
        if deb is None:
            deb, _ = fetch.fetch_deb(cache, version, log)
        scratch_root = cache.root / "check"
        with scratch(scratch_root, SCRATCH) as tmp:
            files = sorted(set(PIECE_FILES) | (regen.full_state_files(quilt) if quilt else set()))
            tree = piece_files(deb, published.package, tmp, files)
            as_shipped = engine.generate(tree)
            verdict = as_shipped.summary
            if quilt:
                verdict += "; " + full_state(tree, quilt, version.name, as_shipped, log)
    except TaintportError as err:
        verdict = "error: " + str(err).splitlines()[0]
    except OSError as err:
        verdict = "error: " + str(fetch.disk_error(err, f"reading {published.package} "
                                                   f"{published.version}", cache.root))
    return Outcome(published.suite, published.package, published.version, verdict,
                   time.monotonic() - start)


def full_state(tree: Path, quilt: series.Series, name: str, as_shipped: engine.LayerPatch,
               log: Path) -> str:
    """The whole layer on this point release brought to the full pre-fix state
    by the pinned version's reverted-full/: byte-identical to it as shipped,
    or why it could not be checked (an error when the layer got it wrong)."""
    ships = [fp.fix.name for fp in as_shipped.patches if fp.state == "already upstream"]
    shipped = {rel: (tree / rel).read_bytes() for rel in sorted(regen.full_state_files(quilt))
               if (tree / rel).is_file()}
    try:
        full = regen.on_full_state(shipped, quilt, name, ships, log)
    except regen.DoesNotApply as err:
        return (f"full pre-fix state not checked: {series.FULL}/ of {quilt.directory.name} does not "
                f"apply ({str(err).splitlines()[0]})")
    return f"full pre-fix state: identical in {len(full.compared)} files"


def offers(indexes: fetch.Indexes, templates: list[Version]) -> list[Offer]:
    """Every upload the versions' suites list, suite by suite."""
    return [Offer(template, published) for source, template in suites_of(templates)
            for published in offered(indexes, source)]


def check_all(cache: Cache, templates: list[Version], log: Path,
              keep_debs: bool = False) -> Iterator[Outcome]:
    """One Outcome per offered upload, suite by suite; the next .deb downloads
    while one is read, and only the .debs a version pins stay in the cache."""
    indexes = fetch.Indexes(cache, log)
    todo = offers(indexes, templates)
    sweep(cache.root / "check", SCRATCH)
    pinned = {t.sha256 for t in templates} | {
        p.sha256 for t in templates if t.shipped for p in t.shipped.packages}
    first: dict[str, Outcome] = {}  # by sha256: a .deb two suites list is read once
    unique = [o for i, o in enumerate(todo)
              if o.published.sha256 not in {x.published.sha256 for x in todo[:i]}]
    downloads: dict[str, Future[tuple[Path, bool]]] = {}
    try:
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="download") as ahead:
            def download(index: int) -> None:
                if index < len(unique):
                    offer = unique[index]
                    downloads[offer.published.sha256] = ahead.submit(
                        fetch.fetch_deb, cache, as_version(offer), log, None, indexes)
            download(0)
            for offer in todo:
                p = offer.published
                if p.sha256 in first:
                    yield replace(first[p.sha256], suite=p.suite, seconds=0.0)
                    continue
                download(unique.index(offer) + 1)
                yield check_downloaded(cache, offer, templates, log, downloads[p.sha256],
                                       first)
                deb = cache.debs() / p.pin.deb_name
                if not keep_debs and p.sha256 not in pinned and deb.exists():
                    os.unlink(deb)  # 150 MB each: keep only what the matrix pins
    except KeyboardInterrupt:
        stop_all()  # a download still running is ended, not waited for
        raise


def check_downloaded(cache: Cache, offer: Offer, templates: list[Version], log: Path,
                     download: Future[tuple[Path, bool]], first: dict[str, Outcome]) -> Outcome:
    p = offer.published
    start = time.monotonic()
    quilt = quilt_for(p.package, offer.template.release, templates)
    try:
        deb, _ = download.result()
    except fetch.NotServed as err:
        # listed but not served: every upload the archive serves is still checked
        outcome = Outcome(p.suite, p.package, p.version,
                          NOT_SERVED + str(err).splitlines()[0].removeprefix("fetch: "),
                          time.monotonic() - start)
    except TaintportError as err:
        outcome = Outcome(p.suite, p.package, p.version, "error: " + str(err).splitlines()[0],
                          time.monotonic() - start)
    else:
        outcome = check_one(cache, offer.template, p, log, quilt, deb)
        outcome = replace(outcome, seconds=outcome.seconds + time.monotonic() - start)
    first[p.sha256] = outcome
    return outcome
