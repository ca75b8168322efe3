"""The matrix: versions x variants, each cell built, booted and judged.

Per version: fetch once, then walk the variants in series order (upstream,
reverted, backported) on the same tree and build dir, so only the first
variant pays for a full kernel build. Versions run side by side
(`--parallel`), which overlaps one kernel's downloads, boots and dracut runs
with another's build; once the first versions have their trees, a fetch-ahead
thread downloads and extracts the ones still waiting for a worker, so their
turn starts with the build.

A finished cell is stored under <cache>/cells/<key>, the key hashed from
everything that decides its result (package checksum, the variant's series,
fragments, semantic patches, the test matrix, tool versions): a rerun with
nothing changed reuses it instead of building and booting again.
"""
import hashlib
import json
import platform
import re
import secrets
import shutil
import subprocess
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from . import (REPO, boot, build, fetch, initramfs, kconfig, ktap, report, results, series,
               verdict, versions)
from .cache import write_atomic
from .errors import TaintportError
from .process import STOPPING, stop_all
from .progress import Progress
from . import provoke  # test-only switch, kept apart from the pipeline's stages

DEFAULT_TIMEOUT = 180
CELL_FILES = ("cell.json", "console.log", "build.log", "ktap.txt")


@dataclass(frozen=True)
class Done:
    """A cell this run need not build: from the --resume dir, or stored."""
    variant: str
    resumed: dict | None = None
    stored: Path | None = None


@dataclass(frozen=True)
class Built:
    artifacts: build.Artifacts
    identical: "verdict.Check | None"  # the backported cell's host-side check


def digest(path):
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def tree_digest(folder):
    h = hashlib.sha256()
    for f in sorted(p for p in Path(folder).rglob("*") if p.is_file()
                    and "__pycache__" not in p.parts and "out" not in p.parts):
        h.update(str(f.relative_to(folder)).encode() + b"\0" + f.read_bytes())
    return h.hexdigest()


def tool_versions():
    def first_line(cmd):
        try:
            out = subprocess.run(cmd, capture_output=True, text=True, timeout=20)
            return (out.stdout or out.stderr).strip().splitlines()[0]
        except (OSError, IndexError, subprocess.TimeoutExpired):
            return "missing"
    return {"gcc": first_line(["gcc", "--version"]),
            "qemu": first_line([boot.QEMU, "--version"]),
            "dracut": first_line(["dracut", "--version"]),
            "quilt": first_line(["quilt", "--version"]),
            "spatch": first_line(["spatch", "--version"]),
            "python": platform.python_version()}


def inputs(version, quilt_series, variant):
    patches = {p: digest(quilt_series.directory / p) for p in quilt_series.for_variant(variant)}
    # No digest of semantic-patches/ itself: the generated patches in the
    # series are what the cell builds, so an edit that leaves them alone
    # (a comment) reuses every cell, and make check's regen --check catches
    # an edit whose patches were not regenerated.
    found = {"package": version.package, "package_version": version.version,
             "deb_sha256": version.sha256, "ships": list(version.ships),
             "series": patches,
             "fragments": {f.name: digest(f) for f in kconfig.fragments(version.name)},
             "expectations_sha256": digest(verdict.EXPECTATIONS),
             "test_matrix_sha256": tree_digest(REPO / "test-matrix")}
    return found


def kernel_series(version):
    """(6, 12) for linux-source-6.12: newer kernels build longer, when nothing
    measured says otherwise."""
    numbers = re.findall(r"\d+", version.package)
    return tuple(int(n) for n in numbers)


