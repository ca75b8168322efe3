# SPDX-License-Identifier: GPL-2.0
"""`make bench`: one measured run of the matrix on this machine, written to docs/benchmarks.md.

Phases, all in a fresh cache of their own (the pinned .debs are linked in,
so the network is not measured) and with ccache disabled, so that "cold"
means cold:
  1. the matrix, every version x variant, versions side by side (--parallel,
     one cold build at a time);
  2. one standalone cold build per kernel (what a cell's build stage does:
     kernel, test modules, agent), one after another: the yardstick (sum of
     cold builds) and the unit of the naive way;
  3. a rerun with nothing changed;
  4. a rerun after touching one semantic patch (its mtime only), and one
     after editing it (a comment line, restored afterwards): cells are keyed
     on the generated patches, not on the .cocci files, so neither reruns
     a cell;
  5. what a new upload of a series costs (UPLOAD_COST): bookworm-6.1 built
     cold from the upload before its pin, as a user's cache has it (the
     build folder kept, no ccache unless TAINTPORT_CCACHE=1), then moved to its pin: the new tree
     extracted and compared with the old, and the build again, against the
     series' cold build of phase 2 (target: at most a quarter). `taintport
     bench --upload-cost` runs this phase alone, in a cache of its own, and
     writes nothing to docs/.
Each timed step starts after a sync, so none pays for an earlier step's writes.
The machine's CPU time during phases 1 and 2 (/proc/stat) says how much work
the matrix adds to its cold builds, and so the lowest ratio any schedule of
that work could reach on these cores (work_table).
The naive way (one cold build per variant of each kernel, then the same
extraction, initramfs and boot work for each, one after another) is computed
from phase 2 and the per-cell times of phase 1.
"""
import os
import platform
import shutil
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TypeVar

from debian.debian_support import Version as DebianVersion

from taintport import REPO
from taintport.cache import Cache, write_atomic
from taintport.errors import InputError, RunError
from taintport.kernel import build
from taintport.layer import engine, fixes
from taintport.results import folder, render
from taintport.results.cells import Cell
from taintport.run import stages
from taintport.run.matrix import Runner
from taintport.tree import fetch, series, variants, versions
from taintport.tree.archive.download import fetch_deb
from taintport.tree.archive.indexes import Indexes
from taintport.tree.variants import Base
from taintport.tree.versions import Version

TOUCHED = REPO / "semantic-patches" / "tracing_allow_taint.cocci"


# ext4 without a journal (these machines' root file system) skips inodes
# freed in the last 60 s, or 360 s while their inode table block is dirty
# (RECENTCY_MIN and RECENTCY_DIRTY in fs/ext4/ialloc.c), and pays a lookup
# for each one it skips. Measured here after the bench deleted its scratch
# trees and builds: extracting 7.3 took 23.6 s (22.4 s system) 4.5 minutes
# later and 10.6 s (7.4 s system) 6 minutes later. Waiting 61 s was not
# enough: the matrix's first two extractions then took 36-38 s. So the bench
# deletes its cache when it ends, after the timing, and a cache left by an
# interrupted run is deleted and waited out before anything is timed.
SETTLE_SECONDS = 361


Say = Callable[[str], None]
T = TypeVar("T")


def settle(say: Say) -> None:
    quiesce()
    say(f"bench: waiting {SETTLE_SECONDS} s after deleting the cache an interrupted run "
        "left, so the file system stops skipping the inodes it just freed")
    time.sleep(SETTLE_SECONDS)


def quiesce() -> None:
    """Write out what earlier steps left in the page cache, outside any timing.

    An extraction leaves 1.1-1.8 GB of dirty pages, and a build more; written
    back during the next timed step, they would be charged to it (a solo build
    right after its tree's extraction would make the yardstick look slower and
    the matrix's ratio look better than it is).
    """
    os.sync()


def fresh_cache(main: Cache, say: Say, name: str = "bench") -> Cache:
    bench = Cache(main.root / name)
    if bench.root.exists():
        shutil.rmtree(bench.root)
        settle(say)
    bench.debs().mkdir(parents=True)
    if main.debs().exists():
        for deb in main.debs().glob("*.deb"):
            try:
                os.link(deb, bench.debs() / deb.name)
            except OSError:
                shutil.copy2(deb, bench.debs() / deb.name)
    return bench


