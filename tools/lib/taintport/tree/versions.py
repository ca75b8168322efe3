"""Version descriptors: one TOML file per distribution kernel in versions/."""
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

from taintport import REPO, family, names
from taintport.errors import InputError

VERSIONS_DIR = REPO / "versions"
FIELDS = ("name", "distribution", "suite", "archive", "component", "package",
          "version", "sha256", "size", "ships")
# the optional [shipped] table: the distribution's own binary kernel of the tree
BINARY_FIELDS = ("release", "signed_module", "memory", "timeout", "append", "make",
                 "packages")
PIN_FIELDS = ("package", "version", "sha256", "size")
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
    suite: str
    archive: str
    component: str
    package: str
    version: str
    sha256: str
    size: int
    path: Path
    ships: tuple[str, ...] = ()  # the fixes of the family this tree carries as shipped
    shipped: Binary | None = None  # the distribution's binary of this tree, if pinned

    @property
    def source_dir(self):
        """linux-source-6.1 ships usr/src/linux-source-6.1.tar.xz holding linux-source-6.1/."""
        return self.package

    @property
    def tarball(self):
        return f"usr/src/{self.package}.tar.xz"

    @property
    def deb_name(self):
        # apt writes the epoch-less version with ':' escaped; Debian kernels have no epoch
        return f"{self.package}_{self.version}_all.deb"


def load(path):
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError) as err:
        raise InputError(f"{path}: cannot read version descriptor: {err}") from None
    missing = [f for f in FIELDS if f not in data]
    if missing:
        raise InputError(f"{path}: missing field(s) {', '.join(missing)}")
    unknown = sorted(set(data) - set(FIELDS) - {"shipped"})
    if unknown:
        raise InputError(f"{path}: unknown field(s) {', '.join(unknown)}")
    check_fields(path, data)
    if data["name"] != path.stem:
        raise InputError(f"{path}: name '{data['name']}' does not match the file name")
    ships = data["ships"]
    if not isinstance(ships, list) or not all(isinstance(n, str) for n in ships):
        raise InputError(f"{path}: ships must be a list of fix names")
    data["ships"] = family.check_names(ships, f"{path}: ships")
    shipped = load_binary(path, data["shipped"]) if "shipped" in data else None
    return Version(path=path, shipped=shipped, **{f: data[f] for f in FIELDS})


def load_binary(path, table):
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


def check_pin(where, data):
    """package, version, sha256 and size: the source's pin or a binary's."""
    names.package(data["package"], f"{where} package")
    names.deb_version(data["version"], f"{where} version")
    names.check(names.SHA256, data["sha256"], f"{where} sha256", "64 lower-case hex digits")
    size = data["size"]
    if not isinstance(size, int) or isinstance(size, bool) or size < 0:
        raise InputError(f"{where} size: {size!r} is not a size in bytes")


def check_fields(path, data):
    """Each field against what Debian allows: every one of them ends up in a path
    (tree, .deb, private apt configuration) or on a sources.list line."""
    names.version_name(data["name"], f"{path}: name")
    names.check(names.DISTRIBUTION, data["distribution"], f"{path}: distribution",
                "a distribution name")
    names.check(names.SUITE, data["suite"], f"{path}: suite", "a Debian suite name")
    names.check(names.ARCHIVE, data["archive"], f"{path}: archive",
                "an http(s): or file: archive URL")
    names.check(names.COMPONENT, data["component"], f"{path}: component",
                "an archive component")
    check_pin(f"{path}:", data)


def series_key(version):
    """Oldest kernel first: linux-source-5.10 before 6.1 before 6.12."""
    numbers = version.package.rsplit("-", 1)[-1].split(".")
    return tuple(int(n) if n.isdigit() else 0 for n in numbers), version.name


def all_versions(directory=VERSIONS_DIR):
    return sorted((load(p) for p in Path(directory).glob("*.toml")), key=series_key)


def select(names, directory=VERSIONS_DIR):
    """The named versions, in the order of versions/; all of them when names is empty."""
    known = {v.name: v for v in all_versions(directory)}
    if not names:
        return list(known.values())
    unknown = [n for n in names if n not in known]
    if unknown:
        raise InputError(f"unknown version(s) {', '.join(unknown)}; "
                         f"valid: {', '.join(known) or '(none in ' + str(directory) + ')'}")
    return [known[n] for n in names]

