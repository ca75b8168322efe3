# SPDX-License-Identifier: GPL-2.0
"""Build stage: one out-of-tree kernel build dir per version, shared by its variants.

The first variant pays for the full build; switching variant only touches the
files the series changes, so make rebuilds a handful of objects. The test
modules (every one test-matrix/module/Kbuild names) are built against the same
build dir, and each is also signed with the key that build generated (which
never leaves the build dir).
"""
import hashlib
import os
import shutil
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from taintport import REPO, guest
from taintport.digest import same_bytes, sha256_of, tree_digest
from taintport.errors import InputError, RunError
from taintport.kernel import kconfig
from taintport.process import NICE_LEVEL, require, run

MODULE_SRC = REPO / "test-matrix" / "module"
AGENT_SRC = REPO / "test-matrix" / "agent"

# Pinned so that the same inputs give the same kernel image.
REPRODUCIBLE = {
    "KBUILD_BUILD_TIMESTAMP": "Thu Jan  1 00:00:00 UTC 2026",
    "KBUILD_BUILD_USER": "taintport",
    "KBUILD_BUILD_HOST": "taintport",
    "KBUILD_BUILD_VERSION": "1",
    "LC_ALL": "C",
}


@dataclass(frozen=True)
class Artifacts:
    directory: Path
    bzimage: Path
    modules: tuple[Path, ...]  # the guest's module files, each test module as <m>.ko and <m>-signed.ko
    agent: Path
    release: str


def default_jobs() -> int:
    return (os.cpu_count() or 1) + 1


# ccache only when asked for: TAINTPORT_CCACHE=1 (the pipelines under ci/,
# where only ccache/ survives from one job to the next). Here the build
# folder is kept instead, and an empty ccache costs a preprocessor run of its
# own on every miss: 6.1's cold build took 253 s (487 CPU-s) through it, 181 s
# (347) without. Its depend mode, which skips that run, cannot see what a
# .S file pulls in with .incbin: the new vmlinux in piggy.S (a rebuilt
# backported kernel was upstream's image again), the signing certificate.
CCACHE = "TAINTPORT_CCACHE"


def ccache_wanted() -> bool:
    """TAINTPORT_CCACHE: 1 builds through ccache (in the cache's ccache/), 0 or
    unset without; anything else is refused."""
    value = os.environ.get(CCACHE, "")
    if value not in ("", "0", "1"):
        raise InputError(f"${CCACHE}: {value[:40]!r} is neither 1 (build through ccache, "
                         "kept in the cache's ccache/ folder) nor 0 (without)")
    if value == "1":
        require("ccache", "ccache")
    return value == "1"


def make_args(build_dir: Path, jobs: int, cache_root: Path) -> tuple[list[str], dict[str, str]]:
    args = [f"O={build_dir}", "ARCH=x86_64", f"-j{jobs}"]
    env = dict(REPRODUCIBLE)
    if ccache_wanted():
        args.append("CC=ccache gcc")
        env["CCACHE_DIR"] = str(Path(cache_root) / "ccache")
    return args, env


def kernel_release(tree: Path, build_dir: Path, args: list[str], env: dict[str, str]) -> str:
    proc = run(["make", "-s", *args, "kernelrelease"], stage="build", cwd=tree, env=env)
    return proc.stdout.strip().splitlines()[-1]


def build_kernel(tree: Path, build_dir: Path, version_name: str, log: Path, jobs: int,
                 cache_root: Path) -> str:
    """Configure (when the fragments changed) and build bzImage; return the release."""
    require("make", "make")
    require("gcc", "gcc")
    for tool, package in (("bison", "bison"), ("flex", "flex"), ("bc", "bc"),
                          ("openssl", "openssl"), ("lz4", "lz4")):
        require(tool, package)
    args, env = make_args(build_dir, jobs, cache_root)
    kconfig.configure(tree, build_dir, kconfig.fragments(version_name), log,
                      [a for a in args if not a.startswith("CC=")])
    with building(Path(build_dir), log):
        run(["make", *args, "bzImage", "modules"], stage="build", cwd=tree, env=env, log=log,
            nice=NICE_LEVEL)
    return kernel_release(tree, build_dir, args, env)


@contextmanager
def building(build_dir: Path, log: Path) -> Iterator[None]:
    """Mark a make in progress. A make killed mid-way (Ctrl-C, SIGTERM, a
    timeout) can leave a half-written .<target>.cmd (fixdep writes it in
    place): the next make then stops with "unterminated variable reference".
    So a mark still there names an interrupted build, and every .cmd written
    since it goes: Kbuild rebuilds a target whose .cmd is missing."""
    mark = build_dir / ".taintport-building"
    if mark.exists():
        since = mark.stat().st_mtime
        dropped = [p for p in build_dir.rglob(".*.cmd") if p.stat().st_mtime >= since]
        for path in dropped:
            path.unlink()
        with open(log, "a") as out:
            out.write(f"taintport: the last make here was interrupted: {len(dropped)} .cmd "
                      "files it wrote dropped, their targets are rebuilt\n")
    mark.write_text(f"{os.getpid()}\n")
    yield
    mark.unlink()  # only when make finished: a failed or killed one keeps it


def sig_hash(build_dir: Path) -> str:
    return kconfig.read_config(Path(build_dir) / ".config")["CONFIG_MODULE_SIG_HASH"].strip('"')


def module_files(folder: Path) -> tuple[Path, ...]:
    """The module files a build left in folder, in the order the guest gets them."""
    return tuple(sorted(Path(folder).glob("*.ko")))


