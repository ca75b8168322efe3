# SPDX-License-Identifier: GPL-2.0
"""`versions --repin`: a descriptor's pins moved, on purpose, to the newest
upload its suites serve, and its [shipped] pins to the binary kernel Debian
built from that upload.

One writer edits the descriptor, TOML-aware (python3-tomlkit): the pinned
keys change, the maintainer's comments and layout stay. The new text must
read back as a descriptor before it replaces the file, whole
(atomic.replace_file). The quilt series may then need a refresh, which the
next matrix run shows (patches are applied with --fuzz=0).
"""
from dataclasses import dataclass
from pathlib import Path

import tomlkit
from tomlkit.exceptions import TOMLKitError
from tomlkit.items import Table

from taintport import names
from taintport.cache import Cache, write_atomic
from taintport.errors import InputError
from taintport.tree import versions
from taintport.tree.archive.images import signed_image
from taintport.tree.archive.indexes import Indexes, standing
from taintport.tree.versions import RELEASE, Pin, Version


@dataclass(frozen=True)
class ShippedPins:
    """The binary kernel of an upload: its Debian version and its packages,
    the image (or binary) first."""
    version: str
    packages: tuple[Pin, ...]

    def release(self, where: str) -> str:
        """uname -r, from the image's name: linux-image-6.1.0-57-amd64 -> 6.1.0-57-amd64."""
        image = self.packages[0].package
        release = image.split("-", 2)[2] if image.count("-") >= 2 else ""
        names.check(RELEASE, release, f"{where}: {image}", "a kernel release")
        return release


@dataclass(frozen=True)
class Repinned:
    old: str      # "suite version" before
    new: str      # and after
    shipped: str  # what became of the [shipped] pins


def repin(cache: Cache, version: Version, log: Path) -> Repinned:
    """Move the version's pins to the newest upload its suites serve (and the
    [shipped] pins to the binary built from it), rewriting its descriptor once."""
    indexes = Indexes(cache, log)
    newest = standing(indexes, version).newest
    if newest is None:
        raise InputError(f"{', '.join(version.suites)} offer no {version.package} at all now")
    moved = newest.pinning(version)
    shipped = None
    if version.shipped is not None:
        # the binary kernel follows the source it was moved to
        binary_version, pins = signed_image(indexes, moved)
        shipped = ShippedPins(binary_version, tuple(pins))
    said = rewrite(version, moved, shipped)
    return Repinned(version.upload, moved.upload, said)


def rewrite(version: Version, moved: Version, shipped: ShippedPins | None) -> str:
    """The descriptor at version.path with moved's source pin and shipped's
    binary pins (None: the [shipped] table, if any, is left as it is); says
    what became of the binary pins."""
    path = version.path
    try:
        doc = tomlkit.parse(path.read_text())
    except (OSError, UnicodeDecodeError, TOMLKitError, RecursionError) as err:
        raise InputError(f"{path}: cannot read version descriptor to rewrite it: {err}") \
            from None
    for key in ("suite", "version", "sha256", "size"):
        if key not in doc:
            raise InputError(f"{path}: no '{key} =' to rewrite")
        doc[key] = getattr(moved, key)
    said = "no [shipped] table"
    if shipped is not None:
        said = _rewrite_shipped(path, doc, version, moved, shipped)
    text = tomlkit.dumps(doc)
    versions.from_table(path, versions.parse(path, text))  # what is written must read back
    write_atomic(path, text)
    return said


def _rewrite_shipped(path: Path, doc: tomlkit.TOMLDocument, version: Version, moved: Version,
                     shipped: ShippedPins) -> str:
    table = doc.get(versions.SHIPPED)
    if not isinstance(table, Table) or "packages" not in table or version.shipped is None:
        raise InputError(f"{path}: no [shipped] table with [[shipped.packages]] to rewrite")
    release = shipped.release(f"{moved.suite} index")
    table["release"] = release
    packages = tomlkit.aot()
    for i, pin in enumerate(shipped.packages):
        entry = tomlkit.table()
        if i == 0 and shipped.version != moved.version:
            entry.add(tomlkit.comment(
                f"linux-source is {moved.version}, the suites' binaries {shipped.version}: "
                "the nearest, pinned on purpose."))
        for key in ("package", "version", "sha256", "size"):
            entry[key] = getattr(pin, key)
        packages.append(entry)
    table["packages"] = packages
    changed = [p for p in shipped.packages if p not in version.shipped.packages]
    said = (f"{release}: {len(changed)} of {len(shipped.packages)} binary pins moved"
            if changed else f"{release}: binary pins unchanged")
    if shipped.version != moved.version:
        said += f" (binaries {shipped.version}, not the source's {moved.version})"
    return said
