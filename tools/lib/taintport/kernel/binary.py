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
module tools, and the signature is on the uncompressed file).
"""
import hashlib
import os
import re
import shutil
import subprocess
from pathlib import Path

from taintport import debversion, names
from taintport.cache import Cache, scratch, sweep
from taintport.digest import tree_digest
from taintport.errors import InputError, RunError
from taintport.kernel import build
from taintport.kernel.build import Artifacts
from taintport.process import appending, orphan_proof, require, run
from taintport.tree import fetch, versions
from taintport.tree.versions import Binary, Pin, RELEASE, Version

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
    indexes = fetch.Indexes(cache, log)
    return [fetch.fetch_deb(cache, version, log, pin, indexes)[0] for pin in shipped.packages]


def extract(debs: list[Path], target: Path, shipped: Binary, log: Path) -> None:
    """All packages into target, whole or not at all (a scratch folder
    renamed), without the modules the guest never loads (130-390 MB a kernel)."""
    if target.is_dir():
        return
    require("dpkg-deb", "dpkg")
    target.parent.mkdir(parents=True, exist_ok=True)
    sweep(target.parent, fetch.EXTRACTING_PREFIX)  # left by a killed run
    with scratch(target.parent, fetch.EXTRACTING_PREFIX) as tmp:
        top = tmp / "top"
        for deb in debs:
            run(orphan_proof(["dpkg-deb", "-x", str(deb), str(top)]), stage="fetch",
                log=log)
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
    makefile.write_text(text.replace("/usr/src/", f"{top}/usr/src/"))
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


def build_modules(headers: Path, shipped: Binary, out: Path, log: Path, jobs: int) -> None:
    """The test modules, out of tree against the distribution's headers.

    CC=gcc: the headers name the compiler the distribution used (gcc-16 on
    sid), which this host may not have; shipped.make says what that costs."""
    built = build.compile_modules(["make", "-C", headers, f"-j{jobs}", "CC=gcc", *shipped.make],
                                  build.REPRODUCIBLE, out, log)
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


def prepare(version: Version, top: Path, out: Path, log: Path, jobs: int) -> Artifacts:
    """The test modules built against the unpacked headers, the signed
    module and the agent for the release: what a built variant's Artifacts hold."""
    shipped = pinned(version)
    out.mkdir(parents=True, exist_ok=True)
    for stale in build.module_files(out):
        stale.unlink()
    build_modules(headers_dir(top, shipped), shipped, out, log, jobs)
    signed_module(top, shipped, out)
    agent = out / "taintport-agent"
    sources = tree_digest(build.AGENT_SRC)[:16]
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


# The packages of a Debian binary kernel the shipped variant takes: the signed
# image (since 7.x linux-image-<release> depends on linux-binary- and
# linux-modules-<release>, which hold vmlinuz and the modules), the headers,
# their common part and linux-kbuild.
PINNED = re.compile(r"linux-(binary|image|modules|headers|kbuild)-")
# the image of the default flavour: linux-image-6.1.0-57-amd64,
# linux-image-6.1.0-0.deb11.52-amd64, linux-image-6.12.118+deb12-amd64,
# linux-image-7.3-amd64; not -cloud-, -rt-, -unsigned, -dbg, nor a metapackage
IMAGE = re.compile(r"linux-image-([0-9][0-9a-z.+~]*\.[0-9a-z.+~]*(-[0-9][0-9a-z.+~]*)?-amd64)")
# the package holding vmlinuz first: since 7.x linux-binary-<release>, whose
# linux-image-<release> only depends on it and on linux-modules-<release>
ORDER = ("linux-binary-", "linux-image-", "linux-modules-", "linux-headers-", "linux-kbuild-")


def of_series(version: str, series: str) -> bool:
    """Whether a Debian version is an upload of a kernel series: 6.1.192-3 of 6.1, not of 6.12."""
    return version == series or version.startswith((f"{series}.", f"{series}~", f"{series}-"))


def depends(fields: dict[str, str], default: str) -> list[tuple[str, str]]:
    """(package, version) of each kernel package fields depends on: the
    version it pins with (= ...), else default (kbuild is unversioned or >=)."""
    found = []
    for dep in fields.get("Depends", "").split(","):
        m = re.match(r"\s*([a-z0-9][a-z0-9.+-]*)\s*(?:\(\s*=\s*([^) ]+)\s*\))?",
                     dep.split("|")[0])
        if m and PINNED.match(m.group(1)) and IMAGE.fullmatch(m.group(1)) is None:
            found.append((m.group(1), m.group(2) or default))
    return found


def images(apt: fetch.PrivateApt, series: str) -> list[fetch.Published]:
    """Every upload of the series' default-flavour signed image the suite lists."""
    names_ = [n for n in apt.pkgnames("linux-image-") if IMAGE.fullmatch(n)]
    found = []
    for fields in apt.show(names_):
        item = fetch.published_from(fields, apt.source.suite, f"{apt.source.suite} index")
        # linux-image-6.1-amd64 is bullseye's metapackage of its 6.1 series,
        # shaped like 7.3's image: a metapackage depends on an image
        meta = any(IMAGE.fullmatch(dep.strip().split(" ")[0])
                   for dep in fields.get("Depends", "").split(","))
        if item is not None and IMAGE.fullmatch(item.package) and not meta and \
                of_series(item.version, series):
            found.append(item)
    return found