def timed(func: Callable[..., T], *args: object) -> tuple[T, float]:
    quiesce()
    start = time.monotonic()
    result = func(*args)
    return result, time.monotonic() - start


@dataclass(frozen=True)
class CpuTime:
    """What the machine's cores did, in core-seconds (all processes: the
    bench runs alone on the machine, so that is the step's own work)."""
    busy: float   # user, nice, system, irq, softirq (a guest's time is in user)
    idle: float   # idle and iowait; steal, taken by the host, is neither

    def __add__(self, other: "CpuTime") -> "CpuTime":
        return CpuTime(self.busy + other.busy, self.idle + other.idle)

    def __sub__(self, other: "CpuTime") -> "CpuTime":
        return CpuTime(self.busy - other.busy, self.idle - other.idle)


def cpu_time(stat: str, hz: int) -> CpuTime:
    """The machine's CPU time from the text of /proc/stat (its "cpu" line,
    in USER_HZ ticks: proc(5))."""
    first = stat.splitlines()[0].split() if stat.strip() else []
    if not first or first[0] != "cpu":
        raise RunError("bench", "/proc/stat does not start with the cpu line")
    ticks = [int(field) for field in first[1:9]] + [0] * 8
    user, nice, system, idle, iowait, irq, softirq = ticks[:7]
    return CpuTime((user + nice + system + irq + softirq) / hz, (idle + iowait) / hz)


def machine_cpu() -> CpuTime:
    return cpu_time(Path("/proc/stat").read_text(), os.sysconf("SC_CLK_TCK"))


def metered(func: Callable[..., T], *args: object) -> tuple[T, float, CpuTime]:
    """timed, and the CPU time the machine spent meanwhile."""
    before = machine_cpu()
    result, seconds = timed(func, *args)
    return result, seconds, machine_cpu() - before


@dataclass(frozen=True)
class Work:
    """Phase 1's and phase 2's CPU: what no schedule can take away."""
    matrix: CpuTime  # the whole machine while the matrix ran
    solo: CpuTime    # the same during the standalone cold builds, summed
    cores: int

    @property
    def beside(self) -> float:
        """core-seconds the matrix spent on anything but its cold builds:
        rebuilds, boots, selftests, dracut, extractions"""
        return self.matrix.busy - self.solo.busy

    def least_wall(self) -> float:
        """The matrix's wall time were every core busy all along."""
        return self.matrix.busy / self.cores


def layer_seconds(cache: Cache, version: Version) -> tuple[float, float]:
    """spatch on the reverted tree, plus quilt pushing the layer's patches."""
    tree = cache.tree(version)
    quilt_series = series.load(version.name)
    log = cache.root / "logs" / f"bench-layer-{version.name}.log"
    layered = variants.table().layer_on(Base.REVERTED)
    series.switch(tree, quilt_series, variants.table().generated_on(layered), log)
    # a first run's cost: phase 1 asked spatch the same questions, and its
    # answers are kept (layer/spatch_cache.py)
    shutil.rmtree(cache.spatch_answers(), ignore_errors=True)
    _, spatch = timed(engine.generate, tree, fixes.FIXES, None, cache)
    _, quilt = timed(series.switch, tree, quilt_series, layered, log)
    return spatch, quilt


def extract_seconds(cache: Cache, version: Version) -> float:
    """One extraction alone (the matrix fetches ahead, so its own figure hides it).

    The copy stays until the bench ends: deleting it would slow what comes next.
    """
    deb = cache.debs() / version.deb_name
    tmp = Path(tempfile.mkdtemp(dir=cache.root, prefix="bench-extract-"))
    _, seconds = timed(fetch.extract, deb, version, tmp / version.source_dir,
                       cache.root / "logs" / "bench-extract.log")
    return seconds


