# SPDX-License-Identifier: GPL-2.0
"""Version descriptors: one TOML file per distribution kernel in versions/.

A version is one kernel series as a Debian release's users get it: the
release, the suites they take the kernel from (newest wins: a security
upload over the point release), and the pin, the newest linux-source-X.Y
those suites serve, with the suite it came from and its checksum.
"""
import os
import re
import stat
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from taintport import REPO, family, names
from taintport.errors import InputError

VERSIONS_DIR = REPO / "versions"
FIELDS = ("name", "distribution", "release", "suites", "archive", "component", "package",
          "suite", "version", "sha256", "size", "ships")
# security_archive: where the -security suites are served (Debian: another host);
# backports: suites a release's users may opt into, read by check --all-point-releases
# but never pinned from
# the optional [shipped] table: the distribution's own binary kernel of the tree
# (named once here: pins.py rewrites it, and the name is also a variant's)
SHIPPED = "shipped"
OPTIONAL = ("security_archive", "backports", SHIPPED)
BINARY_FIELDS = ("release", "signed_module", "memory", "timeout", "append", "make",
                 "packages")
PIN_FIELDS = ("package", "version", "sha256", "size")
# no .deb taintport fetches comes near this (linux-source is 120-170 MB); a
# pin above it is a typo or a hostile descriptor, refused before any download
MAX_SIZE = 1 << 34
# a descriptor is 1-3 KB: read no more than this of one
MAX_DESCRIPTOR = 1 << 20
SECURITY = "-security"
# uname -r of a Debian kernel: 6.1.0-50-amd64, 6.12.117+deb13-amd64, 7.3-amd64
RELEASE = re.compile(r"[0-9][A-Za-z0-9.+~_-]*")
# a module of the image package, below lib/modules/<release>/, named without
# its compression suffix: kernel/lib/ts_kmp.ko
MODULE_PATH = re.compile(r"kernel(/[A-Za-z0-9_][A-Za-z0-9_.+-]*)+/[a-z0-9_]+\.ko")
# a make variable set on the command line: CONFIG_CC_HAS_MIN_FUNCTION_ALIGNMENT=
MAKE_ASSIGNMENT = re.compile(r"[A-Z][A-Z0-9_]*=[A-Za-z0-9_.,=+-]*")
# kernel command-line words: name or name=value, no quotes
APPEND = re.compile(r"[A-Za-z0-9_.,=:/+-]+( [A-Za-z0-9_.,=:/+-]+)*")


@dataclass(frozen=True)
class Source:
    """One line of a private sources.list: where one suite's index is read."""
    archive: str
    suite: str
    component: str


@dataclass(frozen=True)
class Pin:
    """One .deb pinned by version and SHA256, as the suite's index publishes it."""
    package: str
    version: str
    sha256: str
    size: int

    @property
    def deb_name(self) -> str:
        # apt names a binary package's file after its architecture; Debian
        # kernels have no epoch, so the version needs no escaping
        return f"{self.package}_{self.version}_{self.arch}.deb"

    @property
    def arch(self) -> str:
        # the headers' common part and linux-source are the only "all" packages here
        return "all" if self.package.endswith("-common") or \
            self.package.startswith("linux-source-") else "amd64"


@dataclass(frozen=True)
class Binary:
    """The distribution's own build of the tree: the packages to boot it and
    to build modules for it, and what QEMU needs to boot a full distribution
    kernel under TCG (the `shipped` variant, tools/lib/taintport/kernel/binary.py)."""
    release: str                 # uname -r of the kernel
    signed_module: str           # a small module the distribution signed, for the signed loads
    memory: int                  # MiB for QEMU
    timeout: int                 # seconds for boot and test
    append: str                  # kernel command line before taintport's own words
    make: tuple[str, ...]        # make variables for the headers' kbuild (why: in the file)
    packages: tuple[Pin, ...]    # image (or binary + modules), headers, headers-common, kbuild

    @property
    def module_name(self) -> str:
        """The loaded module's name, as /sys/module shows it."""
        return self.signed_module.rsplit("/", 1)[-1].removesuffix(".ko")


