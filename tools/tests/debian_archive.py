# SPDX-License-Identifier: GPL-2.0
"""A Debian archive of the tests' own: a release's suites with small fake
kernel packages, indexed as Debian's are, by dpkg-scanpackages (Packages)
and apt-ftparchive (Release), served as a file: archive (no network).

A linux-source .deb has the shape of Debian's: usr/src/<package>.tar.xz
holding <package>/ with a Makefile and whatever files the test gives it.
"""
import hashlib
import io
import shutil
import subprocess
import tarfile
from pathlib import Path


def sha(path):
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def control(root, package, version, arch, depends=""):
    (root / "DEBIAN").mkdir(parents=True)
    (root / "DEBIAN" / "control").write_text(
        f"Package: {package}\nVersion: {version}\nArchitecture: {arch}\n"
        + (f"Depends: {depends}\n" if depends else "")
        + "Maintainer: test <t@localhost>\nDescription: taintport test package\n")


def build(root, deb):
    subprocess.run(["dpkg-deb", "-Zxz", "--build", str(root), str(deb)], check=True,
                   capture_output=True)
    shutil.rmtree(root)
    return deb


def source_deb(work, package, version, files=None, empty=0):
    """linux-source-X.Y at version: {path: bytes} (and `empty` empty files,
    cheap to pack and slow to unpack) in its tree, plus a Makefile."""
    root = Path(work) / f"root-{package}-{version}"
    tarball = root / "usr" / "src" / f"{package}.tar.xz"
    tarball.parent.mkdir(parents=True)
    contents = {"Makefile": f"# {package} {version}\n".encode(), **(files or {})}
    with tarfile.open(tarball, "w:xz") as tar:
        for rel, data in sorted(contents.items()):
            info = tarfile.TarInfo(f"{package}/{rel}")
            info.size = len(data)
            info.mtime = 1_600_000_000  # Debian's tarballs carry old times
            tar.addfile(info, io.BytesIO(data))
        for i in range(empty):
            info = tarfile.TarInfo(f"{package}/many/{i // 1000}/f{i}")
            info.mtime = 1_600_000_000
            tar.addfile(info, io.BytesIO(b""))
    control(root, package, version, "all")
    return build(root, Path(work) / f"{package}_{version}_all.deb")


def binary_deb(work, package, version, arch="amd64", depends=""):
    """A binary package with one placeholder file (an image, headers, kbuild)."""
    root = Path(work) / f"root-{package}-{version}"
    (root / "usr" / "share" / "doc" / package).mkdir(parents=True)
    (root / "usr" / "share" / "doc" / package / "placeholder").write_text(package + "\n")
    control(root, package, version, arch, depends)
    return build(root, Path(work) / f"{package}_{version}_{arch}.deb")


def kernel_debs(work, release, version, series="9.9"):
    """Debian's binary kernel of one upload: signed image, headers, their
    common part and kbuild, depending on each other as Debian's do."""
    return [binary_deb(work, f"linux-image-{release}-amd64", version),
            binary_deb(work, f"linux-headers-{release}-amd64", version,
                       depends=f"linux-headers-{release}-common (= {version}), "
                               f"linux-kbuild-{series} (>= {version})"),
            binary_deb(work, f"linux-headers-{release}-common", version, arch="all"),
            binary_deb(work, f"linux-kbuild-{series}", version)]


def publish(root, suites):
    """pool/<suite>/ and dists/<suite>/ for {suite: [.deb]}; the file: URL."""
    root = Path(root)
    for suite, debs in suites.items():
        pool = root / "pool" / suite
        pool.mkdir(parents=True, exist_ok=True)
        for deb in debs:
            shutil.copy2(deb, pool / Path(deb).name)
        binary = root / "dists" / suite / "main" / "binary-amd64"
        binary.mkdir(parents=True, exist_ok=True)
        scan = subprocess.run(["dpkg-scanpackages", "--multiversion", f"pool/{suite}",
                               "/dev/null"], cwd=root, check=True, capture_output=True)
        (binary / "Packages").write_bytes(scan.stdout)
        release = subprocess.run(
            ["apt-ftparchive", "-o", f"APT::FTPArchive::Release::Suite={suite}",
             "-o", f"APT::FTPArchive::Release::Codename={suite}",
             "-o", "APT::FTPArchive::Release::Architectures=amd64 all",
             "-o", "APT::FTPArchive::Release::Components=main",
             "release", f"dists/{suite}"], cwd=root, check=True, capture_output=True)
        (root / "dists" / suite / "Release").write_bytes(release.stdout)
    return f"file:{root}"


def descriptor(folder, name, release, suites, archive, deb, package, version, ships,
               backports=(), shipped=None, pin_suite=None):
    """versions/<name>.toml pinned to deb (from pin_suite, the first suite by default)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    quoted = ", ".join(f'"{s}"' for s in suites)
    text = (f'name = "{name}"\ndistribution = "debian"\nrelease = "{release}"\n'
            f"suites = [{quoted}]\n"
            + (f"backports = [{', '.join(chr(34) + b + chr(34) for b in backports)}]\n"
               if backports else "")
            + f'archive = "{archive}"\nsecurity_archive = "{archive}"\ncomponent = "main"\n'
            f'package = "{package}"\nsuite = "{pin_suite or suites[0]}"\n'
            f'version = "{version}"\nsha256 = "{sha(deb)}"\nsize = {Path(deb).stat().st_size}\n'
            f"ships = [{', '.join(chr(34) + s + chr(34) for s in ships)}]\n")
    if shipped:
        text += ('\n[shipped]\nrelease = "0"\nsigned_module = "kernel/lib/ts_kmp.ko"\n'
                 'memory = 1024\ntimeout = 300\nappend = "console=ttyS0"\nmake = []\n')
        for pin in shipped:
            text += (f'\n[[shipped.packages]]\npackage = "{pin.name.split("_")[0]}"\n'
                     f'version = "{pin.name.split("_")[1]}"\nsha256 = "{sha(pin)}"\n'
                     f"size = {pin.stat().st_size}\n")
    path = folder / f"{name}.toml"
    path.write_text(text)
    return path