def solo_cold_build(cache: Cache, version: Version) -> tuple[float, CpuTime]:
    """What a cell's build stage does (the kernel, the test modules, the agent,
    the kernel's own selftests' modules and the trace-event sample), from an
    empty folder, alone on the machine."""
    tree = cache.tree(version)
    as_shipped = variants.table().as_shipped()
    series.switch(tree, series.load(version.name), as_shipped,
                  cache.root / "logs" / "bench-solo.log")
    solo = cache.root / "solo" / version.name
    _, seconds, cpu = metered(stages.build_with_selftests, tree, solo / "build", version.name,
                              solo / "artifacts" / as_shipped.name,
                              cache.root / "logs" / f"bench-solo-{version.name}.log",
                              build.default_jobs(), cache.root)
    return seconds, cpu  # solo stays until the bench ends, like the extractions


# the series whose next upload phase 5 measures: its pin, and the upload of
# the series before it in the pin's suites (6.1.192-2 -> 6.1.192-3 when written)
UPLOAD_COST = "bookworm-6.1"


@dataclass(frozen=True)
class UploadCost:
    """A series moved from one upload to the next with its build folder."""
    before: str          # "bookworm-security 6.1.192-2"
    after: str
    cold: float          # the build stage from an empty build folder, before
    extract: float       # the next upload extracted and compared with the old tree
    build: float         # the build stage again, on the new tree
    compiled: int        # objects compiled again (make's CC lines)
    yardstick: float | None = None  # the series' cold build without ccache (phase 2)

    @property
    def moved(self) -> float:
        return self.extract + self.build


def previous_upload(cache: Cache, version: Version, log: Path) -> Version:
    """The version pinned to the upload of its series before its pin."""
    older = [p for p in Indexes(cache, log).published(version.sources(), version.package)
             if DebianVersion(p.version) < DebianVersion(version.version)]
    if not older:
        raise InputError(f"{', '.join(version.suites)} offer no {version.package} older than "
                         f"{version.version}: no upload to move from")
    return older[-1].pinning(version)


def compiled(log: Path) -> int:
    """How many objects a build compiled: Kbuild's "  CC " lines."""
    return sum(1 for line in log.read_text(errors="replace").splitlines()
               if line.startswith("  CC "))


def upload_cost(parent: Cache, version: Version, logs_to: Path, say: Say = print,
                name: str = "upload") -> UploadCost:
    """Phase 5, in a fresh cache of its own below parent (so nothing an earlier
    phase built is reused): the series built cold from the upload before the
    pin, then moved to the pin, as a user's cache has it; the .debs fetched
    first (the network is not measured). Its logs go to logs_to."""
    cache = fresh_cache(parent, say, name)
    logs = cache.root / "logs"
    try:
        before = previous_upload(cache, version, logs / "bench-upload-fetch.log")
        for each in (before, version):
            fetch_deb(cache, each, logs / "bench-upload-fetch.log")
        say(f"bench phase 5: {version.name} cold at {before.upload}")
        as_shipped = variants.table().as_shipped()
        with cache.locked(version.name):
            quilt = series.load(version.name)
            tree = fetch.fetch(cache, before, logs / "bench-upload-fetch.log").tree
            series.switch(tree, quilt, as_shipped, logs / "bench-upload.log")
            _, cold = timed(build.build_variant, tree, cache.build(before), version.name,
                            cache.artifacts(before, as_shipped.name), logs / "bench-upload-cold.log",
                            build.default_jobs(), cache.root)
            say(f"bench phase 5: moved to {version.upload}")
            fetched, extract = timed(fetch.fetch, cache, version,
                                     logs / "bench-upload-fetch.log")
            series.switch(fetched.tree, quilt, as_shipped, logs / "bench-upload.log")
            move_log = logs / "bench-upload-move.log"
            _, again = timed(build.build_variant, fetched.tree, cache.build(version),
                             version.name, cache.artifacts(version, as_shipped.name), move_log,
                             build.default_jobs(), cache.root)
        return UploadCost(before.upload, version.upload, cold, extract, again,
                          compiled(move_log))
    finally:
        if logs.exists():
            shutil.copytree(logs, logs_to, dirs_exist_ok=True)
        fetch.wait_retired()  # the upload before's tree, retired by the move
        shutil.rmtree(cache.root)