@dataclass(frozen=True)
class Version:
    name: str
    distribution: str
    release: str                 # whose users run it: bookworm (a codename, or sid)
    suites: tuple[str, ...]      # where they take the kernel from; the newest is pinned
    archive: str
    component: str
    package: str
    suite: str                   # the suite the pinned upload came from
    version: str
    sha256: str
    size: int
    path: Path
    ships: tuple[str, ...] = ()  # the fixes of the family this tree carries as shipped
    shipped: Binary | None = None  # the distribution's binary of this tree, if pinned
    security_archive: str | None = None
    backports: tuple[str, ...] = ()

    @property
    def source_dir(self) -> str:
        """linux-source-6.1 ships usr/src/linux-source-6.1.tar.xz holding linux-source-6.1/."""
        return self.package

    @property
    def series(self) -> str:
        """The kernel series its package carries: "6.1" for linux-source-6.1."""
        return self.package.rsplit("-", 1)[-1]

    @property
    def tarball(self) -> str:
        return f"usr/src/{self.package}.tar.xz"

    @property
    def deb_name(self) -> str:
        return Pin(self.package, self.version, self.sha256, self.size).deb_name

    @property
    def upload(self) -> str:
        """Where the pinned tree comes from, as reports say it: bookworm-security 6.1.192-3."""
        return f"{self.suite} {self.version}"

    def source(self, suite: str | None = None) -> Source:
        """The sources.list line of one of the version's suites (the pin's by default)."""
        suite = suite or self.suite
        archive = self.security_archive if suite.endswith(SECURITY) else self.archive
        assert archive is not None  # load() requires it for a -security suite
        return Source(archive, suite, self.component)

    def sources(self) -> tuple[Source, ...]:
        """Every suite its users take the kernel from, as sources.list lines."""
        return tuple(self.source(s) for s in self.suites)


def read_toml(path: Path) -> dict[str, Any]:
    """A descriptor's table; unreadable, too big, non-UTF-8 or malformed is an InputError."""
    try:
        # O_NONBLOCK: a FIFO in versions/ is refused, not waited on
        with open(os.open(path, os.O_RDONLY | os.O_NONBLOCK), "rb") as handle:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                raise InputError(f"{path}: not a regular file; a version descriptor is a "
                                 "TOML file")
            raw = handle.read(MAX_DESCRIPTOR + 1)
    except OSError as err:
        raise InputError(f"{path}: cannot read version descriptor: {err.strerror}") from None
    if len(raw) > MAX_DESCRIPTOR:
        raise InputError(f"{path}: over {MAX_DESCRIPTOR} bytes; a version descriptor is a "
                         "few KB")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise InputError(f"{path}: not UTF-8 text (byte 0x{raw[err.start]:02x} at offset "
                         f"{err.start}); a TOML descriptor must be UTF-8") from None
    return parse(path, text)


def parse(path: Path, text: str) -> dict[str, Any]:
    """A descriptor's text as a table (path names it in errors)."""
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise InputError(f"{path}: cannot read version descriptor: {err}") from None
    except RecursionError:
        # tomllib recurses once per nested array or inline table
        raise InputError(f"{path}: cannot read version descriptor: nested too deeply") \
            from None


def load(path: Path | str) -> Version:
    path = Path(path)
    return from_table(path, read_toml(path))


def from_table(path: Path, data: dict[str, Any]) -> Version:
    """A descriptor's table as a Version, every field checked (path names it)."""
    missing = [f for f in FIELDS if f not in data]
    if missing:
        raise InputError(f"{path}: missing field(s) {', '.join(missing)}")
    unknown = sorted(set(data) - set(FIELDS) - set(OPTIONAL))
    if unknown:
        raise InputError(f"{path}: unknown field(s) {', '.join(unknown)}")
    check_fields(path, data)
    if data["name"] != path.stem:
        raise InputError(f"{path}: name '{data['name']}' does not match the file name")
    ships = data["ships"]
    if not isinstance(ships, list) or not all(isinstance(n, str) for n in ships):
        raise InputError(f"{path}: ships must be a list of fix names")
    data["ships"] = family.check_names(ships, f"{path}: ships")
    shipped = load_binary(path, data[SHIPPED]) if SHIPPED in data else None
    fields = {f: data[f] for f in FIELDS}
    fields["suites"] = tuple(data["suites"])
    return Version(path=path, shipped=shipped, security_archive=data.get("security_archive"),
                   backports=tuple(data.get("backports", ())), **fields)


