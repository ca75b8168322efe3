"""The family of fixes, as their header files describe them.

semantic-patches/<fix>.toml holds what a fix's patches and mails say about it:
its upstream commits, author, subject and message, its patch name and
`Forwarded:`. This leaf reads them into FixInfo values and knows the fix
names, so that a stage before the layer (the tree's version descriptors,
whose `ships` names fixes) can check a name without importing the layer.
"""
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from taintport import REPO
from taintport.errors import InputError

SEMANTIC_PATCHES = REPO / "semantic-patches"
NAME = re.compile(r"^[a-z][a-z0-9-]*$")
PATCH_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
COMMIT = re.compile(r"^[0-9a-f]{40}$")


@dataclass(frozen=True)
class Upstream:
    """The upstream change a fix carries ([upstream] of its header file)."""
    commit: str                      # 40 hex digits
    release: str                     # the first release with it, "v6.3"
    author: str
    subject: str
    body: str                        # the whole message after the subject, trailers included
    date: str = ""
    also: tuple[str, ...] = ()       # further commits folded into the same patch


@dataclass(frozen=True)
class FixInfo:
    """semantic-patches/<name>.toml, checked field by field."""
    name: str
    order: int                       # upstream order among the fixes
    title: str
    bug: str                         # what a kernel without the fix does
    upstream: Upstream
    patch_name: str                  # [patch] name: the patch file's name
    folded: str = ""                 # [patch] folded: what a backport note says of `also`
    #                                  ({param}: a fix's parameter, "{letter}")
    stable: str = ""                 # [patch] stable: why a stable tree should take it


def _string(data: dict[str, Any], key: str, where: str, required: bool = True) -> str:
    value = data.get(key, "" if not required else None)
    if not isinstance(value, str):
        raise InputError(f"{where}: {key} must be a string")
    return value


def _strings(data: dict[str, Any], key: str, where: str) -> tuple[str, ...]:
    value = data.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise InputError(f"{where}: {key} must be a list of strings")
    return tuple(value)


def _table(data: dict[str, Any], key: str, path: Path, known: Iterable[str]) -> dict[str, Any]:
    table = data.get(key)
    if not isinstance(table, dict):
        raise InputError(f"{path}: [{key}] missing")
    unknown = sorted(set(table) - set(known))
    if unknown:
        raise InputError(f"{path}: [{key}] has unknown field(s) {', '.join(unknown)}")
    return table


def load(name: str, folder: Path = SEMANTIC_PATCHES) -> FixInfo:
    """One fix's header file."""
    if not NAME.match(name):
        raise InputError(f"fix name {name!r}: lowercase letters, digits and '-' only")
    path = Path(folder) / f"{name}.toml"
    try:
        data = tomllib.loads(path.read_text())
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as err:
        raise InputError(f"{path}: cannot read the fix's header data: {err}") from None
    unknown = sorted(set(data) - {"order", "title", "bug", "upstream", "patch"})
    if unknown:
        raise InputError(f"{path}: unknown field(s) {', '.join(unknown)}")
    if not isinstance(data.get("order"), int):
        raise InputError(f"{path}: order must be a number")
    up = _table(data, "upstream", path, ("commit", "release", "author", "subject", "body",
                                         "date", "also"))
    where = f"{path}: [upstream]"
    upstream = Upstream(
        commit=_string(up, "commit", where), release=_string(up, "release", where),
        author=_string(up, "author", where), subject=_string(up, "subject", where),
        body=_string(up, "body", where), date=_string(up, "date", where, required=False),
        also=_strings(up, "also", where))
    for commit in (upstream.commit, *upstream.also):
        if not COMMIT.match(commit):
            raise InputError(f"{where}: commit {commit!r} must be 40 hex digits")
    patch = _table(data, "patch", path, ("name", "folded", "stable"))
    patch_name = _string(patch, "name", f"{path}: [patch]")
    if not PATCH_NAME.match(patch_name):
        raise InputError(f"{path}: [patch] name must be letters, digits, '_', '.' and '-'")
    return FixInfo(name=name, order=data["order"],
                   title=_string(data, "title", str(path)), bug=_string(data, "bug", str(path)),
                   upstream=upstream, patch_name=patch_name,
                   folded=_string(patch, "folded", f"{path}: [patch]", required=False),
                   stable=_string(patch, "stable", f"{path}: [patch]", required=False).strip())


def load_all(folder: Path = SEMANTIC_PATCHES) -> tuple[FixInfo, ...]:
    """Every fix of the family, in upstream order."""
    found = [load(path.stem, folder) for path in sorted(Path(folder).glob("*.toml"))]
    return tuple(sorted(found, key=lambda info: info.order))


FAMILY = load_all()
NAMES = tuple(info.name for info in FAMILY)
BY_NAME = {info.name: info for info in FAMILY}


def check_names(names: Iterable[str], where: str) -> tuple[str, ...]:
    """Fix names as a descriptor or the command line gives them."""
    names = tuple(names)
    unknown = [n for n in names if n not in NAMES]
    if unknown:
        raise InputError(f"{where}: unknown fix {', '.join(map(repr, unknown))}; "
                         f"valid: {', '.join(NAMES)}")
    return names