def upload_cost_alone(main_cache: Cache, say: Say = print) -> UploadCost:
    """`taintport bench --upload-cost`: phase 5 alone (main_cache/upload, the
    .debs linked in from main_cache); its logs in results/bench-upload-<time>/."""
    return upload_cost(main_cache, versions.select([UPLOAD_COST])[0],
                       REPO / "results" / time.strftime("bench-upload-%Y%m%dT%H%M%S"), say,
                       "bench-upload")


def upload_table(cost: UploadCost) -> str:
    cold = cost.yardstick or cost.cold
    return f"""## A new upload of a series

{UPLOAD_COST} moved from {cost.before} to {cost.after}: the tree is kept per
series (the new upload extracted beside it, every unchanged file keeping its
time) and so is the build folder, as in a user's cache (ccache is for the CI
pipelines, which keep nothing else: TAINTPORT_CCACHE=1).

| step | seconds |
|---|---|
| cold build of {cost.before} (build stage: kernel, test modules, agent) | {cost.cold:.0f} |
| {cost.after}: extract and compare with the old tree | {cost.extract:.1f} |
| {cost.after}: the build stage again ({cost.compiled} objects compiled) | {cost.build:.1f} |
| moving the pin, in all | **{cost.moved:.1f}** |
| against the series' cold build{' alone (phase 2, ccache off)' if cost.yardstick else ''} | **{cost.moved / cold:.2f}** (target <= 0.25) |
"""


def run(main_cache: Cache, chosen: list[Version], out: Path, parallel: int = 2) -> str:
    os.environ["CCACHE_DISABLE"] = "1"
    say = print
    cache = fresh_cache(main_cache, say)
    say("bench phase 1: the matrix, cold")
    runner = Runner(cache, out / "cold", parallel=parallel)
    built = list(variants.table().from_tree())
    code, wall, matrix_cpu = metered(runner.run, chosen, built)
    cells = runner.ordered_cells()
    render.publish(out / "cold", folder.load_matrix(out / "cold"))
    if code != 0:
        raise RunError("bench", f"the cold matrix did not come out as expected (exit {code}); "
                       f"see {out / 'cold'}")
    say("bench phase 2: one standalone cold build per kernel")
    solo = {}
    solo_cpu = CpuTime(0.0, 0.0)
    layers = {}
    extracts = {}
    for version in chosen:
        with cache.locked(version.name):
            fetch.fetch(cache, version, cache.root / "logs" / "bench-fetch.log")
            extracts[version.name] = extract_seconds(cache, version)
            solo[version.name], cpu = solo_cold_build(cache, version)
            solo_cpu += cpu
            layers[version.name] = layer_seconds(cache, version)
    say("bench phase 3: rerun, nothing changed")
    _, warm = timed(Runner(cache, out / "warm", parallel=parallel).run, chosen, built)
    say("bench phase 4: rerun after touching one semantic patch")
    os.utime(TOUCHED)
    _, touched = timed(Runner(cache, out / "touched", parallel=parallel).run, chosen,
                       built)
    say("bench phase 4b: rerun after editing one semantic patch")
    original = TOUCHED.read_bytes()
    try:
        TOUCHED.write_bytes(original + b"// bench: an edit that changes no rule\n")
        edited_runner = Runner(cache, out / "edited", parallel=parallel)
        code, edited = timed(edited_runner.run, chosen, built)
    finally:
        TOUCHED.write_bytes(original)
    rerun = sum(1 for c in edited_runner.ordered_cells() if not c.reused)
    if code != 0:
        raise RunError("bench", f"the rerun after the edit exited {code}; see {out / 'edited'}")
    upload = None
    moved = [v for v in chosen if v.name == UPLOAD_COST]
    if moved:
        upload = replace(upload_cost(cache, moved[0], out / "logs" / "upload", say),
                         yardstick=solo[UPLOAD_COST])
    # The cells' reports and logs are in out already; the bench's own logs
    # (solo builds, extractions, layers) join them. The rest of the cache is
    # scratch, and deleting it at the start of the next run would slow that
    # run's first extractions.
    shutil.copytree(cache.root / "logs", out / "logs", dirs_exist_ok=True)
    fetch.wait_retired()
    shutil.rmtree(cache.root)
    return table(chosen, cells, wall, solo, layers, extracts, warm, touched,
                 (edited, rerun), parallel, upload,
                 Work(matrix_cpu, solo_cpu, os.cpu_count() or 1))


