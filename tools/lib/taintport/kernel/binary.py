# SPDX-License-Identifier: GPL-2.0
"""The `shipped` variant's stage: the distribution's own binary kernel, no build.

The descriptor's [shipped] table pins the image (on 7.x the binary and
modules packages it depends on), the headers, their common part and
linux-kbuild, each fetched and checked like the source package. They are
extracted together into one folder of the cache, as dpkg would install them
but never into the host: the headers' Makefile includes the common part by
its absolute /usr/src path, which is pointed at the extracted copy. The test
modules are then built out of tree against those headers with the host's
compiler, and the guest gets the image's vmlinuz, those modules and one
small module the distribution signed (decompressed: the initramfs has no
module tools, and the signature is on the uncompressed file). The kernel's
own selftests and trace-event sample come from the version's source tree,
their modules built against the same headers (kernel/selftests.py, Headers).
"""
import hashlib
import os
import shutil
import subprocess
from pathlib import Path

from taintport.atomic import replace_file
from taintport.cache import Cache, scratch, sweep
from taintport.errors import RunError
from taintport.kernel import build, selftests
from taintport.kernel.build import Artifacts
from taintport.process import NICE_LEVEL, appending, orphan_proof, require, run
from taintport.tree.archive.download import fetch_deb
from taintport.tree.archive.indexes import Indexes
from taintport.tree.fetch import EXTRACTING_PREFIX
from taintport.tree.versions import Binary, Version

# the marker scripts/sign-file appends after a module's signature
SIGNATURE_MAGIC = b"~Module signature appended~\n"
# how Debian's modules may be compressed (CONFIG_MODULE_COMPRESS_*), and the
# tool that undoes each, with the package that has it
DECOMPRESS = {".xz": (("xz", "-dc"), "xz-utils"), ".zst": (("zstd", "-dc"), "zstd"),
              ".gz": (("gzip", "-dc"), "gzip")}
# linux-kbuild ships its cross host programs as <name>.real-<kind>; these
# kinds are the ones an x86_64 kernel's build runs
HOST_KINDS = (".real-lsb-64", ".real-x86")


def root(cache: Cache, version: Version, shipped: Binary) -> Path:
    """The extracted packages, named by their pins and the module kept of
    them: a repin, or another signed_module, extracts anew."""
    pins = "\n".join([f"{p.package} {p.version} {p.sha256}" for p in shipped.packages]
                     + [shipped.signed_module])
    return cache.root / "binary" / version.name / hashlib.sha256(pins.encode()).hexdigest()[:16]


def fetch_packages(cache: Cache, version: Version, shipped: Binary, log: Path) -> list[Path]:
    """Every pinned .deb, through the private apt configuration of the
    version's suites and checked against its pin, exactly as the source package is."""
    indexes = Indexes(cache, log)
    return [fetch_deb(cache, version, log, pin, indexes)[0] for pin in shipped.packages]


def extract(debs: list[Path], target: Path, shipped: Binary, log: Path) -> None:
    """All packages into target, whole or not at all (a scratch folder
    renamed), without the modules the guest never loads (130-390 MB a kernel)."""
    if target.is_dir():
        return
    require("dpkg-deb", "dpkg")
    target.parent.mkdir(parents=True, exist_ok=True)
    sweep(target.parent, EXTRACTING_PREFIX)  # left by a killed run
    with scratch(target.parent, EXTRACTING_PREFIX) as tmp:
        top = tmp / "top"
        for deb in debs:
            # niced, so it waits while a guest boots, as builds do: it took a
            # core from experimental-7.3's first boot (7.0 s, 2026-12-06)
            run(orphan_proof(["dpkg-deb", "-x", str(deb), str(top)]), stage="fetch",
                log=log, nice=NICE_LEVEL)
        for modules in module_folders(top, shipped):
            for module in (modules / "kernel").rglob("*"):
                if module.is_file() and \
                        not str(module.relative_to(modules)).startswith(shipped.signed_module):
                    module.unlink()
        os.replace(top, target)


def headers_dir(top: Path, shipped: Binary) -> Path:
    """The headers of the release, their Makefile pointed at the extracted
    common part instead of /usr/src (rewritten on every call: cheap, and a
    copy of the cache moved elsewhere still builds)."""
    headers = top / "usr" / "src" / f"linux-headers-{shipped.release}"
    makefile = headers / "Makefile"
    if not makefile.is_file():
        raise RunError("binary", f"{makefile} missing: the pinned headers are not those of "
                       f"{shipped.release}")
    original = makefile.with_name("Makefile.debian")
    if not original.exists():
        shutil.copy2(makefile, original)
    text = original.read_text()
    if "/usr/src/" not in text:
        raise RunError("binary", f"{original}: no /usr/src/ path to point at the extracted "
                       "headers; the packaging changed")
    replace_file(makefile, text.replace("/usr/src/", f"{top}/usr/src/").encode())
    return headers


def is_elf(path: Path) -> bool:
    with open(path, "rb") as handle:
        return handle.read(4) == b"\x7fELF"


def runs_here(program: Path) -> bool:
    """Whether the host's dynamic loader finds everything program needs
    (ldd's own test: the loader lists, nothing of program runs)."""
    proc = subprocess.run([str(program)], capture_output=True, text=True, timeout=20,
                          env={"LD_TRACE_LOADED_OBJECTS": "1", "LD_WARN": "yes"})
    return proc.returncode == 0 and "not found" not in proc.stdout + proc.stderr


