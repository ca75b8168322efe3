# SPDX-License-Identifier: GPL-2.0
"""The stage chain of one cell: its kernel made (sources.py: switch and build,
or the distribution's binary unpacked), the host's checks, initramfs, boot,
verdict.

`taintport matrix` runs it for every cell and `taintport boot` for one, so a
cell is judged the same way whichever verb made it: the same dracut image
name, the same files in the cell's folder (console.log, ktap.txt, build.log,
cell.json), the same checks.
"""
import re
import secrets
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, TypeVar

from taintport.cache import Cache, write_atomic
from taintport.digest import sha256_of
from taintport.errors import InputError
from taintport.judge import ktap, verdict
from taintport.kernel import boot, build, initramfs, selftests
from taintport.kernel.boot import Accel
from taintport.kernel.build import Artifacts
from taintport.layer import fixes
from taintport.results.cells import Cell, Inputs, fault_in
from taintport.run.progress import Progress
from taintport.tree import series, variants
from taintport.tree.variants import HostCheck, Kind, Variant
from taintport.tree.versions import Version

T = TypeVar("T")
# the guest's own `uname -v`, as the agent prints it
UNAME_V = re.compile(r"# taintport-agent: uname -v: (.+)")


def expectations() -> verdict.Expectations:
    """What the cells of the family the layer carries must show."""
    return verdict.load(fixes.NAMES)


@dataclass(frozen=True)
class BootProfile:
    """How a cell's kernel boots: its own command line, what the agent is
    told beside the run's token, the guest's timeout and memory."""
    append: str
    agent: tuple[str, ...]
    timeout: int
    memory: int


@dataclass(frozen=True)
class Built:
    artifacts: Artifacts
    identical: verdict.Check | None  # the host-side check of a layer's tree
    profile: BootProfile


def build_with_selftests(tree: Path, build_dir: Path, version_name: str, out: Path,
                         log: Path, jobs: int, cache_root: Path) -> Artifacts:
    """The variant's kernel, test modules and agent, and from the same tree and
    build the kernel's own selftests and the trace-event sample (run/selftests.py)."""
    artifacts = build.build_variant(tree, build_dir, version_name, out, log, jobs, cache_root)
    selftests.build_payload(tree, selftests.OurBuild(build_dir, jobs, cache_root),
                            artifacts.release, artifacts.directory, log)
    return artifacts


