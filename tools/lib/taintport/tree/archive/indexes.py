# SPDX-License-Identifier: GPL-2.0
"""The suites' indexes one command reads, and where a version's pin stands in them."""
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from debian.debian_support import Version as DebianVersion

from taintport.cache import Cache
from taintport.tree.archive.apt import PrivateApt
from taintport.tree.archive.published import Published
from taintport.tree.versions import Source, Version


class Indexes:
    """The private apt indexes of the suites one command reads, each updated
    once (a suite two versions share is read once)."""

    def __init__(self, cache: Cache, log: Path) -> None:
        self.root = cache.apt()
        self.log = log
        self.lock = threading.Lock()
        self.updated: dict[Source, PrivateApt] = {}

    def apt(self, source: Source) -> PrivateApt:
        with self.lock:
            if source not in self.updated:
                apt = PrivateApt(self.root, source)
                apt.update(self.log)
                self.updated[source] = apt
            return self.updated[source]

    def published(self, sources: Iterable[Source], package: str) -> list[Published]:
        """Every version of package the suites list, oldest first."""
        found = [p for source in sources for p in self.apt(source).published(package).values()]
        return sorted(found, key=lambda p: DebianVersion(p.version))

    def newest(self, sources: Iterable[Source], package: str) -> Published | None:
        """The newest upload of package among the suites (newest wins)."""
        found = self.published(sources, package)
        return found[-1] if found else None


@dataclass(frozen=True)
class Standing:
    """A version's pin against what its suites serve now."""
    version: Version
    newest: Published | None  # None: none of its suites serves the package any more

    @property
    def current(self) -> bool:
        return self.newest is not None and self.newest.version == self.version.version \
            and self.newest.sha256 == self.version.sha256


def standing(indexes: Indexes, version: Version) -> Standing:
    return Standing(version, indexes.newest(version.sources(), version.package))