def host_programs(top: Path, own_build: Path, log: Path) -> None:
    """linux-kbuild's programs are built for the suite's C library: sid's and
    trixie's need a newer glibc than this host's. Each one that cannot run
    here is replaced by the same program our build of the same source made
    (modpost, objtool: host programs, the same whatever the kernel's
    configuration), and the log says so."""
    for kbuild in sorted((top / "usr" / "lib").glob("linux-kbuild-*")):
        for program in sorted(p for p in kbuild.rglob("*") if p.is_file()):
            if os.access(program, os.X_OK) and is_elf(program):
                stand_in(program, program.relative_to(kbuild), own_build, log)


def stand_in(program: Path, rel: Path, own_build: Path, log: Path) -> None:
    kind = next((k for k in HOST_KINDS if rel.name.endswith(k)), "")
    if ".real-" in rel.name and not kind:
        return  # another architecture's copy: never run for x86_64
    if runs_here(program):
        return
    ours = own_build / rel.with_name(rel.name.removesuffix(kind))
    if not ours.is_file():
        # resolve_btfids and the like: only runs where pahole and vmlinux meet,
        # which the log shows if it ever does
        with appending(log) as out:
            out.write(f"{program}: cannot run on this host (C library), and our build "
                      f"has no {ours} to stand in\n")
        return
    shutil.copy2(ours, program)
    with appending(log) as out:
        out.write(f"{program}: cannot run on this host (C library); replaced by {ours}\n")


def headers_make(headers: Path, shipped: Binary, jobs: int) -> tuple[str, ...]:
    """make against the distribution's headers, up to its M=.

    CC=gcc: the headers name the compiler the distribution used (gcc-16 on
    sid), which this host may not have; shipped.make says what that costs."""
    return ("make", "-C", str(headers), f"-j{jobs}", "CC=gcc", *shipped.make)


def build_modules(headers: Path, shipped: Binary, out: Path, log: Path, jobs: int) -> None:
    """The test modules, out of tree against the distribution's headers."""
    built = build.compile_modules(headers_make(headers, shipped, jobs), build.REPRODUCIBLE,
                                  out / "module-build", log)
    for module in built:
        shutil.copy2(module, out / module.name)


def module_folders(top: Path, shipped: Binary) -> list[Path]:
    """lib/modules/<release>: under usr/ since 7.x (merged /usr), else at the top."""
    return [top / prefix / "lib" / "modules" / shipped.release for prefix in ("usr", ".")]


def signed_module(top: Path, shipped: Binary, out: Path) -> Path:
    """The distribution's signed module, in the form the guest kernel loads."""
    for folder in module_folders(top, shipped):
        for suffix in ("", *DECOMPRESS):
            found = folder / (shipped.signed_module + suffix)
            if found.is_file():
                target = out / f"{shipped.module_name}.ko"
                if suffix:
                    tool, package = DECOMPRESS[suffix]
                    require(tool[0], package)
                    with open(target, "wb") as dest:
                        proc = subprocess.run([*tool, str(found)], stdout=dest,
                                              stderr=subprocess.PIPE)
                    if proc.returncode:
                        raise RunError("binary", f"{' '.join(tool)} {found} failed",
                                       proc.stderr.decode(errors="replace"))
                else:
                    shutil.copy2(found, target)
                if not target.read_bytes().endswith(SIGNATURE_MAGIC):
                    raise RunError("binary", f"{found}: not signed (no appended signature)")
                return target
    raise RunError("binary", f"{shipped.signed_module} not found under "
                   f"lib/modules/{shipped.release} of the pinned packages")


def vmlinuz(top: Path, shipped: Binary) -> Path:
    """/boot/vmlinuz-<release> until 6.x; usr/lib/modules/<release>/vmlinuz on 7.x."""
    for found in (top / "boot" / f"vmlinuz-{shipped.release}",
                  top / "usr" / "lib" / "modules" / shipped.release / "vmlinuz"):
        if found.is_file():
            return found
    raise RunError("binary", f"no vmlinuz of {shipped.release} in the pinned packages")


def unpack(cache: Cache, version: Version, log: Path) -> Path:
    """The pinned packages fetched, checked and extracted: the folder they are in."""
    shipped = pinned(version)
    top = root(cache, version, shipped)
    extract(fetch_packages(cache, version, shipped, log), top, shipped, log)
    host_programs(top, cache.build(version), log)
    return top


def prepare(version: Version, top: Path, tree: Path, out: Path, log: Path,
            jobs: int) -> Artifacts:
    """The test modules built against the unpacked headers, the signed
    module and the agent for the release: what a built variant's Artifacts
    hold; and the kernel's own selftests and trace-event sample from the
    version's source tree, their modules built against the same headers."""
    shipped = pinned(version)
    out.mkdir(parents=True, exist_ok=True)
    for stale in build.module_files(out):
        stale.unlink()
    headers = headers_dir(top, shipped)
    build_modules(headers, shipped, out, log, jobs)
    selftests.build_payload(tree, selftests.Headers(headers_make(headers, shipped, jobs),
                                                    build.REPRODUCIBLE),
                            shipped.release, out, log)
    signed_module(top, shipped, out)
    agent = out / "taintport-agent"
    sources = build.agent_sources()
    # beside the built variants' agent, but its own: another release
    shutil.copy2(build.build_agent(out.parent / f"agent-{sources}-{shipped.release}",
                                   shipped.release, log), agent)
    return Artifacts(directory=out, bzimage=vmlinuz(top, shipped),
                     modules=build.module_files(out), agent=agent, release=shipped.release)


def pinned(version: Version) -> Binary:
    if version.shipped is None:
        raise RunError("binary", f"{version.path} has no [shipped] table: no binary "
                       "kernel is pinned for this version")
    return version.shipped
