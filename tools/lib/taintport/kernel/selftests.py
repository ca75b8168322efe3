# SPDX-License-Identifier: GPL-2.0
"""The kernel's own tests around the change, from the tree its kernel was built from.

Issue 37: a cell's kernel also runs the livepatch selftests
(tools/testing/selftests/livepatch/) and loads the trace-event sample
(samples/trace_events/), a second module with events that nobody here wrote.
Up to 6.1 the selftests' modules are in-tree (lib/livepatch,
CONFIG_TEST_LIVEPATCH, loaded by name through modules.dep, so the guest runs
depmod), from 6.12 they are external modules in the selftests' test_modules/
(loaded from their files there). Where they are built is the cell's Target:

- OurBuild, a kernel we built: the in-tree modules and the sample come from
  the same build (kconfigs/selftests.config), test_modules/ is built against
  the build dir. Every module is signed with the build's key, as the guest's
  own modules are, so that the selftests see the kernel's livepatch code and
  not our unsigned-taint change; the sample also goes unsigned, for the
  loads that witness it.
- Headers, the distribution's binary: every one of them built out of tree
  against its headers, as kernel/binary.py builds the test modules (the
  tree's own Makefiles, the option on make's command line), unsigned: the
  distribution's key is not here, so its cell loads them E (as tlp), and
  the sample's signed load is skipped as the agent's signed loads are.

The payload is a folder laid out as the guest sees it under
/taintport/selftests/ (test-matrix/dracut/51taintport-selftests runs it):

    livepatch/           the tree's scripts, settings, test_modules/*.ko (6.12 on)
                         and test_klp-call_getpid (6.12 on: test-syscall's helper)
    modules/             lib/livepatch's test_klp_*.ko (up to 6.1)
    sample/              trace-events-sample.ko and trace-events-sample-signed.ko
                         (none where the key is not here)
    release              the kernel release it was built for (the guest's guard)
    timeout              seconds each script may take (timeout())
    unbuilt              the modules the host could not build, each with why
"""
import shutil
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
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
# in the payload: each module the host could not build ("name<TAB>why" lines)
UNBUILT = "unbuilt"


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


@dataclass(frozen=True)
class Modules:
    """What a build of some of the payload's modules gave: their files, and
    each module it could not build with why (a declared skip of the cell)."""
    built: list[Path]
    unbuilt: dict[str, str] = field(default_factory=dict)


class Target(ABC):
    """The kernel the payload's modules are built for and how they reach it."""

    @abstractmethod
    def configured(self, tree: Path, folder: Path, option: str, names: Sequence[str],
                   work: Path, log: Path) -> Modules:
        """The modules names of the tree's folder (lib/livepatch,
        samples/trace_events), which its Makefile builds for option=m."""

    @abstractmethod
    def external(self, source: Path, work: Path, log: Path) -> Modules:
        """A folder of external modules (the selftests' test_modules/, 6.12 on)."""

    @abstractmethod
    def sign(self, module: Path, signed: Path, log: Path) -> bool:
        """signed: module signed with the kernel's key; False (nothing
        written) where that key is not here."""

    def work(self, out: Path, name: str) -> Path:
        """Where its modules are built out of tree (build.out_of_tree)."""
        return out / name


@dataclass(frozen=True)
class OurBuild(Target):
    """The kernel we built in build_dir: its configuration built the tree's
    modules (kconfigs/selftests.config), its key signs them, and anything
    missing is a broken build."""
    build_dir: Path
    jobs: int
    cache_root: Path

    def configured(self, tree: Path, folder: Path, option: str, names: Sequence[str],
                   work: Path, log: Path) -> Modules:
        built = [self.build_dir / folder / f"{name}.ko" for name in names]
        missing = [str(ko) for ko in built if not ko.is_file()]
        if missing or not built:
            raise RunError("selftests", f"{', '.join(missing) or self.build_dir / folder} "
                           f"missing: {option}=m did not build what {folder}/ holds")
        return Modules(built)

    def external(self, source: Path, work: Path, log: Path) -> Modules:
        args, env = build.make_args(self.build_dir, self.jobs, self.cache_root)
        built = build.out_of_tree(["make", "-C", self.build_dir, *args[1:]], env, source,
                                  work, log)
        if not built:
            raise RunError("selftests", f"make built no module in {work}")
        return Modules(built)

    def sign(self, module: Path, signed: Path, log: Path) -> bool:
        build.sign(self.build_dir, module, signed, log)
        return True

    def work(self, out: Path, name: str) -> Path:
        return build.external_work(self.build_dir, name)