def external_work(build_dir: Path, name: str) -> Path:
    """Where modules built out of tree against build_dir are made, kept with
    it (its series' build, whichever variant is in it) from one build to the next."""
    return Path(build_dir).parent / "external" / name


def out_of_tree(make: Sequence[object], env: dict[str, str], source: Path, work: Path,
                log: Path, options: Sequence[str] = (), keep_going: bool = False) -> list[Path]:
    """source's modules built out of tree by make (the command up to its M=:
    our build dir, or a distribution's headers) in work, a copy of source (a
    kernel tree stays as its series left it); returns the .ko files this make
    left there. options: more make variables (CONFIG_X=m for a folder of the tree
    whose Makefile builds only what the configuration asks for). keep_going:
    make -k, and a failed make is no error: the caller names what is missing.

    work is kept from one build to the next, and Kbuild's own dependencies say
    what to compile again: the next variant's kernel differs from the last in
    a few .c files no module includes, so its modules are linked again, not
    compiled (every variant had compiled 7.3's selftests' and our test modules
    anew, about 30 objects a rebuild)."""
    copied(source, work)
    for stale in work.glob("*.ko"):
        stale.unlink()  # what is returned is this make's: none of an earlier one
    with building(work, log):
        run([*map(str, make), *(("-k",) if keep_going else ()), f"M={work}", *options,
             "modules"], stage="module", env=env, log=log, nice=NICE_LEVEL,
            check=not keep_going)
    return sorted(work.glob("*.ko"))


def copied(source: Path, work: Path) -> None:
    """work holds source's files, byte for byte: those that differ written anew
    (their time now, so make compiles them again), the others left as they are."""
    work.mkdir(parents=True, exist_ok=True)
    for path in sorted(Path(source).rglob("*")):
        if not path.is_file():
            continue
        dest = work / path.relative_to(source)
        if dest.is_symlink() or dest.is_dir():
            raise RunError("module", f"{dest} is not a plain file: remove {work}")
        if dest.is_file() and same_bytes(dest, path):
            continue
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, dest)


def compile_modules(make: Sequence[object], env: dict[str, str], work: Path,
                    log: Path) -> list[Path]:
    """The test modules (test-matrix/module) built out of tree in work by make
    (the command up to its M=: our build dir, or a distribution's headers);
    returns the .ko files make left there."""
    built = out_of_tree(make, env, MODULE_SRC, work, log)
    if not built:
        raise RunError("module", f"make built no module in {work}")
    return built


def build_modules(build_dir: Path, out: Path, log: Path, jobs: int,
                  cache_root: Path) -> tuple[Path, ...]:
    """Every test module built against build_dir, as <m>.ko and as <m>-signed.ko
    signed with build_dir's key; returns module_files(out)."""
    args, env = make_args(build_dir, jobs, cache_root)
    built = compile_modules(["make", "-C", build_dir, *args[1:]], env,
                            external_work(build_dir, "module-build"), log)
    key = Path(build_dir) / "certs" / "signing_key.pem"
    if not key.exists():
        raise RunError("module", f"{key} missing: the build did not generate a signing key")
    os.chmod(key, 0o600)
    # a module dropped from Kbuild must not reach the guest from an older build
    for stale in module_files(out):
        stale.unlink()
    for module in built:
        unsigned = out / module.name
        shutil.copy2(module, unsigned)
        sign(build_dir, unsigned, out / f"{module.stem}-signed.ko", log)
    return module_files(out)


def agent_sources() -> str:
    """What the agent is made of: its C, and the guest data its checks are
    generated from (test-matrix/, read by taintport/guest.py)."""
    return hashlib.sha256((tree_digest(REPO / "test-matrix") +
                           sha256_of(Path(guest.__file__))).encode()).hexdigest()[:16]


def sign(build_dir: Path, module: Path, signed: Path, log: Path) -> None:
    """signed: module signed with build_dir's key (build_modules made sure it exists)."""
    key = Path(build_dir) / "certs" / "signing_key.pem"
    cert = Path(build_dir) / "certs" / "signing_key.x509"
    # Sign with the hash the kernel was built for: one it has no code for
    # would load as unsigned, silently.
    run([Path(build_dir) / "scripts" / "sign-file", sig_hash(build_dir), key, cert,
         module, signed], stage="module", log=log)


def build_agent(out: Path, release: str, log: Path) -> Path:
    run(["make", "-C", AGENT_SRC, f"OUT={out}", f"KRELEASE={release}"], stage="agent",
        log=log)
    agent = Path(out) / "taintport-agent"
    if not agent.exists():
        raise RunError("agent", f"{agent} was not built")
    return agent


def build_variant(tree: Path, build_dir: Path, version_name: str, out: Path, log: Path,
                  jobs: int, cache_root: Path) -> Artifacts:
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    release = build_kernel(tree, build_dir, version_name, log, jobs, cache_root)
    bzimage = out / "bzImage"
    shutil.copy2(Path(build_dir) / "arch" / "x86" / "boot" / "bzImage", bzimage)
    modules = build_modules(build_dir, out, log, jobs, cache_root)
    # the agent depends only on its sources and the release, which the
    # variants share: one build per version and agent sources (make's
    # timestamps alone would take a newer agent another checkout built into
    # the shared cache); each variant takes a copy, since its initramfs is
    # made while the next variant builds
    agent = out / "taintport-agent"
    sources = agent_sources()
    shutil.copy2(build_agent(out.parent / f"agent-{sources}", release, log), agent)
    return Artifacts(directory=out, bzimage=bzimage, modules=modules, agent=agent,
                     release=release)
