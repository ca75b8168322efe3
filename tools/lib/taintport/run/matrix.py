# SPDX-License-Identifier: GPL-2.0
"""The matrix: versions x variants, each cell built, booted and judged.

This module runs the workers; schedule.py says which kernel when, store.py
keys, keeps and reuses cells, and stages.py is the chain each cell goes
through. Per version: fetch once, then walk the variants in the order of
test-matrix/variants.toml on the same tree and build dir, so only the first
variant pays for a full kernel build.
"""
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

from taintport import REPO
from taintport.cache import Cache
from taintport.errors import TaintportError
from taintport.judge import verdict
from taintport.kernel import build
from taintport.layer.ships import check_ships
from taintport.process import STOPPING, stop_all
from taintport.results.cells import Cell, Inputs, exit_code
from taintport.results.folder import Folder, unique_folder
from taintport.run import selftests, sources, store
from taintport.run.progress import Progress
from taintport.run.schedule import Schedule
from taintport.run.stages import Built, Chain, expectations
from taintport.tree import fetch, series
from taintport.tree.variants import Kind, Variant, table
from taintport.tree.versions import Version

DEFAULT_TIMEOUT = 180


class Runner:
    def __init__(self, cache: Cache, out: Path, *, quilt_dir: Path = series.QUILT_DIR,
                 jobs: int | None = None, parallel: int = 1, timeout: int = DEFAULT_TIMEOUT,
                 reuse: bool = True, resume: bool = False,
                 reuse_builds: bool = True) -> None:
        self.cache = cache
        self.quilt_dir = Path(quilt_dir)
        self.parallel = max(1, parallel)
        self.timeout = timeout
        self.reuse_builds = reuse_builds  # byte-identical variants share a build and boot
        self.tools = store.tool_versions()
        self.progress = Progress(0, costs_path=cache.root / "stage-costs.json")
        self.stored = store.Stored(cache, out)
        self.reuse = reuse
        self.resume = resume
        self.folder = Folder(out, time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                                   self.tools)
        self.chain = Chain(cache, out, expectations(), self.progress,
                           jobs=jobs or build.default_jobs(), timeout=timeout)
        self.variants: list[Variant] = []
        self.schedule = Schedule(cache, out, self.parallel,
                                 lambda version: self.needs_work(version, self.variants))

    def run(self, chosen: list[Version], variants: list[Variant]) -> int:
        if self.resume:
            self.folder.read_earlier()
        ordered = self.variants = [v for v in table().booted() if v in variants]
        self.folder.order = [(v.name, var.name) for v in chosen for var in ordered]
        self.progress.total = len(self.folder.order)
        chosen = self.schedule.order(chosen)  # the report keeps the order asked for
        done = threading.Event()
        ahead = threading.Thread(target=self.schedule.fetch_ahead, args=(chosen, done),
                                 name="fetch-ahead", daemon=True)
        ahead.start()
        try:
            with ThreadPoolExecutor(max_workers=self.parallel) as pool:
                futures = [pool.submit(self.run_version, v, ordered) for v in chosen]
                try:
                    for future in futures:
                        future.result()
                except BaseException:
                    # Ctrl-C or SIGTERM: end every child now so the workers return
                    # (and the pool can shut down); their cells are not written.
                    stop_all()
                    for future in futures:
                        future.cancel()
                    raise
        finally:
            done.set()
            ahead.join(timeout=30)
            self.progress.close()
        return exit_code(self.ordered_cells())

    def ordered_cells(self) -> list[Cell]:
        return self.folder.ordered_cells()

    def publish(self, cell: Cell) -> None:
        check = cell.variant.check(Kind.AGREES)
        if check is not None:
            self.chain.agree(cell, self.folder.published(cell.version,
                                                         table().named(check.peer)))
        self.folder.accelerator = self.chain.accel
        self.folder.publish(cell)
        detail = cell.errors[0].splitlines()[0] if cell.errors else \
            ("reused" if cell.reused else "")
        self.progress.done(f"{cell.version} {cell.variant}", cell.status.value, detail)
        # a cell published before its peer (taken from the store) is judged again
        for variant in self.variants:
            mine = self.folder.published(cell.version, variant)
            theirs = variant.check(Kind.AGREES)
            if mine is not None and theirs is not None and theirs.peer == cell.variant.name:
                self.chain.agree(mine, cell)
                self.folder.publish(mine)

    def needs_work(self, version: Version, variants: list[Variant]) -> bool:
        """Whether a cell of the version is still to run: each reads the
        source tree (the distribution's binary its selftests)."""
        try:
            return bool(self.plan(version, variants)[2])
        except (TaintportError, OSError, ValueError):
            return True  # let the worker find and report it

    def plan(self, version: Version, variants: list[Variant]) -> \
            tuple[series.Series, list[store.Done], list[store.Todo]]:
        quilt_series = series.load(version.name, self.quilt_dir)
        done, todo = store.plan(version, quilt_series, variants, self.tools, self.timeout,
                                self.folder, self.stored if self.reuse else None)
        return quilt_series, done, todo

    # -- one version's worker ------------------------------------------------
    def run_version(self, version: Version, variants: list[Variant]) -> None:
        self.schedule.take(version)
        try:
            with self.cache.locked(version.name):
                self.work(version, variants)
        finally:
            self.schedule.mark_fetched(version)

    def work(self, version: Version, variants: list[Variant]) -> None:
        (self.folder.out / version.name).mkdir(parents=True, exist_ok=True)
        try:
            quilt_series, done, todo = self.plan(version, variants)
        except TaintportError as err:
            self.publish_errors(version, [(v, None) for v in variants], err)
            return
        for finished in done:
            self.publish(finished.resumed or self.take_stored(finished, version))
        if not todo:
            return
        start = time.monotonic()
        # every cell reads the source tree: a built one its kernel, the
        # distribution's binary its selftests (1-2 GB extracted, once a series)
        self.progress.stage(f"{version.name} {todo[0].variant}", "fetch")
        try:
            fetched = fetch.fetch(self.cache, version, self.folder.out / version.name /
                                  "fetch.log")
            self.schedule.mark_fetched(version)
            self.chain.expectations.check_applicable(
                version.name, check_ships(version, fetched.tree, self.cache))
        except TaintportError as err:
            if not STOPPING.is_set():  # an interrupted fetch is no result: --resume runs these
                self.publish_errors(version, [(t.variant, t.inputs) for t in todo], err)
            return
        self.walk_variants(version, fetched.tree, quilt_series, todo,
                           time.monotonic() - start)

    def take_stored(self, finished: store.Done, version: Version) -> Cell:
        assert finished.stored is not None  # a Done is resumed or stored
        return self.stored.take(finished.stored, version.name, finished.variant)

    def publish_errors(self, version: Version, cells: list[tuple[Variant, Inputs | None]],
                       err: TaintportError) -> None:
        for variant, cell_inputs in cells:
            cell = self.chain.new_cell(version, variant, cell_inputs)
            cell.errors = [str(err)]
            self.publish(cell)

    def walk_variants(self, version: Version, tree: Path, quilt_series: series.Series,
                      todo: list[store.Todo], fetch_seconds: float) -> None:
        """Build each variant in table order; boot each beside the next one's build.

        A variant's initramfs and boot only read its own artifacts, so they
        run while the next variant switches the tree and starts its build.
        One boot at a time per version, in series order, so cells publish in
        order.
        """
        with ThreadPoolExecutor(max_workers=1,
                                thread_name_prefix=f"boot-{version.name}") as booter:
            booting: list[Future[None]] = []
            for item in todo:
                if STOPPING.is_set():
                    break
                cell = self.chain.new_cell(version, item.variant, item.inputs, item.key)
                cell.timings.record("fetch", fetch_seconds)
                if self.reuse_identical(version, tree, quilt_series, cell, booting):
                    self.finish(item, cell)
                    continue
                built: Built | None = None
                source = sources.of(item.variant)
                try:
                    built = source.prepare(self.chain, version, tree, quilt_series, cell)
                    if source.from_tree:  # the cost of a build of the kernel itself
                        self.schedule.record_cost(version, cell.timings.build)
                except TaintportError as err:
                    if STOPPING.is_set():
                        break  # an interrupted cell is not a result: --resume runs it
                    cell.errors.append(str(err))
                booting.append(booter.submit(self.boot_cell, item, cell, built))
            for future in booting:
                future.result()

    def reuse_identical(self, version: Version, tree: Path, quilt_series: series.Series,
                        cell: Cell, booting: list[Future[None]]) -> bool:
        if not cell.variant.reuses or not self.reuse_builds:
            return False

        def published() -> dict[str, Cell | None]:
            for future in booting:
                future.result()  # the other cells are published when their boots end
            return {other: self.folder.published(version.name, table().named(other))
                    for other in cell.variant.reuses}
        return self.chain.reuse_identical(version, tree, quilt_series, cell, published)

    def boot_cell(self, item: store.Todo, cell: Cell, built: Built | None) -> None:
        """The artifacts half (initramfs, boot, verdict); then publish and store."""
        if built is not None:
            try:
                self.chain.boot(cell, built)
                self.selftests(cell, built)
            except TaintportError as err:
                if STOPPING.is_set():
                    return  # an interrupted cell is not a result: --resume runs it
                cell.status = verdict.Status.ERROR
                cell.errors.append(str(err))
        self.finish(item, cell)

    def selftests(self, cell: Cell, built: Built) -> None:
        """The kernel's own selftests, judged against this run's cell of the
        tree as shipped built by us (published before: table order, one boot
        thread per version)."""
        selftests.stage(self.chain, cell, built,
                        self.folder.published(cell.version, table().as_shipped()))

    def finish(self, item: store.Todo, cell: Cell) -> None:
        self.publish(cell)
        # a cell whose agent broke on purpose (taintport.fault=) tested the
        # harness, not the kernel: no result to keep
        if cell.fault is None:
            self.stored.keep(item.key, cell)


def default_out() -> Path:
    return unique_folder(REPO / "results", time.strftime("%Y%m%dT%H%M%S"))