def nearest(found: list[fetch.Published], wanted: str) -> fetch.Published:
    """The image of the wanted upload; else the newest older one, else the oldest newer."""
    exact = [p for p in found if p.version == wanted]
    if exact:
        return exact[0]
    older = sorted((p for p in found if debversion.compare(p.version, wanted) < 0),
                   key=lambda p: debversion.key(p.version))
    newer = sorted((p for p in found if debversion.compare(p.version, wanted) > 0),
                   key=lambda p: debversion.key(p.version))
    return older[-1] if older else newer[0]


def signed_image(indexes: fetch.Indexes, version: Version) -> tuple[str, list[Pin]]:
    """The binary kernel Debian built from the pinned upload, in the version's
    suites: its version, and every package of it the shipped variant needs
    (the image's and the headers' kernel dependencies, followed)."""
    series = version.package.removeprefix("linux-source-")
    found = {source: images(indexes.apt(source), series) for source in version.sources()}
    every = [p for listed in found.values() for p in listed]
    if not every:
        raise InputError(f"{', '.join(version.suites)} offer no linux-image of {series} "
                         "(amd64, signed)")
    image = nearest(every, version.version)
    apt = indexes.apt(next(s for s, listed in found.items() if image in listed))
    named = IMAGE.fullmatch(image.package)
    assert named is not None  # images() took only such names
    release = named.group(1)
    todo = [(image.package, image.version), (f"linux-headers-{release}", image.version)]
    pins: dict[str, Pin] = {}
    while todo:
        package, wanted = todo.pop()
        if package in pins:
            continue
        fields = next((f for f in apt.show([package]) if f.get("Version") == wanted), None)
        item = fetch.published_from(fields or {}, apt.source.suite, f"{apt.source.suite} index")
        if fields is None or item is None:
            raise InputError(f"{apt.source.suite}'s index has no {package} {wanted}")
        pins[package] = item.pin
        todo += depends(fields, image.version)
    if any(p.startswith("linux-binary-") for p in pins):
        pins = {p: pin for p, pin in pins.items() if not p.startswith("linux-image-")}
    return image.version, sorted(pins.values(), key=lambda p: (
        next(i for i, prefix in enumerate(ORDER) if p.package.startswith(prefix)), p.package))


def repin(cache: Cache, version: Version, log: Path) -> str:
    """Move the [shipped] pins to the binary kernel of the upload the source
    is pinned to (fetch.repin moved it first), found in the version's suites;
    says what it did. Where the suites have no binary of that upload (the
    signed image lags the source), the nearest is pinned and the file says so."""
    shipped = version.shipped
    if shipped is None:
        return "no [shipped] table"
    binary_version, pins = signed_image(fetch.Indexes(cache, log), version)
    return rewrite(version, binary_version, pins)


def rewrite(version: Version, binary_version: str, pins: list[Pin]) -> str:
    """The descriptor's [shipped] release and pins, rewritten in place."""
    shipped = version.shipped
    assert shipped is not None  # repin checked
    image = pins[0].package
    release = image.split("-", 2)[2]
    names.check(RELEASE, release, f"{version.suite} index: {image}", "a kernel release")
    text = version.path.read_text()
    head, sep, _ = text.partition("\n[[shipped.packages]]")
    if not sep:
        raise InputError(f"{version.path}: no [[shipped.packages]] to rewrite")
    head = re.sub(r"\n# linux-source is .* on purpose\.\n?$", "", head)
    # the [shipped] table's release (uname -r), not the descriptor's (bookworm)
    top, table, rest = head.partition("\n[shipped]\n")
    rest, count = re.subn(r'^release = ".*"$', f'release = "{release}"', rest, count=1,
                          flags=re.M)
    head = top + table + rest
    if not table or count != 1:
        raise InputError(f"{version.path}: no 'release =' line in [shipped] to rewrite")
    note = ""
    if binary_version != version.version:
        note = (f"# linux-source is {version.version}, the suites' binaries "
                f"{binary_version}: the nearest, pinned on purpose.\n")
    blocks = "".join(f'\n[[shipped.packages]]\npackage = "{p.package}"\n'
                     f'version = "{p.version}"\nsha256 = "{p.sha256}"\nsize = {p.size}\n'
                     for p in pins)
    version.path.write_text(head.rstrip("\n") + "\n" + note + blocks)
    versions.load(version.path)  # what was written must read back
    moved = [p for p in pins if p not in shipped.packages]
    said = (f"{release}: {len(moved)} of {len(pins)} binary pins moved" if moved
            else f"{release}: binary pins unchanged")
    return said + (f" (binaries {binary_version}, not the source's {version.version})"
                   if note else "")