def cell_key(variant, cell_inputs, tools, timeout):
    # The variant too: two variants can have the same inputs (a series whose
    # backported/ patches were dropped builds what reverted builds) and must
    # still never take each other's stored cell, judged by other rules.
    text = json.dumps({"variant": variant, "inputs": cell_inputs, "tools": tools,
                       "timeout": timeout}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()


class Runner:
    def __init__(self, cache, out, *, quilt_dir=series.QUILT_DIR, jobs=None, parallel=1,
                 timeout=DEFAULT_TIMEOUT, reuse=True, resume=False, fault=None,
                 reuse_builds=True):
        self.cache = cache
        self.out = Path(out)
        self.quilt_dir = Path(quilt_dir)
        self.jobs = jobs or build.default_jobs()
        self.parallel = max(1, parallel)
        self.timeout = timeout
        self.reuse = reuse and not fault
        self.reuse_builds = reuse_builds  # byte-identical variants share a build and boot
        self.resume = resume
        self.fault = fault  # taintport.fault for the agent: only to test the harness
        self.provoked = provoke.from_environment()  # test-only, see provoke.py
        self.expectations = verdict.load()
        self.tools = tool_versions()
        self.accel = None  # boot.Accel, decided by the first probe
        self.accel_lock = threading.Lock()
        self.initramfs_bases = set()  # dracut images made by this run
        self.publish_lock = threading.Lock()
        self.lanes_lock = threading.Lock()
        self.lanes_started = set()  # version names a worker has taken
        self.fetched = {}  # version name -> Event: its worker is past fetching
        self.cells = {}
        self.earlier = {}  # --resume: the cells the folder held, by (version, variant)
        self.order = []
        self.progress = None
        self.meta = {"started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                     "tools": self.tools}

    # -- results -----------------------------------------------------------
    def publish(self, cell):
        cell = provoke.apply(self.provoked, cell)  # the caller stores its own, unprovoked
        with self.publish_lock:
            self.cells[(cell["version"], cell["variant"])] = cell
            report.write_cell(self.out, cell)
            meta = dict(self.meta)
            if self.accel:
                meta["accelerator"] = {"name": self.accel.name, "reason": self.accel.reason}
            report.write_matrix(self.out, meta, self.ordered_cells())
        detail = cell["errors"][0].splitlines()[0] if cell["errors"] else \
            ("reused" if cell.get("reused") else "")
        self.progress.done(f"{cell['version']} {cell['variant']}", cell["status"], detail)

    def ordered_cells(self):
        """This run's cells in order; with --resume, the folder's other cells stay."""
        ran = [self.cells.get(k) or self.earlier.get(k) for k in self.order]
        kept = [cell for k, cell in sorted(self.earlier.items()) if k not in self.order]
        return [cell for cell in ran if cell] + kept

    # -- the run -----------------------------------------------------------
    def run(self, versions, variants):
        if self.resume:
            self.earlier = results.earlier_cells(self.out)
        for variant in variants:
            series.check_variant(variant)
            self.expectations.variant(variant)
        ordered = [v for v in series.VARIANTS if v in variants]
        self.order = [(v.name, var) for v in versions for var in ordered]
        self.progress = Progress(len(self.order),
                                 costs_path=self.cache.root / "stage-costs.json")
        self.fetched = {v.name: threading.Event() for v in versions}
        # Longest first, so that the last kernel left building alone (one
        # core idle in its serial phases) is a short one. The report keeps
        # the order asked for.
        costs = self.build_costs()
        versions = sorted(versions, key=lambda v: (costs.get(v.name, float("inf")),
                                                   kernel_series(v)), reverse=True)
        done = threading.Event()
        ahead = threading.Thread(target=self.fetch_ahead, args=(versions, ordered, done),
                                 name="fetch-ahead", daemon=True)
        ahead.start()
        try:
            with ThreadPoolExecutor(max_workers=self.parallel) as pool:
                futures = [pool.submit(self.run_version, v, ordered) for v in versions]
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
        return report.exit_code(self.ordered_cells())

    def build_costs(self):
        """Seconds of the longest build seen per version, from earlier runs."""
        try:
            return json.loads((self.cache.root / "build-costs.json").read_text())
        except (OSError, ValueError):
            return {}

    def record_cost(self, version, seconds):
        with self.publish_lock:
            costs = self.build_costs()
            if seconds > costs.get(version.name, 0):
                costs[version.name] = round(seconds, 1)
                write_atomic(self.cache.root / "build-costs.json",
                             json.dumps(costs, indent=1, sort_keys=True) + "\n")

    def fetch_ahead(self, versions, variants, done):
        """Fetch the trees of versions no worker has taken yet, one at a time.

        It starts once the first workers are past their own fetch (they come
        first), stays at most one tree per worker ahead of them (each
        extraction writes ~1.8 GB beside the builds), takes a version only if
        nobody holds its lock, and keeps quiet about failures: the version's
        worker fetches again and puts the error in its cells.
        """
        for first in versions[:self.parallel]:
            while not self.fetched[first.name].wait(1):
                if done.is_set() or STOPPING.is_set():
                    return
        for index, version in enumerate(versions[self.parallel:], start=1):
            while True:
                if done.is_set() or STOPPING.is_set():
                    return
                with self.lanes_lock:
                    taken = len(self.lanes_started)
                if taken >= index:
                    break
                done.wait(1)
            with self.lanes_lock:
                if version.name in self.lanes_started:
                    continue
            if not self.needs_work(version, variants):
                continue
            with self.cache.try_locked(version.name) as mine:
                if not mine:
                    continue
                try:
                    fetch.fetch(self.cache, version, self.out / version.name / "fetch.log",
                                nice=build.NICE_LEVEL)
                except TaintportError:
                    continue

    def mark_fetched(self, version):
        if version.name in self.fetched:
            self.fetched[version.name].set()

    def needs_work(self, version, variants):
        try:
            return bool(self.plan(version, variants)[2])
        except (TaintportError, OSError, ValueError):
            return True  # let the worker find and report it

    def plan(self, version, variants):
        """(quilt series, cells already done, cells to run) for one version.

        Done: a finished cell of the --resume dir, or a stored result whose
        inputs hash the same. To run: (variant, inputs, key) of the rest.
        """
        quilt_series = series.load(version.name, self.quilt_dir)
        done, todo = [], []
        for variant in variants:
            cell_inputs = inputs(version, quilt_series, variant)
            key = cell_key(variant, cell_inputs, self.tools, self.timeout)
            earlier = self.finished_earlier(version, variant, key)
            if earlier:
                done.append(Done(variant, resumed=earlier))
                continue
            folder = self.stored(key) if self.reuse else None
            if folder:
                done.append(Done(variant, stored=folder))
                continue
            todo.append((variant, cell_inputs, key))
        return quilt_series, done, todo

    def cell_base(self, version, variant):
        states = self.expectations.states(variant, version.ships)
        return {"version": version.name, "variant": variant, "status": "error",
                "fixes": {fix: state.value for fix, state in states.items()},
                "errors": [], "checks": [], "timings": {}, "accelerator": None,
                "kernel_release": None, "inputs": {}, "qemu_exit_code": None,
                "logs": {"build": f"{version.name}/{variant}/build.log",
                         "console": f"{version.name}/{variant}/console.log"}}

    def cell_dir(self, version_name, variant):
        return self.out / version_name / variant

    def finished_earlier(self, version, variant, key):
        """--resume: a cell this out dir already holds, made from the inputs of
        now (errors, and cells whose inputs changed since, are run again)."""
        cell = self.earlier.get((version.name, variant))
        if cell is None or cell["status"] == "error" or cell.get("key") != key:
            return None
        return dict(cell, resumed=True)

    def stored(self, key):
        """A stored cell's folder; a damaged one is run again, never trusted."""
        folder = self.cache.root / "cells" / key
        try:
            results.read_cell(folder / "cell.json")
        except TaintportError:
            return None
        return folder

    def store(self, key, cell):
        """Keep a sound result (not an error) for reruns with the same inputs."""
        if cell["status"] == "error" or self.fault:
            return
        src = self.cell_dir(cell["version"], cell["variant"])
        folder = self.cache.root / "cells" / key
        tmp = folder.with_name(key + ".tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        for name in CELL_FILES:
            if (src / name).exists():
                shutil.copy2(src / name, tmp / name)
        shutil.rmtree(folder, ignore_errors=True)
        tmp.rename(folder)

    def reuse_stored(self, folder, version, variant):
        dest = self.cell_dir(version.name, variant)
        dest.mkdir(parents=True, exist_ok=True)
        for name in CELL_FILES:
            if (folder / name).exists():
                shutil.copy2(folder / name, dest / name)
        cell = results.read_cell(dest / "cell.json")
        cell["reused"] = True
        return cell

    def run_version(self, version, variants):
        with self.lanes_lock:
            self.lanes_started.add(version.name)
        try:
            with self.cache.locked(version.name):
                self._run_version(version, variants)
        finally:
            self.mark_fetched(version)

    def _run_version(self, version, variants):
        (self.out / version.name).mkdir(parents=True, exist_ok=True)
        try:
            quilt_series, done, todo = self.plan(version, variants)
        except TaintportError as err:
            for variant in variants:
                cell = self.cell_base(version, variant)
                cell["errors"] = [str(err)]
                self.publish(cell)
            return
        for cell in done:
            self.publish(cell.resumed or self.reuse_stored(cell.stored, version, cell.variant))
        if not todo:
            return

        label = f"{version.name} {todo[0][0]}"
        self.progress.stage(label, "fetch")
        start = time.monotonic()
        try:
            fetched = fetch.fetch(self.cache, version, self.out / version.name / "fetch.log")
            self.mark_fetched(version)
            versions.check_ships(version, fetched.tree)
        except TaintportError as err:
            if STOPPING.is_set():
                return  # an interrupted fetch is no result: --resume runs these cells
            for variant, cell_inputs, _ in todo:
                cell = self.cell_base(version, variant)
                cell["inputs"] = cell_inputs
                cell["errors"] = [str(err)]
                self.publish(cell)
            return
        fetch_seconds = round(time.monotonic() - start, 2)

        # A variant's initramfs and boot only read its own artifacts, so they
        # run while the next variant switches the tree and rebuilds: QEMU's
        # one TCG thread fills the core the link steps leave idle. One boot
        # at a time per version, in series order, so cells publish in order.
        with ThreadPoolExecutor(max_workers=1,
                                thread_name_prefix=f"boot-{version.name}") as booter:
            booting = []
            for variant, cell_inputs, key in todo:
                if STOPPING.is_set():
                    break
                cell = self.cell_base(version, variant)
                cell["inputs"] = cell_inputs
                cell["key"] = key  # --resume reuses the cell only while this holds
                cell["timings"]["fetch"] = fetch_seconds
                if self.reuse_identical(version, fetched.tree, quilt_series, variant, cell,
                                        booting):
                    self.publish(cell)
                    self.store(key, cell)
                    continue
                try:
                    built = self.build_cell(version, fetched.tree, quilt_series, variant,
                                            cell)
                except TaintportError as err:
                    if STOPPING.is_set():
                        break  # an interrupted cell is not a result: --resume runs it
                    cell["errors"].append(str(err))
                    built = None
                booting.append(booter.submit(self.boot_cell, key, cell, built))
            for future in booting:
                future.result()

    def reuse_identical(self, version, tree, quilt_series, variant, cell, booting):
        """A variant whose C sources are byte-identical to the one it reuses
        (test-matrix/expectations.toml) takes that cell's build and boot
        instead of making them again; True when it did. The compared files
        are every C file the series touches; make check still builds both
        once and compares the images."""
        other = self.expectations.variant(variant).reuses
        if not other or not self.reuse_builds:
            return False
        for future in booting:
            future.result()  # the other cell is published when its boot ends
        earlier = self.cells.get((version.name, other))
        if not earlier or earlier["status"] == verdict.Status.ERROR.value:
            return False
        expect = self.expectations
        if expect.expected(expect.states(variant, version.ships)) != \
                expect.expected(expect.states(other, version.ships)):
            return False  # the same kernel, judged by other rules: boot it
        start = time.monotonic()
        mine = series.source_digest(series.sources(tree, quilt_series, variant))
        theirs = earlier["inputs"].get("sources_sha256") or series.source_digest(
            series.sources(tree, quilt_series, other))
        cell["timings"]["apply"] = round(time.monotonic() - start, 2)
        if mine != theirs:
            return False
        same = verdict.Check(name=f"{variant}_sources_identical_to_{other}", expected=True,
                             observed=True,
                             diagnostics=(f"host: every C file the series touches is "
                                          f"byte-identical to {other}'s",))
        cell.update(status=earlier["status"], errors=list(earlier["errors"]),
                    checks=[same.as_dict()] + [c for c in earlier["checks"]
                                               if not c["name"].startswith(other + "_")],
                    accelerator=earlier["accelerator"],
                    kernel_release=earlier["kernel_release"],
                    qemu_exit_code=earlier["qemu_exit_code"], reused_from=other,
                    logs=dict(earlier["logs"]))
        cell["inputs"]["sources_sha256"] = mine
        cell["inputs"]["bzimage_sha256"] = earlier["inputs"].get("bzimage_sha256")
        states = self.expectations.states(variant, version.ships)
        if earlier["status"] == verdict.Status.AS_EXPECTED.value and \
                self.expectations.known_bug(variant, states):
            cell["status"] = verdict.Status.KNOWN_BUG.value
        return True

    def timed(self, cell, stage, func, *args):
        self.progress.stage(f"{cell['version']} {cell['variant']}", stage)
        start = time.monotonic()
        try:
            return func(*args)
        finally:
            cell["timings"][stage] = round(time.monotonic() - start, 2)

    def probe_once(self, cell, bzimage, workdir):
        with self.accel_lock:
            if self.accel is None:
                self.accel = self.timed(cell, "kvm_probe", boot.probe, bzimage, workdir)
                self.progress.note(f"accelerator: {self.accel.name} ({self.accel.reason})")
        return self.accel

    def build_cell(self, version, tree, quilt_series, variant, cell):
        """The tree and build dir half of a cell: switch variant, check, build."""
        cdir = self.cell_dir(version.name, variant)
        cdir.mkdir(parents=True, exist_ok=True)
        build_log = cdir / "build.log"
        build_log.unlink(missing_ok=True)
        touched = self.timed(cell, "apply", series.switch, tree, quilt_series, variant,
                             build_log)
        # A host-side check of the layer's tree, judged with the guest's checks:
        # a layer that misses something must still be booted and shown failing.
        identical = None
        other = self.expectations.variant(variant).sources_match
        if other:
            mine = series.sources(tree, quilt_series, variant)
            theirs = series.sources(tree, quilt_series, other)
            differ = sorted(p for p in set(mine) | set(theirs) if mine.get(p) != theirs.get(p))
            identical = verdict.Check(
                name=f"{variant}_sources_identical_to_{other}", expected=True,
                observed=not differ,
                diagnostics=tuple(f"host: {p} differs from {other} (upstream + the "
                                  "exported layer)" for p in differ))
            cell["inputs"]["sources_sha256"] = series.source_digest(mine)
        artifacts = self.timed(cell, "build", build.build_variant, tree,
                               self.cache.build(version), version.name,
                               self.cache.artifacts(version, variant), build_log,
                               self.jobs, self.cache.root)
        self.record_cost(version, cell["timings"]["build"])
        cell["kernel_release"] = artifacts.release
        cell["inputs"]["bzimage_sha256"] = digest(artifacts.bzimage)
        return Built(artifacts=artifacts, identical=identical)

    def boot_cell(self, key, cell, built):
        """The artifacts half: initramfs, boot, verdict; then publish and store."""
        if built is not None:
            try:
                self.judge_boot(cell, built)
            except TaintportError as err:
                if STOPPING.is_set():
                    return  # an interrupted cell is not a result: --resume runs it
                cell["status"] = "error"
                cell["errors"].append(str(err))
        self.publish(cell)
        self.store(key, cell)

    def make_initramfs(self, artifacts, token, log):
        """dracut once per kernel and run, then the cell's files appended."""
        # Named by the agent it holds, in the kernel's folder (one release):
        # a variant whose agent differs gets an image of its own instead of
        # overwriting the one the other variants reuse.
        base = artifacts.directory.parent / \
            f"initramfs-base-{digest(artifacts.agent)[:16]}.img"
        if base not in self.initramfs_bases:
            initramfs.base(artifacts.agent, artifacts.release, self.cache.root, base, log)
            # one boot thread per version: no other thread makes this image
            self.initramfs_bases.add(base)
        return initramfs.build(artifacts, token, base, artifacts.directory / "initramfs.img")

    def judge_boot(self, cell, built):
        artifacts, variant = built.artifacts, cell["variant"]
        cdir = self.cell_dir(cell["version"], variant)
        token = secrets.token_hex(8)
        # the first boot decides the accelerator; its probe runs beside dracut
        probing = ThreadPoolExecutor(max_workers=1, thread_name_prefix="kvm-probe")
        try:
            accel_future = probing.submit(self.probe_once, cell, artifacts.bzimage,
                                          artifacts.directory)
            image = self.timed(cell, "initramfs", self.make_initramfs, artifacts, token,
                               cdir / "build.log")
            accel = accel_future.result()
        finally:
            probing.shutdown(wait=True)
        cell["accelerator"] = accel.name
        append = f"console=ttyS0 panic=-1 taintport.token={token}"
        if self.fault:
            append += f" taintport.fault={self.fault}"
        booted = self.timed(cell, "boot", boot.boot, artifacts.bzimage, image,
                            cdir / "console.log", append, accel.name, self.timeout)
        cell["qemu_exit_code"] = booted.exit_code
        text = booted.console.read_text(errors="replace") if booted.console.exists() else ""
        parsed = ktap.parse(text)
        (cdir / "ktap.txt").write_text("\n".join(parsed.lines) + "\n")
        if booted.timed_out:
            parsed.errors.insert(0, f"guest killed at the {self.timeout}s timeout")
        version_ships = cell["inputs"]["ships"]
        states = self.expectations.states(variant, version_ships)
        judgement = verdict.judge(parsed, self.expectations.expected(states),
                                  self.expectations.known_bug(variant, states))
        if built.identical is not None:
            judgement = verdict.with_check(judgement, built.identical)
        cell["status"] = judgement.status.value
        cell["errors"] += judgement.errors
        cell["checks"] = [c.as_dict() for c in judgement.checks]
        if parsed.panic:
            cell["panic"] = parsed.panic


def default_out():
    return results.unique_folder(REPO / "results", time.strftime("%Y%m%dT%H%M%S"))
