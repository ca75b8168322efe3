"""Version descriptors: one TOML file per distribution kernel in versions/."""
import tomllib
from dataclasses import dataclass
from pathlib import Path

from . import REPO, fixes, layer, names, series
from .errors import InputError

VERSIONS_DIR = REPO / "versions"
FIELDS = ("name", "distribution", "suite", "archive", "component", "package",
          "version", "sha256", "size", "ships")


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
    unknown = sorted(set(data) - set(FIELDS))
    if unknown:
        raise InputError(f"{path}: unknown field(s) {', '.join(unknown)}")
    check_fields(path, data)
    if data["name"] != path.stem:
        raise InputError(f"{path}: name '{data['name']}' does not match the file name")
    ships = data["ships"]
    if not isinstance(ships, list) or not all(isinstance(n, str) for n in ships):
        raise InputError(f"{path}: ships must be a list of fix names")
    data["ships"] = fixes.check_names(ships, f"{path}: ships")
    return Version(path=path, **{f: data[f] for f in FIELDS})


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
    names.package(data["package"], f"{path}: package")
    names.deb_version(data["version"], f"{path}: version")
    names.check(names.SHA256, data["sha256"], f"{path}: sha256",
                "64 lower-case hex digits")
    size = data["size"]
    if not isinstance(size, int) or isinstance(size, bool) or size < 0:
        raise InputError(f"{path}: size: {size!r} is not a size in bytes")


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


def check_ships(version, tree):
    """The descriptor's ships must be what the tree as shipped has: each fix
    found present (or missing) piece by piece, from upstream's copies of
    the files, whatever variant the tree is in now."""
    tree = Path(tree)

    def read(rel):
        return series.upstream_copy(tree, rel).decode(errors="replace") \
            if (tree / rel).is_file() else None
    for state in layer.inspect_fixes(read=read):
        shipped = state.fix.name in version.ships
        if shipped != (state.state == "present"):
            pieces = ", ".join(f"{p.name} {p.state} at {p.path}:{p.line}"
                               for p in state.pieces)
            raise InputError(
                f"{version.path}: ships says fix '{state.fix.name}' is "
                f"{'in' if shipped else 'not in'} {version.name}, but inspect finds it "
                f"{state.state} in the fetched tree ({pieces})")
