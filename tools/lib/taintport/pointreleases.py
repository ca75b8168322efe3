"""`taintport check --all-point-releases`: the layer on every linux-source the suites offer.

No build and no full extraction: for each version the five suites list now,
the .deb is fetched (and checked against the index's SHA256), only the files
the layer's pieces live in are pulled out of its source tarball, and the
layer must find every piece present and produce an empty change.
"""
import os
import re
import subprocess
import tarfile
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path

from . import fetch, fixes, layer
from .errors import TaintportError
from .process import run

PIECE_FILES = sorted({rel for spec in fixes.PIECES for rel in spec.paths})
SOURCE_PACKAGE = re.compile(r"^linux-source-\d+\.\d+$")


@dataclass(frozen=True)
class Outcome:
    suite: str
    package: str
    version: str
    verdict: str  # the layer's summary per fix, or "error: ..."
    seconds: float


def offered(cache, template, log):
    """(package, version, sha256) of every linux-source-X.Y in template's suite."""
    apt = fetch.PrivateApt(cache.apt(), template)
    apt.update(log)
    names = run(["apt-cache", *apt.options(), "pkgnames", "linux-source-"],
                      stage="fetch", env={"LC_ALL": "C"}).stdout.split()
    found = []
    for name in sorted(n for n in names if SOURCE_PACKAGE.match(n)):
        probe = fetch.PrivateApt(cache.apt(), replace(template, package=name))
        for published in probe.published().values():
            found.append((name, published))
    return found


def piece_files(deb, package, dest):
    """Stream the .deb's source tarball and keep only the layer's files."""
    wanted = {f"{package}/{rel}" for rel in PIECE_FILES}
    member = f"./usr/src/{package}.tar.xz"
    with subprocess.Popen(f"dpkg-deb --fsys-tarfile {deb} | tar -xO {member} | xz -dc -T0",
                          shell=True, stdout=subprocess.PIPE) as proc:
        with tarfile.open(fileobj=proc.stdout, mode="r|") as tar:
            for info in tar:
                if info.name in wanted and info.isfile():
                    target = Path(dest) / info.name.split("/", 1)[1]
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_bytes(tar.extractfile(info).read())
        proc.stdout.close()
    (Path(dest) / "kernel").mkdir(exist_ok=True)
    return Path(dest)


def check_one(cache, template, package, published, log):
    start = time.monotonic()
    version = replace(template, package=package, version=published.version,
                      sha256=published.sha256, size=published.size,
                      name=f"{template.suite}-{package}")
    try:
        deb, _ = fetch.fetch_deb(cache, version, log)
        with tempfile.TemporaryDirectory(prefix="taintport-point-") as tmp:
            tree = piece_files(deb, package, tmp)
            verdict = layer.generate(tree).summary
    except TaintportError as err:
        verdict = "error: " + str(err).splitlines()[0]
    return Outcome(template.suite, package, published.version, verdict,
                   time.monotonic() - start)


def check_all(cache, templates, log, keep_debs=False):
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
