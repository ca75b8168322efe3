# SPDX-License-Identifier: GPL-2.0
"""A pinned .deb in <cache>/debs: downloaded from the first of the version's
suites that lists it, checked against the pin's size and SHA256 (the ones
the suite's index publishes) before and after, and kept only when it matches.
A download goes to a scratch folder locked while its run lives: what a
killed one left is removed by the next."""
import os
from pathlib import Path

from taintport.cache import Cache, scratch, sweep
from taintport.digest import sha256_of
from taintport.errors import InputError, RunError
from taintport.tree.archive.indexes import Indexes
from taintport.tree.archive.published import Published
from taintport.tree.disk import disk_error
from taintport.tree.versions import Pin, Source, Version

DOWNLOADING = ".download-"


def pin_sources(version: Version) -> list[Source]:
    """Where a pinned .deb may be fetched: the pin's suite first, then the others."""
    return [version.source()] + [s for s in version.sources() if s.suite != version.suite]


def fetch_deb(cache: Cache, version: Version, log: Path, pin: Pin | None = None,
              indexes: Indexes | None = None) -> tuple[Path, bool]:
    """The verified .deb in <cache>/debs, downloading it only when absent.

    pin: one of the version's binary pins (kernel/binary.py); by default the source's."""
    pin = pin or Pin(version.package, version.version, version.sha256, version.size)
    debs = cache.debs()
    try:
        debs.mkdir(parents=True, exist_ok=True)
        sweep(debs, DOWNLOADING)  # what killed downloads left
        target = debs / pin.deb_name
        if target.exists():
            if target.stat().st_size == pin.size and sha256_of(target) == pin.sha256:
                return target, True
            target.unlink()  # a poisoned cache entry is dropped, never trusted
        return download(version, pin, target, log, indexes or Indexes(cache, log)), False
    except OSError as err:
        raise disk_error(err, f"downloading {pin.deb_name}", debs) from None


def download(version: Version, pin: Pin, target: Path, log: Path, indexes: Indexes) -> Path:
    """The pinned .deb from the first of the version's suites that lists it,
    checked against the pin before and after, into target."""
    offers: dict[str, Published] = {}
    apt = None
    for source in pin_sources(version):
        here = indexes.apt(source)
        offers = here.published(pin.package)
        if pin.version in offers:
            apt = here
            break
    if apt is None:
        have = indexes.published(version.sources(), pin.package)
        now = ", ".join(f"{p.version} ({p.suite})" for p in have) or "none"
        raise InputError(
            f"{version.path}: {', '.join(version.suites)} no longer offers {pin.package} "
            f"{pin.version}; it has now: {now}. "
            f"Run 'taintport versions --repin {version.name}' to move the pin on purpose.")
    listed = offers[pin.version]
    if listed.sha256 != pin.sha256:
        raise InputError(
            f"{version.path}: pinned sha256 {pin.sha256} differs from the one "
            f"{listed.suite}'s index publishes for {pin.package} {pin.version}: {listed.sha256}")
    if listed.size != pin.size:
        raise InputError(
            f"{version.path}: pinned size {pin.size} of {pin.package} {pin.version} differs "
            f"from the {listed.size} bytes {listed.suite}'s index publishes; nothing was "
            "downloaded")
    with scratch(target.parent, DOWNLOADING) as tmp:
        apt.download(pin, tmp, log)
        got = list(tmp.glob("*.deb"))
        if len(got) != 1:
            raise RunError("fetch", f"apt-get download left {len(got)} .deb files in {tmp}")
        size = got[0].stat().st_size
        if size != pin.size:
            raise InputError(f"{got[0].name}: {size} bytes, not the pinned {pin.size} "
                             f"({version.path}); nothing was extracted")
        digest = sha256_of(got[0])
        if digest != pin.sha256:
            raise InputError(f"{got[0].name}: sha256 {digest} does not match the pinned "
                             f"{pin.sha256} ({version.path}); nothing was extracted")
        os.replace(got[0], target)
    return target
