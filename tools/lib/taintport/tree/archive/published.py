# SPDX-License-Identifier: GPL-2.0
"""What a suite's Packages index publishes of a package, read with deb822."""
from dataclasses import dataclass, replace

from debian.deb822 import Deb822

from taintport import names
from taintport.errors import InputError
from taintport.tree.versions import Pin, Version


@dataclass(frozen=True)
class Published:
    """One package version as a suite's index lists it now."""
    package: str
    version: str
    sha256: str
    size: int
    suite: str

    @property
    def pin(self) -> Pin:
        return Pin(self.package, self.version, self.sha256, self.size)

    def pinning(self, version: Version) -> Version:
        """version with its pin moved to this upload (the descriptor is not touched)."""
        return replace(version, package=self.package, suite=self.suite, version=self.version,
                       sha256=self.sha256, size=self.size)


def stanzas(text: str) -> list[Deb822]:
    """Each stanza of apt-cache show's output, continuation lines and all."""
    return list(Deb822.iter_paragraphs(text.splitlines(), use_apt_pkg=False))


def published_from(fields: dict[str, str], suite: str, where: str) -> Published | None:
    """A stanza as a Published, every field checked: the index is input too
    (its version and name become a .deb's path in the cache)."""
    if not {"Package", "Version", "SHA256"} <= set(fields):
        return None
    names.package(fields["Package"], f"{where}: Package")
    names.deb_version(fields["Version"], f"{where}: {fields['Package']} Version")
    names.check(names.SHA256, fields["SHA256"], f"{where}: {fields['Package']} SHA256",
                "64 lower-case hex digits")
    size = fields.get("Size", "")
    if not (size.isascii() and size.isdigit()):
        raise InputError(f"{where}: {fields['Package']} {fields['Version']} has no size")
    return Published(fields["Package"], fields["Version"], fields["SHA256"], int(size), suite)
