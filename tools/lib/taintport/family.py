# SPDX-License-Identifier: GPL-2.0
"""The family of fixes, as their records describe them.

A fix is one folder, semantic-patches/<fix>/, and its record fix.toml holds
what its patches and mails say about it (its upstream commits, author,
subject and message, its patch name), the taint it lets tracing accept, and
what the layer reads (its pieces, parameters and where it applies:
taintport.layer.fixes). This leaf reads the header part into FixInfo values
and knows the fix names, so that a stage before the layer (the tree's
version descriptors, whose `ships` names fixes) can check a name without
importing the layer.
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
TAINT = re.compile(r"^TAINT_[A-Z0-9_]+$")
RECORD = "fix.toml"
# the tables of a record the layer reads (taintport.layer.fixes)
LAYER_FIELDS = ("pieces", "applies", "params")


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
    """semantic-patches/<name>/fix.toml, checked field by field."""
    name: str
    order: int                       # upstream order among the fixes
    folder: Path                     # semantic-patches/<name>/: everything that is the fix's
    taint: str                       # the taint tracing accepts with the fix, "TAINT_TEST"
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
    """One fix's record, semantic-patches/<name>/fix.toml."""
    if not NAME.match(name):
        raise InputError(f"fix name {name!r}: lowercase letters, digits and '-' only")
    data = read(Path(folder) / name)
    path = Path(folder) / name / RECORD
    unknown = sorted(set(data) - {"order", "title", "bug", "taint", "upstream", "patch",
                                  *LAYER_FIELDS})
    if unknown:
        raise InputError(f"{path}: unknown field(s) {', '.join(unknown)}")
    if not isinstance(data.get("order"), int):
        raise InputError(f"{path}: order must be a number")
    taint = _string(data, "taint", str(path))
    if not TAINT.match(taint):
        raise InputError(f"{path}: taint must be a taint flag's name (TAINT_...), got {taint!r}")
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
    return FixInfo(name=name, order=data["order"], folder=Path(folder) / name, taint=taint,
                   title=_string(data, "title", str(path)), bug=_string(data, "bug", str(path)),
                   upstream=upstream, patch_name=patch_name,
                   folded=_string(patch, "folded", f"{path}: [patch]", required=False),
                   stable=_string(patch, "stable", f"{path}: [patch]", required=False).strip())


def read(fix_folder: Path) -> dict[str, Any]:
    """A fix's record as TOML data, or InputError naming it."""
    path = Path(fix_folder) / RECORD
    try:
        return tomllib.loads(path.read_text())
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as err:
        raise InputError(f"{path}: cannot read the fix's record: {err}") from None


def load_all(folder: Path = SEMANTIC_PATCHES) -> tuple[FixInfo, ...]:
    """Every fix of the family (each folder with a record), in upstream order."""
    found = [load(path.parent.name, folder) for path in sorted(Path(folder).glob(f"*/{RECORD}"))]
    found.sort(key=lambda info: info.order)
    orders = [info.order for info in found]
    if len(orders) != len(set(orders)):
        raise InputError(f"{folder}: two fixes have one order: "
                         + ", ".join(f"{i.name}={i.order}" for i in found))
    return tuple(found)


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
