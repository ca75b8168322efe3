# SPDX-License-Identifier: GPL-2.0
"""The selftests stage of a cell: after the agent's boot, a boot of its own.

The agent's boot stays the measured "boot + test" (docs/benchmarks.md): the
kernel's own livepatch selftests and the trace-event sample run in a second
boot of the same kernel, from an image of their own (dracut's part with
51taintport-selftests once per chain for every kernel, then the cell's payload and token
appended), with their own time (timings.selftests) and progress line. Its
console and KTAP are the cell's selftests-console.log and selftests-ktap.txt
(kunit.py parse reads the latter as it reads ktap.txt).

Every booted cell runs it, the distribution's binary too: there its modules
were built against the distribution's headers (kernel/selftests.Headers) and
it boots with the binary's own profile (memory, command line), as its
agent's boot does. What the host could not build for a kernel is a declared
skip naming the module and why.
"""
import secrets
from pathlib import Path

from taintport.errors import RunError
from taintport.judge import ktap, selftests as judge
from taintport.judge.verdict import Check, Judgement, Status
from taintport.kernel import boot, initramfs, selftests
from taintport.process import STOPPING, require
from taintport.results.cells import Cell
from taintport.run.stages import Built, Chain
from taintport.tree.variants import table

CONSOLE = "selftests-console.log"
KTAP = "selftests-ktap.txt"
# the selftests print to the kernel log a lot: only what stops the kernel
# reaches the console, so that the runner's KTAP lines are not torn
LOGLEVEL = "loglevel=1"
# A cell whose agent gave no verdict (a guest that hung, panicked or was cut
# short, or a harness fault on purpose) is an error whatever the selftests
# would say: their minute under TCG adds nothing to it, and the error is what
# its reader must look at first.
AGENT_ERROR_SKIP = "not run: the agent's boot ended in an error (see the cell's errors)"


def image(chain: Chain, built: Built, token: str, log: Path) -> Path:
    artifacts = built.artifacts
    # one dracut run per chain for every kernel (2-3 s of a core each)
    base = chain.dracut_image(initramfs.selftests_base, "selftests-base.img", log)
    archive = initramfs.newc([
        ("taintport", 0o755, None),
        *selftests.archive_entries(selftests.payload(artifacts.directory)),
        ("taintport/token", 0o644, (token + "\n").encode())])
    return initramfs.appended(base, archive, artifacts.directory / "initramfs-selftests.img")


def run_stage(chain: Chain, cell: Cell, built: Built) -> ktap.Parsed:
    """Image and boot; the parsed KTAP (the guest's errors in it)."""
    artifacts, cdir = built.artifacts, chain.cell_dir(cell)
    cdir.mkdir(parents=True, exist_ok=True)
    if not selftests.payload(artifacts.directory).is_dir():
        raise RunError("selftests", f"{selftests.payload(artifacts.directory)} missing: "
                       "build the variant again")
    token = secrets.token_hex(8)
    initrd = image(chain, built, token, cdir / "build.log")
    assert chain.accel is not None  # the agent's boot probed it
    profile = built.profile
    append = " ".join(filter(None, (profile.append, LOGLEVEL, f"taintport.token={token}")))
    timeout = selftests.guest_timeout(artifacts.directory)
    require(boot.QEMU, "qemu-system-x86")
    console = cdir / CONSOLE
    cmd = boot.command(artifacts.bzimage, initrd, console, append, chain.accel.name,
                       profile.memory)
    _, timed_out, _ = boot.run_qemu(cmd, console, timeout)
    text = console.read_text(errors="replace") if console.exists() else ""
    parsed = ktap.parse(text)
    (cdir / KTAP).write_text("\n".join(parsed.lines) + "\n")
    if timed_out:
        parsed.errors.insert(0, f"guest killed at the {timeout}s timeout")
    return parsed


def stage(chain: Chain, cell: Cell, built: Built, reference: Cell | None) -> None:
    """Run the cell's selftests and fold their checks into the cell.
    reference: this run's published cell of the tree as shipped built by us
    (variants.toml's as_shipped), if there is one and cell is not it."""
    if cell.status is Status.ERROR:
        cell.checks.append(judge.not_run(AGENT_ERROR_SKIP))
        return
    try:
        parsed = chain.timed(cell, "selftests", run_stage, chain, cell, built)
    except RunError as err:
        if STOPPING.is_set():
            raise  # an interrupted cell is no result: --resume runs it
        parsed = ktap.Parsed(errors=[str(err)])
    theirs: list[Check] | None = None  # the reference itself
    if cell.variant != table().as_shipped():
        # without the reference in this run nothing is the kernel's own failure
        theirs = reference.checks if reference is not None else []
    # what the host could not build for this kernel is said, never a silent gap
    unbuilt = selftests.unbuilt(built.artifacts.directory)
    sample = unbuilt.pop(selftests.SAMPLE.stem, None)
    judged = judge.judge(parsed, chain.expectations.expected(cell.fixes), theirs,
                         judge.declared(cell.variant.skips, sample))
    judged = Judgement(judged.status, [*judged.checks,
                                       *(judge.not_built(m, why) for m, why in unbuilt.items())],
                       judged.errors)
    merged = judge.merged(Judgement(cell.status, list(cell.checks), list(cell.errors)),
                          judged)
    cell.status, cell.checks, cell.errors = merged.status, merged.checks, merged.errors