class Chain:
    def __init__(self, cache: Cache, out: Path, expectations: verdict.Expectations,
                 progress: Progress, *, jobs: int, timeout: int, append: str = "",
                 accel: Accel | None = None) -> None:
        self.cache = cache
        self.out = Path(out)
        self.expectations = expectations
        self.progress = progress
        self.jobs = jobs
        self.timeout = timeout
        self.append = append  # more kernel command line (boot --append)
        self.accel = accel    # None: the first boot's probe decides
        self.accel_lock = threading.Lock()
        self.initramfs_bases: set[Path] = set()  # dracut images made by this chain
        self.initramfs_lock = threading.Lock()  # every kernel's boot thread asks
        # One cold build at a time: make -j already spreads one build over
        # every core, and two at once (5.10 and 6.1, -j3 each, 2 cores) took
        # 278 s where one after the other took 264 s. What runs beside a cold
        # build is the other kernel's rebuilds, dracut and boots, the serial
        # work that --parallel is there to overlap.
        self.cold_build = threading.Lock()

    def new_cell(self, version: Version, variant: Variant, inputs: Inputs | None = None,
                 key: str | None = None) -> Cell:
        states = self.expectations.states(variant, version.ships, version.name)
        cell = Cell.new(version.name, variant, states)
        cell.inputs, cell.key = inputs, key
        cell.fault = fault_in(self.append)
        return cell

    def cell_dir(self, cell: Cell) -> Path:
        return self.out / cell.version / cell.variant.name

    def timed(self, cell: Cell, stage: str, func: Callable[..., T], *args: object) -> T:
        self.progress.stage(f"{cell.version} {cell.variant}", stage)
        start = time.monotonic()
        try:
            return func(*args)
        finally:
            cell.timings.record(stage, time.monotonic() - start)

    # -- the tree half ----------------------------------------------------
    def identical_check(self, tree: Path, quilt_series: series.Series,
                        cell: Cell) -> verdict.Check | None:
        """A layer's C files byte-identical to those of the variant it must
        match (variants.toml sources_match): a host check, judged with the
        guest's, so a layer that misses something is still booted and shown failing."""
        check = cell.variant.check(Kind.SOURCES_IDENTICAL)
        if check is None:
            return None
        other = variants.named(check.peer)
        mine = series.sources(tree, quilt_series, cell.variant)
        theirs = series.sources(tree, quilt_series, other)
        differ = sorted(p for p in set(mine) | set(theirs) if mine.get(p) != theirs.get(p))
        if cell.inputs:
            cell.inputs.sources_sha256 = series.source_digest(mine)
        return verdict.Check(
            name=check.name, expected=True, observed=not differ,
            diagnostics=tuple(f"host: {p} differs from {other} (upstream + the "
                              "exported layer)" for p in differ))

    def fresh_log(self, cell: Cell) -> Path:
        """The cell's folder, with no build.log of an earlier attempt in it."""
        cdir = self.cell_dir(cell)
        cdir.mkdir(parents=True, exist_ok=True)
        build_log = cdir / "build.log"
        build_log.unlink(missing_ok=True)
        return build_log

    def compile(self, version: Version, tree: Path, cell: Cell, log: Path) -> Artifacts:
        """The cell's kernel, test modules and agent; a cold build waits for
        the one before it to end (cold_build)."""
        build_dir = self.cache.build(version)
        # a build folder without a vmlinux is a cold build (the first of its
        # kernel); a variant's rebuild is a few files and the links, and goes on
        cold = not (build_dir / "vmlinux").exists()
        turn: AbstractContextManager[object] = nullcontext()
        if cold:
            turn = self.cold_build
            if self.cold_build.locked():
                # said, or the log shows the stage before (apply) running for
                # as long as the other kernel's cold build takes
                self.progress.stage(f"{cell.version} {cell.variant}",
                                    "build waits: one cold build at a time")
        with turn:
            return self.timed(cell, "build", build_with_selftests, tree, build_dir,
                              version.name, self.cache.artifacts(version, cell.variant.name),
                              log, self.jobs, self.cache.root)

    def built(self, cell: Cell, artifacts: Artifacts, identical: verdict.Check | None,
              profile: BootProfile) -> Built:
        cell.kernel_release = artifacts.release
        if cell.inputs:
            cell.inputs.bzimage_sha256 = sha256_of(artifacts.bzimage)
        return Built(artifacts, identical, profile)

    # -- the artifacts half -----------------------------------------------
    def probe_once(self, cell: Cell, bzimage: Path, workdir: Path) -> Accel:
        with self.accel_lock:
            if self.accel is None:
                self.accel = self.timed(cell, "kvm_probe", boot.probe, bzimage, workdir)
                self.progress.note(f"accelerator: {self.accel.name} ({self.accel.reason})")
        return self.accel

    def initramfs(self, artifacts: Artifacts, token: str, log: Path) -> Path:
        """dracut once per chain for every kernel, then the cell's files appended."""
        base = self.dracut_image(initramfs.base, "agent-base.img", log)
        return initramfs.build(artifacts, token, base, artifacts.directory / "initramfs.img")

    def dracut_image(self, make: Callable[[Path, Path, Path], Path], name: str,
                     log: Path) -> Path:
        """The cache's dracut image name, made by make for this chain's first
        asker (another run may have met another dracut on the host); the
        kernels' boot threads that ask meanwhile wait for it."""
        image = self.cache.initramfs(name)
        with self.initramfs_lock:
            if image not in self.initramfs_bases:
                image.parent.mkdir(parents=True, exist_ok=True)
                make(self.cache.root, image, log)
                self.initramfs_bases.add(image)
        return image

    def boot(self, cell: Cell, built: Built) -> None:
        """Initramfs, boot and verdict; the cell holds the result."""
        artifacts, cdir = built.artifacts, self.cell_dir(cell)
        cdir.mkdir(parents=True, exist_ok=True)
        token = secrets.token_hex(8)
        # the first boot decides the accelerator; its probe runs beside dracut
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="kvm-probe") as probing:
            accel_future = probing.submit(self.probe_once, cell, artifacts.bzimage,
                                          artifacts.directory)
            image = self.timed(cell, "initramfs", self.initramfs, artifacts, token,
                               cdir / "build.log")
            accel = accel_future.result()
        cell.accelerator = accel.name
        profile = built.profile
        append = " ".join(filter(None, (profile.append, f"taintport.token={token}",
                                        *profile.agent, self.append)))
        timeout = profile.timeout
        booted = self.timed(cell, "boot", boot.boot, artifacts.bzimage, image,
                            cdir / "console.log", append, accel.name, timeout,
                            profile.memory)
        cell.qemu_exit_code = booted.exit_code
        text = booted.console.read_text(errors="replace") if booted.console.exists() else ""
        parsed = ktap.parse(text)
        write_atomic(cdir / "ktap.txt", "\n".join(parsed.lines) + "\n")
        if booted.timed_out:
            parsed.errors.insert(0, f"guest killed at the {timeout}s timeout")
        uname = UNAME_V.search(text)
        cell.kernel_version = uname.group(1).strip() if uname else None
        # cell.fixes: the states new_cell read from the expectations
        judgement = verdict.judge(parsed, self.expectations.expected(cell.fixes),
                                  self.expectations.known_bug(cell.variant, cell.fixes),
                                  cell.variant.skips,
                                  self.expectations.notes(cell.fixes, cell.version))
        if built.identical is not None:
            judgement = verdict.with_check(judgement, built.identical)
        cell.status = judgement.status
        cell.errors += judgement.errors
        cell.checks = list(judgement.checks)
        cell.panic = list(parsed.panic)

    # -- a variant judged against another of the same run ----------------------
    def agree(self, cell: Cell, peer: Cell | None) -> None:
        """(Re)make the check that cell observed every test as peer did
        (variants.toml agrees_with), whenever either is published: a
        stored cell is compared with this run's, never with the one it was
        stored beside. Without a sound peer there is nothing to compare."""
        check = cell.variant.check(Kind.AGREES)
        if check is None or cell.status is verdict.Status.ERROR:
            return
        checks = [c for c in cell.checks if c.name != check.name]
        status = cell.status
        if status is verdict.Status.UNEXPECTED and all(c.matches for c in checks):
            status = verdict.Status.KNOWN_BUG if \
                self.expectations.known_bug(cell.variant, cell.fixes) else \
                verdict.Status.AS_EXPECTED  # the old check alone made it unexpected
        judgement = verdict.Judgement(status, checks, cell.errors)
        if peer is not None and peer.status is not verdict.Status.ERROR:
            judgement = verdict.with_check(judgement, verdict.agreement(check, checks, peer))
        cell.status, cell.checks = judgement.status, judgement.checks

    # -- a variant byte-identical to another --------------------------------
    def reuse_identical(self, version: Version, tree: Path, quilt_series: series.Series,
                        cell: Cell, earlier: Callable[[], dict[str, Cell | None]]) -> bool:
        """Take the build and boot of a variant this one is byte-identical to
        (variants.toml reuses, the first that is) instead of making them
        again; True when it did. The compared files are every C file the series
        touches; make check still builds both once and compares the images.

        The comparison reads only the tree's upstream copies and the patches,
        so earlier (this run's published cell of each variant named there,
        once their boots end) is asked for only when one is identical: a
        variant that differs starts its build beside the other boots (5.10's
        backported had waited for upstream's and reverted's selftests, 15 s
        at the end of the matrix)."""
        expect = self.expectations
        judged_as = expect.expected(expect.states(cell.variant, version.ships, version.name))
        start = time.monotonic()
        mine = None
        identical = []
        for name in cell.variant.reuses:
            other = variants.named(name)
            if expect.expected(expect.states(other, version.ships, version.name)) != judged_as:
                continue  # the same kernel, judged by other rules: boot it
            if mine is None:
                mine = series.source_digest(series.sources(tree, quilt_series, cell.variant))
            if series.source_digest(series.sources(tree, quilt_series, other)) == mine:
                identical.append(other)
        cell.timings.record("apply", time.monotonic() - start)
        if not identical:
            return False
        published = earlier()
        for other in identical:
            cell_before = published.get(other.name)
            if cell_before is None or cell_before.status is verdict.Status.ERROR:
                continue
            recorded = cell_before.inputs.sources_sha256 if cell_before.inputs else None
            if recorded not in (None, mine):
                continue  # a stored cell of other sources than this tree's
            assert mine is not None  # identical holds a variant only once mine is made
            self.take_cell(version, tree, quilt_series, cell, cell_before, mine)
            return True
        return False

    def take_cell(self, version: Version, tree: Path, quilt_series: series.Series,
                  cell: Cell, earlier: Cell, sources_sha256: str) -> None:
        other = earlier.variant
        same = verdict.Check(
            name=HostCheck(cell.variant.name, Kind.SOURCES_IDENTICAL, other.name).name,
            expected=True, observed=True,
            diagnostics=(f"host: every C file the series touches is "
                         f"byte-identical to {other}'s",))
        # the host checks judged in the earlier cell (and in the one it took) are its own
        owners = [v for v in (other, earlier.reused_from) if v]
        judgement = verdict.Judgement(
            earlier.status,
            [c for c in earlier.checks if not any(v.owns(c.name) for v in owners)],
            list(earlier.errors))
        # the cell's own host check (sources_match) still runs: reusing
        # upstream's boot says nothing about the exported layer
        identical = self.identical_check(tree, quilt_series, cell)
        if identical is not None:
            judgement = verdict.with_check(judgement, identical)
        judgement = verdict.with_check(judgement, same)
        cell.status, cell.checks, cell.errors = \
            judgement.status, judgement.checks, judgement.errors
        cell.accelerator, cell.kernel_release = earlier.accelerator, earlier.kernel_release
        cell.qemu_exit_code, cell.reused_from, cell.logs = \
            earlier.qemu_exit_code, other, earlier.logs
        if cell.inputs:
            cell.inputs.sources_sha256 = sources_sha256
            cell.inputs.bzimage_sha256 = earlier.inputs.bzimage_sha256 if earlier.inputs \
                else None
        states = self.expectations.states(cell.variant, version.ships, version.name)
        if cell.status is verdict.Status.AS_EXPECTED and \
                self.expectations.known_bug(cell.variant, states):
            cell.status = verdict.Status.KNOWN_BUG