def table(chosen: Sequence[Version], cells: Sequence[Cell], wall: float,
          solo: dict[str, float], layers: dict[str, tuple[float, float]],
          extracts: dict[str, float], warm: float, touched: float, edited: tuple[float, int],
          parallel: int, upload: "UploadCost | None" = None,
          work: "Work | None" = None) -> str:
    built = [v.name for v in variants.table().from_tree()]
    # the columns: our build of the tree as shipped, the negative control and
    # the layer on it (the layer on the tree as shipped reuses that one)
    layered = variants.table().layer_on(Base.REVERTED)
    first, negative = variants.table().as_shipped(), variants.table().generated_on(layered)
    by = {c.where: c.timings.by_stage() for c in cells}
    taken = {c.where: c.reused_from for c in cells if c.reused_from}

    def rebuild(version: str, variant: str) -> str:
        """A rebuild's seconds, or whose build the cell took (backported on a
        tree that ships every fix is upstream's kernel)."""
        other = taken.get((version, variant))
        return f"{other}'s" if other else f"{by[(version, variant)]['build']:.1f}"
    boots_seen = [c.timings.boot for c in cells if c.timings.boot is not None]
    # dracut ran for the run's first cell, one image for every kernel; the
    # naive way runs it for every variant
    one_dracut = max((c.timings.initramfs for c in cells if c.timings.initramfs is not None),
                     default=0.0)
    rows = []
    naive = 0.0
    for v in chosen:
        t = {var: by[(v.name, var)] for var in built}
        # a cell that reused another's build and boot (patched, and backported
        # where the tree ships every fix) has none of its own; the naive way
        # would have built and booted it like that one
        boots = [t[var]["boot"] for var in built if "boot" in t[var]]
        dracut = [t[var]["initramfs"] for var in built if "initramfs" in t[var]]
        # the kernel's own selftests: a second boot of each booted cell
        selftest = [t[var]["selftests"] for var in built if "selftests" in t[var]]
        most = max(selftest, default=0.0)
        spatch, quilt = layers[v.name]
        rows.append(f"| {v.name} | {solo[v.name]:.0f} | {t[first.name]['build']:.0f} | "
                    f"{rebuild(v.name, negative.name)} | {rebuild(v.name, layered.name)} | "
                    f"{max(dracut):.1f} | {max(boots):.1f} | {most:.1f} | {spatch + quilt:.1f} "
                    f"({spatch:.1f} + {quilt:.1f}) | {extracts[v.name]:.1f} | "
                    f"{t[first.name]['fetch']:.1f} |")
        naive += len(built) * (solo[v.name] + max(boots) + one_dracut + most) \
            + extracts[v.name]
    cold_sum = sum(solo.values())
    ratio = wall / cold_sum
    worst_boot = max(boots_seen)
    reused = sum(1 for c in cells if c.reused_from)
    worst_layer = max(s + q for s, q in layers.values())
    text = f"""# Benchmarks

Written by `make bench` ({time.strftime('%Y-%m-%d')}) from one run on this machine:
{os.cpu_count()} cores, {platform.machine()}, QEMU accelerator
`{cells[0].accelerator}`, ccache disabled so cold builds are cold, the
pinned .debs already downloaded (the network is not measured), each timed
step started after a sync (none pays for an earlier step's writes). The matrix ran
{len(cells)} cells with `--parallel {parallel}` (kernels side by side, one cold build at a
time); {reused} of them
took another variant's build and boot (their C sources byte-identical and
the same checks expected; a rebuild column naming a variant is one of them).

## Per kernel (seconds)

| kernel | cold build, alone | cold build, in the matrix | {negative} rebuild | {layered} rebuild | initramfs (max) | boot + test (max) | selftests (max) | layer: spatch + quilt | extract, alone | fetch, in the matrix |
|---|---|---|---|---|---|---|---|---|---|---|
{chr(10).join(rows)}

A cold build is what a cell's build stage does: the kernel, the test modules,
the agent, and the kernel's own livepatch selftests' modules and trace-event
sample. "cold build, in the matrix" shares the cores with the other
kernel's rebuilds, dracut and boots; "alone" is the yardstick below. "initramfs" is
dracut for the run's first cell, one image for every kernel (it holds none of a
kernel's files); every other cell appends its own files to that image. A cell
boots while the next variant of its kernel builds, and the builds go on
(niced) while a guest boots. "selftests" is the cell's
second boot, the kernel's own livepatch selftests and the trace-event sample:
its minutes under TCG run beside the other kernel's build. "fetch, in the
matrix" is what the kernel's worker waited for: the first two extract
(one after the other), the rest were fetched ahead during earlier builds.

## The run

| measure | value | target |
|---|---|---|
| matrix wall time, cold | {wall:.0f} s | |
| sum of one cold build per kernel (alone) | {cold_sum:.0f} s | |
| ratio matrix wall / sum of cold builds | **{ratio:.2f}** | <= 1.10 |
| rerun with nothing changed | **{warm:.1f} s** | <= 90 s |
| rerun after touching `{TOUCHED.relative_to(REPO)}` (mtime) | {touched:.1f} s | |
| rerun after editing it (one comment line; {edited[1]} cells ran again) | {edited[0]:.0f} s | |
| worst boot + test of a cell ({cells[0].accelerator}) | **{worst_boot:.1f} s** | <= 6 s |
| worst layer time of a tree | **{worst_layer:.1f} s** | <= 5 s |
| naive way: one cold build, dracut, boot and selftests per variant of each kernel + the extraction, one after another (computed) | {naive:.0f} s | |
| speed-up over the naive way | **{naive / wall:.1f}x** | >= 2.5x |

A rerun reuses each cell whose inputs (package checksum, what the version
ships, the variant's series with its generated patches, fragments, test
matrix, tool versions) hash to a stored result; touching or editing a semantic
patch without changing the patches it generates changes none of them (make
check's `regen --check` catches an edit whose patches were not regenerated).
The fragments include `kconfigs/livepatch.config` (CONFIG_LIVEPATCH with
FUNCTION_TRACER, DYNAMIC_FTRACE, KALLSYMS_ALL, UNWINDER_ORC) on every kernel.
"""
    if work is not None:
        text += "\n" + work_table(work, wall, cold_sum)
    if upload is not None:
        text += "\n" + upload_table(upload)
    return text


