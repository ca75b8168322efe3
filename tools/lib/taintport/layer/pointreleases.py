"""`taintport check --all-point-releases`: the layer on every linux-source the suites offer.

No build and no full extraction: for each version the five suites list now,
the .deb is fetched (and checked against the index's SHA256), only the files
the layer's pieces live in are pulled out of its source tarball, and the
layer must report each fix as the tree has it. A point release of a pinned
kernel series is then brought to the full pre-fix state by that pin's
reverted-full/ (fuzz 0), and the layer carried onto it must give the files as
shipped back, byte for byte (as `regen --check` does for the pin itself).
"""
import os
import re
import subprocess
import tarfile
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Iterator

from taintport import names
from taintport.cache import Cache
from taintport.errors import InputError, RunError, TaintportError
from taintport.layer import engine, fixes, model, regen
from taintport.process import kill_group, reap, run, spawn
from taintport.tree import fetch, series, variants
from taintport.tree.versions import Version

# the files the pieces can live in, and the Makefile that says which (the version)
PIECE_FILES = sorted({rel for spec in fixes.PIECES for rel in spec.paths} | {"Makefile"})
SOURCE_PACKAGE = re.compile(r"^linux-source-\d+\.\d+$")


@dataclass(frozen=True)
class Outcome:
    suite: str
    package: str
    version: str
    verdict: str  # the layer's summary per fix, or "error: ..."
    seconds: float


def offered(cache: Cache, template: Version, log: Path) -> list[tuple[str, fetch.Published]]:
    """(package, version, sha256) of every linux-source-X.Y in template's suite."""
    apt = fetch.PrivateApt(cache.apt(), template)
    apt.update(log)
    packages = run(["apt-cache", *apt.options(), "pkgnames", "linux-source-"],
                   stage="fetch", env={"LC_ALL": "C"}).stdout.split()
    found = []
    for name in sorted(n for n in packages if SOURCE_PACKAGE.match(n)):
        probe = fetch.PrivateApt(cache.apt(), replace(template, package=name))
        for published in probe.published().values():
            # the index's version becomes part of a .deb's path in the cache
            names.deb_version(published.version, f"{template.suite} index: {name} Version")
            found.append((name, published))
    return found


def piece_files(deb: Path, package: str, dest: Path | str,
                files: list[str] = PIECE_FILES) -> Path:
    """Stream the .deb's source tarball and keep only the layer's files.

    dpkg-deb | tar | xz as argument lists (no shell: the cache path is any
    folder name), each one's exit status checked."""
    wanted = {f"{package}/{rel}" for rel in files}
    stages, upstream = [], None
    with tempfile.TemporaryFile() as said:
        for cmd in (["dpkg-deb", "--fsys-tarfile", str(deb)],
                    ["tar", "-xO", f"./usr/src/{package}.tar.xz"],
                    ["xz", "-dc", "-T0"]):
            proc = spawn(cmd, stdin=upstream, stdout=subprocess.PIPE, stderr=said)
            if upstream is not None:
                upstream.close()
            upstream = proc.stdout
            stages.append(proc)
        failure = None
        assert upstream is not None  # the last stage's stdout is a pipe
        try:
            with tarfile.open(fileobj=upstream, mode="r|") as tar:
                for info in tar:
                    if info.name in wanted and info.isfile():
                        member = tar.extractfile(info)
                        assert member is not None  # a regular file has its data
                        target = Path(dest) / info.name.split("/", 1)[1]
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
                reap(proc)
        codes = tuple(proc.returncode for proc in stages)
        if failure or any(codes):
            said.seek(0)
            raise RunError("check", f"{Path(deb).name}: reading {package}.tar.xz failed "
                           f"(dpkg-deb | tar | xz exit codes {codes}{failure or ''})",
                           said.read().decode(errors="replace").strip())
    (Path(dest) / "kernel").mkdir(exist_ok=True)
    return Path(dest)


def check_one(cache: Cache, template: Version, package: str, published: fetch.Published,
              log: Path) -> Outcome:
    start = time.monotonic()
    version = replace(template, package=package, version=published.version,
                      sha256=published.sha256, size=published.size,
                      name=f"{template.suite}-{package}")
    quilt = full_state_series(template, package)
    try:
        deb, _ = fetch.fetch_deb(cache, version, log)
        with tempfile.TemporaryDirectory(prefix="taintport-point-") as tmp:
            files = sorted(set(PIECE_FILES) | (regen.full_state_files(quilt) if quilt else set()))
            tree = piece_files(deb, package, tmp, files)
            as_shipped = engine.generate(tree, fixes.FIXES)
            verdict = as_shipped.summary
            if quilt:
                verdict += "; " + full_state(tree, quilt, version.name, as_shipped, log)
    except TaintportError as err:
        verdict = "error: " + str(err).splitlines()[0]
    return Outcome(template.suite, package, published.version, verdict,
                   time.monotonic() - start)


def full_state_series(template: Version, package: str) -> series.Series | None:
    """The pinned version's quilt series when package is its kernel series: its
    full pre-fix state (reverted-full/) is what this point release is checked on."""
    if package != template.package:
        return None
    try:
        return series.load(template.name)
    except InputError:
        return None  # a template of the tests' own archive has no quilt/ folder


def full_state(tree: Path, quilt: series.Series, name: str, as_shipped: model.LayerPatch,
               log: Path) -> str:
    """The whole layer on this point release brought to the full pre-fix state
    by the pinned version's reverted-full/: byte-identical to it as shipped,
    or why it could not be checked (an error when the layer got it wrong)."""
    ships = [fp.fix.name for fp in as_shipped.patches
             if fp.outcome is model.Outcome.ALREADY_UPSTREAM]
    shipped = {rel: (tree / rel).read_bytes() for rel in sorted(regen.full_state_files(quilt))
               if (tree / rel).is_file()}
    try:
        full = regen.on_full_state(shipped, quilt, name, ships, log)
    except regen.DoesNotApply as err:
        return (f"full pre-fix state not checked: {variants.table().full_state().folders} "
                f"of {quilt.directory.name} does not apply ({str(err).splitlines()[0]})")
    return f"full pre-fix state: identical in {len(full.compared)} files"


def check_all(cache: Cache, templates: list[Version], log: Path,
              keep_debs: bool = False) -> Iterator[Outcome]:
    """One Outcome per offered version, suite by suite."""
    outcomes = []
    for template in templates:
        for package, published in offered(cache, template, log):
            outcome = check_one(cache, template, package, published, log)
            if not keep_debs:
                deb = cache.debs() / f"{package}_{published.version}_all.deb"
                pinned = published.sha256 in {t.sha256 for t in templates}
                if deb.exists() and not pinned:
                    os.unlink(deb)  # 150 MB each: keep only what the matrix pins
            outcomes.append(outcome)
            yield outcome