def load_binary(path: Path, table: object) -> Binary:
    """The [shipped] table, each field checked: they become paths in the
    cache, make arguments and the guest's command line."""
    where = f"{path}: [shipped]"
    if not isinstance(table, dict):
        raise InputError(f"{where} must be a table")
    missing = [f for f in BINARY_FIELDS if f not in table]
    if missing:
        raise InputError(f"{where}: missing field(s) {', '.join(missing)}")
    unknown = sorted(set(table) - set(BINARY_FIELDS))
    if unknown:
        raise InputError(f"{where}: unknown field(s) {', '.join(unknown)}")
    names.check(RELEASE, table["release"], f"{where} release", "a kernel release")
    names.check(MODULE_PATH, table["signed_module"], f"{where} signed_module",
                "a module path below lib/modules/<release>/ (kernel/.../name.ko)")
    for key, low, high in (("memory", 128, 16384), ("timeout", 10, 3600)):
        value = table[key]
        if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
            raise InputError(f"{where} {key}: {value!r} is not a number from {low} to {high}")
    names.check(APPEND, table["append"], f"{where} append", "kernel command-line words")
    make = table["make"]
    if not isinstance(make, list):
        raise InputError(f"{where} make: must be a list of VARIABLE=value")
    for i, item in enumerate(make):
        names.check(MAKE_ASSIGNMENT, item, f"{where} make[{i}]", "a VARIABLE=value")
    packages = table["packages"]
    if not isinstance(packages, list) or not packages:
        raise InputError(f"{where} packages: must be a list of pins ([[shipped.packages]])")
    pins = []
    for i, pin in enumerate(packages):
        at = f"{where} packages[{i}]"
        if not isinstance(pin, dict) or sorted(pin) != sorted(PIN_FIELDS):
            raise InputError(f"{at}: must have exactly {', '.join(PIN_FIELDS)}")
        check_pin(at, pin)
        pins.append(Pin(**pin))
    if len({p.package for p in pins}) != len(pins):
        raise InputError(f"{where} packages: a package is pinned twice")
    return Binary(release=table["release"], signed_module=table["signed_module"],
                  memory=table["memory"], timeout=table["timeout"], append=table["append"],
                  make=tuple(make), packages=tuple(pins))


def check_size(value: object, where: str) -> int:
    """A .deb's size in bytes, as an index publishes it: 0 up to MAX_SIZE."""
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= MAX_SIZE:
        raise InputError(f"{where}: {value!r} is not a size in bytes (0 to {MAX_SIZE})")
    return value


def check_pin(where: str, data: dict[str, Any]) -> None:
    """package, version, sha256 and size: the source's pin or a binary's."""
    names.package(data["package"], f"{where} package")
    names.deb_version(data["version"], f"{where} version")
    names.check(names.SHA256, data["sha256"], f"{where} sha256", "64 lower-case hex digits")
    check_size(data["size"], f"{where} size")


def check_suites(where: str, value: object, may_be_empty: bool) -> list[str]:
    if not isinstance(value, list) or not (value or may_be_empty):
        raise InputError(f"{where}: must be a list of suite names")
    for i, suite in enumerate(value):
        names.check(names.SUITE, suite, f"{where}[{i}]", "a Debian suite name")
    if len(set(value)) != len(value):
        raise InputError(f"{where}: a suite is named twice")
    return value


def check_fields(path: Path, data: dict[str, Any]) -> None:
    """Each field against what Debian allows: every one of them ends up in a path
    (tree, .deb, private apt configuration) or on a sources.list line."""
    names.version_name(data["name"], f"{path}: name")
    names.check(names.DISTRIBUTION, data["distribution"], f"{path}: distribution",
                "a distribution name")
    names.check(names.SUITE, data["release"], f"{path}: release", "a Debian release name")
    suites = check_suites(f"{path}: suites", data["suites"], may_be_empty=False)
    backports = check_suites(f"{path}: backports", data.get("backports", []),
                             may_be_empty=True)
    names.check(names.SUITE, data["suite"], f"{path}: suite", "a Debian suite name")
    if data["suite"] not in suites:
        raise InputError(f"{path}: suite {data['suite']!r} (where the pin came from) is not "
                         f"one of suites ({', '.join(suites)})")
    if set(suites) & set(backports):
        raise InputError(f"{path}: a suite is in both suites and backports")
    for key in ("archive", "security_archive"):
        if key in data:
            names.check(names.ARCHIVE, data[key], f"{path}: {key}",
                        "an http(s): or file: archive URL")
    if any(s.endswith(SECURITY) for s in suites + backports) and "security_archive" not in data:
        raise InputError(f"{path}: a {SECURITY} suite is named but no security_archive "
                         "says where it is served")
    names.check(names.COMPONENT, data["component"], f"{path}: component",
                "an archive component")
    check_pin(f"{path}:", data)


def series_key(version: Version) -> tuple[tuple[int, ...], str]:
    """Oldest kernel first: linux-source-5.10 before 6.1 before 6.12."""
    numbers = version.series.split(".")
    return tuple(int(n) if n.isdigit() else 0 for n in numbers), version.name


def all_versions(directory: Path = VERSIONS_DIR) -> list[Version]:
    return sorted((load(p) for p in Path(directory).glob("*.toml")), key=series_key)


def select(names: list[str], directory: Path = VERSIONS_DIR) -> list[Version]:
    """The named versions, in the order of versions/; all of them when names is empty."""
    known = {v.name: v for v in all_versions(directory)}
    if not names:
        return list(known.values())
    unknown = [n for n in names if n not in known]
    if unknown:
        raise InputError(f"unknown version(s) {', '.join(unknown)}; "
                         f"valid: {', '.join(known) or '(none in ' + str(directory) + ')'}")
    return [known[n] for n in names]

