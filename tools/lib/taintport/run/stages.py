"""The stage chain of one cell: switch and build, the host's byte-identical check,
initramfs, boot, verdict.

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

from taintport.cache import Cache
from taintport.digest import sha256_of
from taintport.errors import InputError
from taintport.judge import ktap, verdict
from taintport.kernel import binary, boot, build, initramfs
from taintport.kernel.boot import Accel
from taintport.kernel.build import Artifacts
from taintport.results.cells import Cell, Inputs, fault_in
from taintport.run.progress import Progress
from taintport.tree import series
from taintport.tree.versions import Binary, Version

T = TypeVar("T")
# what our builds boot with (kconfigs/ gives them a serial console and little else)
APPEND = "console=ttyS0 panic=-1"
# the guest's own `uname -v`, as the agent prints it
UNAME_V = re.compile(r"# taintport-agent: uname -v: (.+)")


@dataclass(frozen=True)
class Built:
    artifacts: Artifacts
    identical: verdict.Check | None  # the host-side check of a layer's tree
    shipped: Binary | None = None    # the distribution's binary: its boot options


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
        self.append = append  # more kernel command line: taintport.fault=...
        self.accel = accel    # None: the first boot's probe decides
        self.accel_lock = threading.Lock()
        self.initramfs_bases: set[Path] = set()  # dracut images made by this chain
        # One cold build at a time: make -j already spreads one build over
        # every core, and two at once (5.10 and 6.1, -j3 each, 2 cores) took
        # 278 s where one after the other took 264 s. What runs beside a cold
        # build is the other kernel's rebuilds, dracut and boots, the serial
        # work that --parallel is there to overlap.
        self.cold_build = threading.Lock()

    def new_cell(self, version: Version, variant: str, inputs: Inputs | None = None,
                 key: str | None = None) -> Cell:
        states = self.expectations.states(variant, version.ships)
        cell = Cell.new(version.name, variant, states)
        cell.inputs, cell.key = inputs, key
        cell.fault = fault_in(self.append)
        return cell

    def cell_dir(self, cell: Cell) -> Path:
        return self.out / cell.version / cell.variant

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
        match (expectations.toml sources_match): a host check, judged with the
        guest's, so a layer that misses something is still booted and shown failing."""
        other = self.expectations.variant(cell.variant).sources_match
        if not other:
            return None
        mine = series.sources(tree, quilt_series, cell.variant)
        theirs = series.sources(tree, quilt_series, other)
        differ = sorted(p for p in set(mine) | set(theirs) if mine.get(p) != theirs.get(p))
        if cell.inputs:
            cell.inputs.sources_sha256 = series.source_digest(mine)
        return verdict.Check(
            name=f"{cell.variant}_sources_identical_to_{other}", expected=True,
            observed=not differ,
            diagnostics=tuple(f"host: {p} differs from {other} (upstream + the "
                              "exported layer)" for p in differ))

    def build(self, version: Version, tree: Path, quilt_series: series.Series,
              cell: Cell) -> Built:
        """Switch the tree to the cell's variant, check it, build."""
        cdir = self.cell_dir(cell)
        cdir.mkdir(parents=True, exist_ok=True)
        build_log = cdir / "build.log"
        build_log.unlink(missing_ok=True)
        self.timed(cell, "apply", series.switch, tree, quilt_series, cell.variant, build_log)
        identical = self.identical_check(tree, quilt_series, cell)
        return self.built(cell, self.compile(version, tree, cell, build_log), identical)

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
        with turn:
            return self.timed(cell, "build", build.build_variant, tree, build_dir,
                              version.name, self.cache.artifacts(version, cell.variant),
                              log, self.jobs, self.cache.root)

    def built_before(self, version: Version, tree: Path, quilt_series: series.Series,
                     cell: Cell) -> Built:
        """The artifacts `taintport build` left for the cell's variant, checked
        as a fresh build is."""
        folder = self.cache.artifacts(version, cell.variant)
        if not (folder / "bzImage").exists():
            raise InputError(f"{folder / 'bzImage'} missing; run 'taintport build --version "
                             f"{version.name} --variant {cell.variant}' first")
        build_dir = self.cache.build(version)
        release = build.kernel_release(tree, build_dir,
                                       *build.make_args(build_dir, 1, self.cache.root))
        artifacts = Artifacts(directory=folder, bzimage=folder / "bzImage",
                              modules=build.module_files(folder),
                              agent=folder / "taintport-agent", release=release)
        return self.built(cell, artifacts, self.identical_check(tree, quilt_series, cell))

    def built(self, cell: Cell, artifacts: Artifacts,
              identical: verdict.Check | None) -> Built:
        cell.kernel_release = artifacts.release
        if cell.inputs:
            cell.inputs.bzimage_sha256 = sha256_of(artifacts.bzimage)
        return Built(artifacts, identical)

    def binary(self, version: Version, cell: Cell) -> Built:
        """The distribution's binary of the tree: nothing to switch or build
        but the test modules, against its headers."""
        cdir = self.cell_dir(cell)
        cdir.mkdir(parents=True, exist_ok=True)
        log = cdir / "build.log"
        log.unlink(missing_ok=True)
        top = self.timed(cell, "fetch", binary.unpack, self.cache, version, log)
        artifacts = self.timed(cell, "build", binary.prepare, version, top,
                               self.cache.artifacts(version, cell.variant), log, self.jobs)
        built = self.built(cell, artifacts, None)
        return Built(built.artifacts, None, version.shipped)

    # -- the artifacts half -----------------------------------------------
    def probe_once(self, cell: Cell, bzimage: Path, workdir: Path) -> Accel:
        with self.accel_lock:
            if self.accel is None:
                self.accel = self.timed(cell, "kvm_probe", boot.probe, bzimage, workdir)
                self.progress.note(f"accelerator: {self.accel.name} ({self.accel.reason})")
        return self.accel

    def initramfs(self, artifacts: Artifacts, token: str, log: Path) -> Path:
        """dracut once per kernel and chain, then the cell's files appended."""
        # Named by the agent it holds, in the kernel's folder (one release):
        # a variant whose agent differs gets an image of its own instead of
        # overwriting the one the other variants reuse.
        base = artifacts.directory.parent / \
            f"initramfs-base-{sha256_of(artifacts.agent)[:16]}.img"
        if base not in self.initramfs_bases:
            initramfs.base(artifacts.agent, artifacts.release, self.cache.root, base, log)
            # one boot thread per version: no other thread makes this image
            self.initramfs_bases.add(base)
        return initramfs.build(artifacts, token, base, artifacts.directory / "initramfs.img")

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
        shipped = built.shipped
        append = " ".join(filter(None, (
            shipped.append if shipped else APPEND, f"taintport.token={token}",
            f"taintport.signed={shipped.module_name}" if shipped else "", self.append)))
        timeout = shipped.timeout if shipped else self.timeout
        booted = self.timed(cell, "boot", boot.boot, artifacts.bzimage, image,
                            cdir / "console.log", append, accel.name, timeout,
                            shipped.memory if shipped else boot.MEMORY)
        cell.qemu_exit_code = booted.exit_code
        text = booted.console.read_text(errors="replace") if booted.console.exists() else ""
        parsed = ktap.parse(text)
        (cdir / "ktap.txt").write_text("\n".join(parsed.lines) + "\n")
        if booted.timed_out:
            parsed.errors.insert(0, f"guest killed at the {timeout}s timeout")
        uname = UNAME_V.search(text)
        cell.kernel_version = uname.group(1).strip() if uname else None
        # cell.fixes: the states new_cell read from the expectations
        judgement = verdict.judge(parsed, self.expectations.expected(cell.fixes),
                                  self.expectations.known_bug(cell.variant, cell.fixes),
                                  self.expectations.skips(cell.variant))
        if built.identical is not None:
            judgement = verdict.with_check(judgement, built.identical)
        cell.status = judgement.status
        cell.errors += judgement.errors
        cell.checks = list(judgement.checks)
        cell.panic = list(parsed.panic)

    # -- a variant judged against another of the same run ----------------------
    def agree(self, cell: Cell, peer: Cell | None) -> None:
        """(Re)make the check that cell observed every test as peer did
        (expectations.toml agrees_with), whenever either is published: a
        stored cell is compared with this run's, never with the one it was
        stored beside. Without a sound peer there is nothing to compare."""
        other = self.expectations.variant(cell.variant).agrees_with
        if not other or cell.status is verdict.Status.ERROR:
            return
        name = f"{cell.variant}_agrees_with_{other}"
        checks = [c for c in cell.checks if c.name != name]
        status = cell.status
        if status is verdict.Status.UNEXPECTED and all(c.matches for c in checks):
            status = verdict.Status.KNOWN_BUG if \
                self.expectations.known_bug(cell.variant, cell.fixes) else \
                verdict.Status.AS_EXPECTED  # the old check alone made it unexpected
        judgement = verdict.Judgement(status, checks, cell.errors)
        if peer is not None and peer.status is not verdict.Status.ERROR:
            judgement = verdict.with_check(judgement,
                                           verdict.agreement(cell.variant, checks, peer))
        cell.status, cell.checks = judgement.status, judgement.checks

    # -- a variant byte-identical to another --------------------------------
    def reuse_identical(self, version: Version, tree: Path, quilt_series: series.Series,
                        cell: Cell, earlier: dict[str, Cell | None]) -> bool:
        """Take the build and boot of a variant this one is byte-identical to
        (expectations.toml reuses, the first that is) instead of making them
        again; True when it did. The compared files are every C file the series
        touches; make check still builds both once and compares the images.
        earlier: this run's published cell of each variant named there."""
        expect = self.expectations
        mine = None
        for other in expect.variant(cell.variant).reuses:
            cell_before = earlier.get(other)
            if cell_before is None or cell_before.status is verdict.Status.ERROR:
                continue
            if expect.expected(expect.states(cell.variant, version.ships)) != \
                    expect.expected(expect.states(other, version.ships)):
                continue  # the same kernel, judged by other rules: boot it
            start = time.monotonic()
            if mine is None:
                mine = series.source_digest(series.sources(tree, quilt_series, cell.variant))
            theirs = (cell_before.inputs.sources_sha256 if cell_before.inputs else None) or \
                series.source_digest(series.sources(tree, quilt_series, other))
            cell.timings.record("apply", time.monotonic() - start)
            if mine == theirs:
                self.take_cell(version, tree, quilt_series, cell, cell_before, mine)
                return True
        return False

    def take_cell(self, version: Version, tree: Path, quilt_series: series.Series,
                  cell: Cell, earlier: Cell, sources_sha256: str) -> None:
        other = earlier.variant
        same = verdict.Check(name=f"{cell.variant}_sources_identical_to_{other}",
                             expected=True, observed=True,
                             diagnostics=(f"host: every C file the series touches is "
                                          f"byte-identical to {other}'s",))
        prefixes = tuple(f"{v}_" for v in (other, earlier.reused_from) if v)
        judgement = verdict.Judgement(
            earlier.status, [c for c in earlier.checks if not c.name.startswith(prefixes)],
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
        states = self.expectations.states(cell.variant, version.ships)
        if cell.status is verdict.Status.AS_EXPECTED and \
                self.expectations.known_bug(cell.variant, states):
            cell.status = verdict.Status.KNOWN_BUG
