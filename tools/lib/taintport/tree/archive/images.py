# SPDX-License-Identifier: GPL-2.0
"""The binary kernel Debian built from a pinned upload: its signed image of
the default flavour and every package of it the `shipped` variant needs,
found in the version's suites by following the packages' dependencies."""
import re

from debian.debian_support import Version as DebianVersion

from taintport.errors import InputError
from taintport.tree.archive.apt import PrivateApt
from taintport.tree.archive.indexes import Indexes
from taintport.tree.archive.published import Published, published_from
from taintport.tree.versions import Pin, Version

# The packages of a Debian binary kernel the shipped variant takes: the signed
# image (since 7.x linux-image-<release> depends on linux-binary- and
# linux-modules-<release>, which hold vmlinuz and the modules), the headers,
# their common part and linux-kbuild.
PINNED = re.compile(r"linux-(binary|image|modules|headers|kbuild)-")
# the image of the default flavour: linux-image-6.1.0-57-amd64,
# linux-image-6.1.0-0.deb11.52-amd64, linux-image-6.12.118+deb12-amd64,
# linux-image-7.3-amd64; not -cloud-, -rt-, -unsigned, -dbg, nor a metapackage
IMAGE = re.compile(r"linux-image-([0-9][0-9a-z.+~]*\.[0-9a-z.+~]*(-[0-9][0-9a-z.+~]*)?-amd64)")
# the package holding vmlinuz first: since 7.x linux-binary-<release>, whose
# linux-image-<release> only depends on it and on linux-modules-<release>
ORDER = ("linux-binary-", "linux-image-", "linux-modules-", "linux-headers-", "linux-kbuild-")


def of_series(version: str, series: str) -> bool:
    """Whether a Debian version is an upload of a kernel series: 6.1.192-3 of 6.1, not of 6.12."""
    return version == series or version.startswith((f"{series}.", f"{series}~", f"{series}-"))


def depends(fields: dict[str, str], default: str) -> list[tuple[str, str]]:
    """(package, version) of each kernel package fields depends on: the
    version it pins with (= ...), else default (kbuild is unversioned or >=)."""
    found = []
    for dep in fields.get("Depends", "").split(","):
        m = re.match(r"\s*([a-z0-9][a-z0-9.+-]*)\s*(?:\(\s*=\s*([^) ]+)\s*\))?",
                     dep.split("|")[0])
        if m and PINNED.match(m.group(1)) and IMAGE.fullmatch(m.group(1)) is None:
            found.append((m.group(1), m.group(2) or default))
    return found


def images(apt: PrivateApt, series: str) -> list[Published]:
    """Every upload of the series' default-flavour signed image the suite lists."""
    listed = [n for n in apt.pkgnames("linux-image-") if IMAGE.fullmatch(n)]
    found = []
    for fields in apt.show(listed):
        item = published_from(fields, apt.source.suite, f"{apt.source.suite} index")
        # linux-image-6.1-amd64 is bullseye's metapackage of its 6.1 series,
        # shaped like 7.3's image: a metapackage depends on an image
        meta = any(IMAGE.fullmatch(dep.strip().split(" ")[0])
                   for dep in fields.get("Depends", "").split(","))
        if item is not None and IMAGE.fullmatch(item.package) and not meta and \
                of_series(item.version, series):
            found.append(item)
    return found


def nearest(found: list[Published], wanted: str) -> Published:
    """The image of the wanted upload; else the newest older one, else the oldest newer."""
    exact = [p for p in found if p.version == wanted]
    if exact:
        return exact[0]
    by_age = sorted(found, key=lambda p: DebianVersion(p.version))
    older = [p for p in by_age if DebianVersion(p.version) < DebianVersion(wanted)]
    newer = [p for p in by_age if DebianVersion(p.version) > DebianVersion(wanted)]
    return older[-1] if older else newer[0]


def signed_image(indexes: Indexes, version: Version) -> tuple[str, list[Pin]]:
    """The binary kernel Debian built from the pinned upload, in the version's
    suites: its version, and every package of it the shipped variant needs
    (the image's and the headers' kernel dependencies, followed)."""
    series = version.package.removeprefix("linux-source-")
    found = {source: images(indexes.apt(source), series) for source in version.sources()}
    every = [p for listed in found.values() for p in listed]
    if not every:
        raise InputError(f"{', '.join(version.suites)} offer no linux-image of {series} "
                         "(amd64, signed)")
    image = nearest(every, version.version)
    apt = indexes.apt(next(s for s, listed in found.items() if image in listed))
    named = IMAGE.fullmatch(image.package)
    assert named is not None  # images() took only such names
    release = named.group(1)
    todo = [(image.package, image.version), (f"linux-headers-{release}", image.version)]
    pins: dict[str, Pin] = {}
    while todo:
        package, wanted = todo.pop()
        if package in pins:
            continue
        fields = next((f for f in apt.show([package]) if f.get("Version") == wanted), None)
        item = published_from(fields or {}, apt.source.suite, f"{apt.source.suite} index")
        if fields is None or item is None:
            raise InputError(f"{apt.source.suite}'s index has no {package} {wanted}")
        pins[package] = item.pin
        todo += depends(fields, image.version)
    if any(p.startswith("linux-binary-") for p in pins):
        pins = {p: pin for p, pin in pins.items() if not p.startswith("linux-image-")}
    return image.version, sorted(pins.values(), key=lambda p: (
        next(i for i, prefix in enumerate(ORDER) if p.package.startswith(prefix)), p.package))
