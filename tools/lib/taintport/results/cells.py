# SPDX-License-Identifier: GPL-2.0
"""A cell after its verdict, and a run of cells: typed values, JSON only at the edge.

Everything after the verdict (the matrix, `taintport boot`, the reports,
merge, compare, --resume) handles these, never the JSON: schema.py writes
them to a file and reads them back, field by field; docs/report-schema.md
describes the JSON.
"""
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Iterator, Sequence

from taintport.judge.verdict import Check, FixState, Status
from taintport.kernel.boot import Accel
from taintport.tree.variants import Variant

# a check's expected/observed as KTAP says it; None: the agent never reported it
WORDS = {True: "ok", False: "not ok", None: "missing"}
# the stages a cell is timed in, in pipeline order
STAGES = ("fetch", "apply", "build", "kvm_probe", "initramfs", "boot", "selftests")
# tuxrun's exit codes: a known bug of a shipped tree is what the run set out to show
EXIT_MEANING = {0: "every cell as expected", 1: "a kernel behaved unexpectedly",
                2: "the run itself broke"}


def word(value: bool | None) -> str:
    return WORDS[value]


@dataclass
class Timings:
    """Seconds per stage; a stage that never started is None (absent in JSON)."""
    fetch: float | None = None
    apply: float | None = None
    build: float | None = None
    kvm_probe: float | None = None
    initramfs: float | None = None
    boot: float | None = None
    selftests: float | None = None  # their own image and boot, after the agent's

    def record(self, stage: str, seconds: float) -> None:
        if stage not in STAGES:
            raise ValueError(f"no stage {stage!r}; stages: {', '.join(STAGES)}")
        setattr(self, stage, round(seconds, 2))

    def items(self) -> Iterator[tuple[str, float]]:
        for stage in STAGES:
            seconds = getattr(self, stage)
            if seconds is not None:
                yield stage, seconds

    def total(self) -> float:
        return sum(seconds for _, seconds in self.items())

    def by_stage(self) -> dict[str, float]:
        return dict(self.items())


@dataclass
class Inputs:
    """What decided a cell's result; all but sources_sha256 and bzimage_sha256
    are hashed into its key."""
    package: str
    package_version: str
    # where the upload came from: the Debian release whose users run it, and
    # the suite of its pin (bookworm, bookworm-security); empty in older runs
    release: str = ""
    suite: str = ""
    deb_sha256: str = ""
    ships: list[str] = field(default_factory=list)
    series: dict[str, str] = field(default_factory=dict)      # group/name.patch -> sha256
    fragments: dict[str, str] = field(default_factory=dict)   # name -> sha256
    expectations_sha256: str = ""
    test_matrix_sha256: str = ""
    # the distribution's binary (the shipped variant): "package=version" ->
    # sha256 of every pinned .deb (and of the source package its selftests
    # come from), and the digest of the descriptor's whole
    # [shipped] table (boot options, module, make variables); empty elsewhere
    binaries: dict[str, str] = field(default_factory=dict)
    shipped_sha256: str = ""
    sources_sha256: str | None = None   # the C files the series touches, as built
    bzimage_sha256: str | None = None   # after the build
    # what an older run recorded that this one does not (semantic_patches_sha256)
    other: dict[str, object] = field(default_factory=dict)

    @property
    def upload(self) -> str:
        """The upload as reports name it: bookworm-security 6.1.192-3."""
        return f"{self.suite} {self.package_version}".strip()


@dataclass(frozen=True)
class Logs:
    build: str    # relative to the results folder
    console: str

    @classmethod
    def of(cls, version: str, variant: str) -> "Logs":
        return cls(build=f"{version}/{variant}/build.log",
                   console=f"{version}/{variant}/console.log")

    @property
    def ktap(self) -> str:
        return str(PurePosixPath(self.console).parent / "ktap.txt")


@dataclass
class Cell:
    version: str
    variant: Variant
    logs: Logs
    status: Status = Status.ERROR
    fixes: dict[str, FixState] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    checks: list[Check] = field(default_factory=list)
    timings: Timings = field(default_factory=Timings)
    accelerator: str | None = None
    kernel_release: str | None = None
    kernel_version: str | None = None  # the guest's uname -v: whose build booted
    inputs: Inputs | None = None    # None: the run never got as far as reading them
    qemu_exit_code: int | None = None
    panic: list[str] = field(default_factory=list)
    key: str | None = None          # --resume keeps the cell only while its inputs give this
    reused: bool = False            # copied from a stored cell with the same key
    resumed: bool = False           # kept from the folder --resume names
    reused_from: Variant | None = None  # byte-identical variant whose build and boot it took
    fault: str | None = None        # taintport.fault=<name> ran: a harness test, not a kernel's result

    @classmethod
    def new(cls, version: str, variant: Variant, fixes: dict[str, FixState]) -> "Cell":
        """A cell before anything ran: an error until a verdict says otherwise."""
        return cls(version, variant, Logs.of(version, variant.name), fixes=dict(fixes))

    @property
    def where(self) -> tuple[str, str]:
        return self.version, self.variant.name

    @property
    def failing(self) -> list[Check]:
        return [c for c in self.checks if not c.matches]

    @property
    def sound(self) -> bool:
        """as-expected or known-bug: the kernel did what its expectations say."""
        return self.status in (Status.AS_EXPECTED, Status.KNOWN_BUG)

    def missing_fixes(self) -> list[str]:
        return [fix for fix, state in self.fixes.items() if state is FixState.MISSING]


def exit_code(cells: Sequence[Cell]) -> int:
    """The one place a run's exit code comes from: 2 when the run broke (or
    judged nothing), 1 when a kernel came out wrong, else 0."""
    statuses = {c.status for c in cells}
    if not cells or Status.ERROR in statuses:
        return 2
    if Status.UNEXPECTED in statuses:
        return 1
    return 0


@dataclass
class Run:
    """One source run of a merged document (`report merge`)."""
    dir: str
    started: str | None
    tools: dict[str, str]
    accelerator: Accel | None
    exit_code: int
    cells: list[str]   # version/variant


# The faults the agent can be told to inject (taintport-agent.c, inject_fault()),
# only to test the harness: a cell that ran with one says so in matrix.json.
FAULTS = ("hang", "panic", "truncate")


def fault_in(cmdline: str) -> str | None:
    """The taintport.fault= a kernel command line asks for, if any."""
    for word in cmdline.split():
        if word.startswith("taintport.fault="):
            return word.partition("=")[2]
    return None


@dataclass
class Matrix:
    """matrix.json: a run's cells, or several runs' (merged: `runs` says whose)."""
    cells: list[Cell]
    started: str | None = None
    tools: dict[str, str] = field(default_factory=dict)
    accelerator: Accel | None = None
    runs: list[Run] = field(default_factory=list)
    schema: str | None = None  # the file's layout (schema.SCHEMA); None: this one

    @property
    def exit_code(self) -> int:
        return exit_code(self.cells)

    def run_of(self, cell: Cell) -> "Run | Matrix":
        """The run a cell came from: its entry in `runs`, or the document itself."""
        key = f"{cell.version}/{cell.variant.name}"
        return next((run for run in self.runs if key in run.cells), self)

    def all_runs(self) -> "list[Run | Matrix]":
        return list(self.runs) or [self]