def work_table(work: Work, wall: float, cold_sum: float) -> str:
    least = work.least_wall()
    return f"""## The work beside the cold builds

The machine's CPU time (/proc/stat, all processes: the bench runs alone)
while the matrix ran and while the standalone cold builds ran. No schedule
takes the matrix below its CPU time shared by the cores, so the ratio above
can be no lower than the bound here; what lies between the two is time a
core stood idle.

| measure | core-seconds |
|---|---|
| the matrix (busy / idle) | {work.matrix.busy:.0f} / {work.matrix.idle:.0f} |
| the standalone cold builds (busy / idle) | {work.solo.busy:.0f} / {work.solo.idle:.0f} |
| the work beside the cold builds (rebuilds, boots, selftests, dracut, extractions) | **{work.beside:.0f}** |
| the matrix's least wall on {work.cores} cores, against the sum of cold builds | {least:.0f} s: **{least / cold_sum:.2f}** (ran {wall / cold_sum:.2f}) |
"""


BENCHMARKS = REPO / "docs" / "benchmarks.md"
# Measurements that are not a `make bench` run (a cost measured by hand, a
# reason for a choice) go below this line; a new run keeps them.
KEPT = "<!-- Below this line: written by hand, kept by make bench. -->"


def write(text: str, path: Path = BENCHMARKS) -> None:
    """The run's tables, then whatever the file held below KEPT."""
    try:
        old = path.read_text()
    except FileNotFoundError:
        old = ""
    kept = old[old.index(KEPT):] if KEPT in old else KEPT + "\n"
    write_atomic(path, text.rstrip("\n") + "\n\n" + kept)
