# SPDX-License-Identifier: GPL-2.0
"""The kernel's own tests around the change, from the tree its kernel was built from.

Issue 37: a cell's kernel also runs the livepatch selftests
(tools/testing/selftests/livepatch/) and loads the trace-event sample
(samples/trace_events/), a second module with events that nobody here wrote.
Their modules come from the same build (kconfigs/selftests.config): up to
6.1 the selftests' modules are in-tree (lib/livepatch, CONFIG_TEST_LIVEPATCH,
loaded by name through modules.dep, so the guest runs depmod), from 6.12
they are external modules in the selftests' test_modules/ (loaded from
their files there), built here against the build dir. Every module is signed with the build's
key, as the guest's own modules are, so that the selftests see the kernel's
livepatch code and not our unsigned-taint change; the sample also goes
unsigned, for the loads that witness it.

The payload is a folder laid out as the guest sees it under
/taintport/selftests/ (test-matrix/dracut/51taintport-selftests runs it):

    livepatch/           the tree's scripts, settings, test_modules/*.ko (6.12 on)
                         and test_klp-call_getpid (6.12 on: test-syscall's helper)
    modules/             lib/livepatch's test_klp_*.ko (up to 6.1)
    sample/              trace-events-sample.ko and trace-events-sample-signed.ko
    release              the kernel release it was built for (the guest's guard)
    timeout              seconds each script may take (timeout())
"""
import shutil
from pathlib import Path

from taintport.errors import RunError
from taintport.kernel import build
from taintport.process import NICE_LEVEL, require, run

SELFTESTS = Path("tools/testing/selftests/livepatch")
# the payload's folder of scripts, named as the kernel names it (its subsystem
# shares its name with a fix of ours, which no code here may name)
SCRIPTS = SELFTESTS.name
IN_TREE = Path("lib/livepatch")  # CONFIG_TEST_LIVEPATCH=m: the selftests' modules up to 6.1
SAMPLE = Path("samples/trace_events/trace-events-sample.ko")
# test-syscall's user-space helper (6.12 on), which lib.mk builds as TEST_GEN_FILES
GETPID = "test_klp-call_getpid"
# what the guest runs per script without a timeout of its own (settings'
# timeout=0 means none in kselftest's runner): a test still running then is a
# declared skip, "did not finish under TCG in time"
DEFAULT_TIMEOUT = 150
BOOT_AND_SAMPLE = 60


def payload(out: Path) -> Path:
    """The cell's selftests folder, beside its other artifacts."""
    return Path(out) / "selftests"


def guest_timeout(folder: Path) -> int:
    """How long the guest may take: every script its whole time, and the
    boot and the sample's loads (BOOT_AND_SAMPLE) beside."""
    found = payload(folder)
    count = len(list((found / SCRIPTS).glob("test-*.sh")))
    return count * int((found / "timeout").read_text()) + BOOT_AND_SAMPLE


def timeout(source: Path) -> int:
    """The per-script timeout the guest applies: the selftests' settings, else ours."""
    settings = Path(source) / "settings"
    for line in settings.read_text().splitlines() if settings.is_file() else ():
        key, _, value = line.partition("=")
        if key.strip() == "timeout" and value.strip().isdigit() and int(value) > 0:
            return int(value)
    return DEFAULT_TIMEOUT


def build_payload(tree: Path, build_dir: Path, release: str, out: Path, log: Path,
                  jobs: int, cache_root: Path) -> Path:
    """The selftests' scripts, modules and helper and the sample, signed with
    build_dir's key, in payload(out) (made anew: nothing of an older build stays)."""
    tree, build_dir = Path(tree), Path(build_dir)
    source = tree / SELFTESTS
    if not (source / "functions.sh").is_file():
        raise RunError("selftests", f"{source}/functions.sh missing: the tree has no "
                       "livepatch selftests")
    folder = payload(out)
    if folder.exists():
        shutil.rmtree(folder)
    scripts = folder / SCRIPTS
    scripts.mkdir(parents=True)
    (folder / "release").write_text(release + "\n")
    (folder / "timeout").write_text(f"{timeout(source)}\n")
    for name in ("functions.sh", "settings", *(p.name for p in source.glob("test-*.sh"))):
        if (source / name).is_file():
            shutil.copyfile(source / name, scripts / name)
    if (source / "test_modules").is_dir():
        external(source / "test_modules", build_dir, folder, scripts / "test_modules",
                 log, jobs, cache_root)
    else:
        in_tree = sorted((build_dir / IN_TREE).glob("test_klp_*.ko"))
        if not in_tree:
            raise RunError("selftests", f"{build_dir / IN_TREE} has no test_klp_*.ko: "
                           "CONFIG_TEST_LIVEPATCH=m did not build them")
        signed_copies(in_tree, build_dir, folder / "modules", log)
    if (source / f"{GETPID}.c").is_file():
        require("gcc", "gcc")
        # static: the guest has bash and a few tools, no C library of its own
        run(["gcc", "-static", "-O2", "-o", scripts / GETPID, source / f"{GETPID}.c"],
            stage="selftests", log=log, nice=NICE_LEVEL)
    sample = build_dir / SAMPLE
    if not sample.is_file():
        raise RunError("selftests", f"{sample} missing: CONFIG_SAMPLE_TRACE_EVENTS=m "
                       "did not build it")
    (folder / "sample").mkdir()
    shutil.copyfile(sample, folder / "sample" / sample.name)
    build.sign(build_dir, folder / "sample" / sample.name,
               folder / "sample" / f"{sample.stem}-signed.ko", log)
    return folder


def external(source: Path, build_dir: Path, folder: Path, dest: Path, log: Path,
             jobs: int, cache_root: Path) -> None:
    """The selftests' test_modules/ (6.12 on) built out of tree against
    build_dir, as the selftests' own Makefile does (KDIR), in a copy: the
    tree stays as the series left it."""
    work = folder.parent / "selftests-build"
    if work.exists():
        shutil.rmtree(work)
    shutil.copytree(source, work)
    args, env = build.make_args(build_dir, jobs, cache_root)
    run(["make", "-C", build_dir, *args[1:], f"M={work}", "modules"], stage="selftests",
        env=env, log=log, nice=NICE_LEVEL)
    built = sorted(work.glob("*.ko"))
    if not built:
        raise RunError("selftests", f"make built no module in {work}")
    signed_copies(built, build_dir, dest, log)


def signed_copies(modules: list[Path], build_dir: Path, dest: Path, log: Path) -> None:
    """Each module signed with build_dir's key, under its own name in dest."""
    dest.mkdir(parents=True, exist_ok=True)
    for module in modules:
        build.sign(build_dir, module, dest / module.name, log)


def archive_entries(folder: Path) -> list[tuple[str, int, bytes | None]]:
    """The payload as initramfs.newc entries under taintport/selftests/:
    scripts and the helper executable, modules not (nothing may strip a
    signature), folders before their files."""
    entries: list[tuple[str, int, bytes | None]] = [("taintport/selftests", 0o755, None)]
    for path in sorted(Path(folder).rglob("*")):
        name = "taintport/selftests/" + path.relative_to(folder).as_posix()
        if path.is_symlink():
            raise RunError("selftests", f"{path}: a symbolic link in the payload")
        if path.is_dir():
            entries.append((name, 0o755, None))
        else:
            executable = path.suffix == ".sh" or path.name == GETPID
            entries.append((name, 0o755 if executable else 0o644, path.read_bytes()))
    return entries
