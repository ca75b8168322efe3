# SPDX-License-Identifier: GPL-2.0
"""Which kernel when: the longest build first, and trees fetched ahead of their turn.

Versions run side by side (`--parallel`), which overlaps one kernel's
downloads, rebuilds, boots and dracut runs with another's cold build (one
cold build at a time: stages.Chain.cold_build). Once the first
versions have their trees, a fetch-ahead thread downloads and extracts the
ones still waiting for a worker, so their turn starts with the build.
"""
import json
import re
import threading
from pathlib import Path
from typing import Callable

from taintport.cache import Cache, write_atomic
from taintport.errors import TaintportError
from taintport.process import NICE_LEVEL, STOPPING
from taintport.tree import fetch
from taintport.tree.versions import Version


def kernel_series(version: Version) -> tuple[int, ...]:
    """(6, 12) for linux-source-6.12: newer kernels build longer, when nothing
    measured says otherwise."""
    return tuple(int(n) for n in re.findall(r"\d+", version.package))


class Schedule:
    def __init__(self, cache: Cache, out: Path, parallel: int,
                 needs_work: Callable[[Version], bool]) -> None:
        self.cache = cache
        self.out = Path(out)
        self.parallel = parallel
        # False: no cell of the version left to run needs its source tree
        self.needs_work = needs_work
        self.lock = threading.Lock()
        self.lanes_started: set[str] = set()  # version names a worker has taken
        self.fetched: dict[str, threading.Event] = {}  # its worker is past fetching

    def order(self, chosen: list[Version]) -> list[Version]:
        """Longest first, so that the last kernel left building alone (one core
        idle in its serial phases) is a short one."""
        self.fetched = {v.name: threading.Event() for v in chosen}
        costs = self.build_costs()
        return sorted(chosen, key=lambda v: (costs.get(v.name, float("inf")),
                                             kernel_series(v)), reverse=True)

    def build_costs(self) -> dict[str, float]:
        """Seconds of the longest build seen per version, from earlier runs."""
        try:
            costs = json.loads((self.cache.root / "build-costs.json").read_text())
        except (OSError, ValueError):
            return {}
        if not isinstance(costs, dict):
            return {}
        return {k: v for k, v in costs.items() if isinstance(v, (int, float))}

    def record_cost(self, version: Version, seconds: float | None) -> None:
        with self.lock:
            costs = self.build_costs()
            if seconds is not None and seconds > costs.get(version.name, 0):
                costs[version.name] = round(seconds, 1)
                write_atomic(self.cache.root / "build-costs.json",
                             json.dumps(costs, indent=1, sort_keys=True) + "\n")

    def take(self, version: Version) -> None:
        """A worker starts on version: fetch-ahead leaves it alone."""
        with self.lock:
            self.lanes_started.add(version.name)

    def mark_fetched(self, version: Version) -> None:
        if version.name in self.fetched:
            self.fetched[version.name].set()

    def fetch_ahead(self, chosen: list[Version], done: threading.Event) -> None:
        """Fetch the trees of versions no worker has taken yet, one at a time.

        It starts once the first workers are past their own fetch (they come
        first), stays at most one tree per worker ahead of them (each
        extraction writes ~1.8 GB beside the builds), takes a version only if
        nobody holds its lock, and keeps quiet about failures: the version's
        worker fetches again and puts the error in its cells.
        """
        for first in chosen[:self.parallel]:
            while not self.fetched[first.name].wait(1):
                if done.is_set() or STOPPING.is_set():
                    return
        for index, version in enumerate(chosen[self.parallel:], start=1):
            while True:
                if done.is_set() or STOPPING.is_set():
                    return
                with self.lock:
                    taken = len(self.lanes_started)
                if taken >= index:
                    break
                done.wait(1)
            with self.lock:
                if version.name in self.lanes_started:
                    continue
            if not self.needs_work(version):
                continue
            with self.cache.try_locked(version.name) as mine:
                if not mine:
                    continue
                try:
                    fetch.fetch(self.cache, version, self.out / version.name / "fetch.log",
                                nice=NICE_LEVEL)
                except TaintportError:
                    continue