@dataclass(frozen=True)
class Headers(Target):
    """The distribution's binary: every module built out of tree against its
    headers (kernel/binary.py's make, as for the test modules), loaded
    unsigned (its key is not here: E, as tlp). A module its headers cannot
    build is named with make's reason, a declared skip, never a broken run."""
    make: tuple[str, ...]  # up to its M=
    env: dict[str, str]

    def configured(self, tree: Path, folder: Path, option: str, names: Sequence[str],
                   work: Path, log: Path) -> Modules:
        return self.built(tree / folder, work, log, names, (f"{option}=m",))

    def external(self, source: Path, work: Path, log: Path) -> Modules:
        return self.built(source, work, log, [c.stem for c in sorted(source.glob("*.c"))], ())

    def built(self, source: Path, work: Path, log: Path, names: Sequence[str],
              options: Sequence[str]) -> Modules:
        start = log.stat().st_size if log.exists() else 0
        made = build.out_of_tree(self.make, self.env, source, work, log, options,
                                 keep_going=True)
        with open(log, "rb") as out:
            out.seek(start)
            said = out.read().decode(errors="replace").splitlines()
        return Modules([ko for ko in made if ko.stem in names],
                       {name: unbuilt_reason(name, said) for name in names
                        if not (work / f"{name}.ko").is_file()})

    def sign(self, module: Path, signed: Path, log: Path) -> bool:
        return False


def unbuilt_reason(name: str, said: Sequence[str]) -> str:
    """Why make built no name.ko: the compiler's first error on its source, else make's."""
    errors = [line.strip() for line in said if "error" in line.lower()]
    first = next((e for e in errors if f"{name}.c:" in e), None) or \
        next((e for e in errors if name in e), None)
    return "not built against the distribution's headers: " + \
        (first or "make built no module of it (build.log)")


def build_payload(tree: Path, target: Target, release: str, out: Path,
                  log: Path) -> Path:
    """The selftests' scripts, modules and helper and the sample for target's
    kernel, in payload(out) (made anew: nothing of an older build stays);
    the modules target could not build are listed in its UNBUILT file."""
    tree = Path(tree)
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
    work = target.work(folder.parent, "selftests-build")
    if (source / "test_modules").is_dir():
        made = target.external(source / "test_modules", work, log)
        placed(made.built, target, scripts / "test_modules", log)
    else:
        made = target.configured(tree, IN_TREE, "CONFIG_TEST_LIVEPATCH",
                                 [c.stem for c in sorted((tree / IN_TREE).glob("test_klp_*.c"))],
                                 work, log)
        placed(made.built, target, folder / "modules", log)
    if (source / f"{GETPID}.c").is_file():
        require("gcc", "gcc")
        # static: the guest has bash and a few tools, no C library of its own
        run(["gcc", "-static", "-O2", "-o", scripts / GETPID, source / f"{GETPID}.c"],
            stage="selftests", log=log, nice=NICE_LEVEL)
    sample = target.configured(tree, SAMPLE.parent, "CONFIG_SAMPLE_TRACE_EVENTS",
                               [SAMPLE.stem], target.work(folder.parent, "sample-build"), log)
    (folder / "sample").mkdir()
    for ko in sample.built:
        shutil.copyfile(ko, folder / "sample" / ko.name)
        # no signed copy where the key is not here: the guest skips that load,
        # as the agent skips its signed loads there (variants.toml skips)
        target.sign(ko, folder / "sample" / f"{ko.stem}-signed.ko", log)
    unbuilt = {**made.unbuilt, **sample.unbuilt}
    (folder / UNBUILT).write_text("".join(f"{name}\t{why}\n"
                                          for name, why in sorted(unbuilt.items())))
    return folder


def placed(modules: list[Path], target: Target, dest: Path, log: Path) -> None:
    """Each module as the guest loads it, under its own name in dest: signed
    where target can sign, as built where it cannot."""
    dest.mkdir(parents=True, exist_ok=True)
    for module in modules:
        if not target.sign(module, dest / module.name, log):
            shutil.copyfile(module, dest / module.name)


def unbuilt(folder: Path) -> dict[str, str]:
    """The modules build_payload could not build in folder's payload, with why."""
    found = payload(folder) / UNBUILT
    lines = found.read_text().splitlines() if found.is_file() else []
    return dict(line.split("\t", 1) for line in lines if "\t" in line)


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
