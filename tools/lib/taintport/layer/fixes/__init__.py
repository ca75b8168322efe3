"""The family of fixes taintport carries, one module per fix.

Each module here defines FIX, an engine.Fix: its pieces (recognisers, the
semantic patches in semantic-patches/ that carry them, re-layout and
scripted edits) and its patch header data, read from
semantic-patches/<name>.toml. Adding a fix means adding a module here, its
.toml and .cocci files and fixtures, its reverted patches under quilt/ and
its checks in test-matrix/expectations.toml: nothing in the engine names one
(README.md, "Carry another fix").
"""
import importlib
import pkgutil
import re
import tomllib

from taintport.errors import InputError
from taintport.layer.engine import SEMANTIC_PATCHES

NAME = re.compile(r"^[a-z][a-z0-9-]*$")
PATCH_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
HEADER_FIELDS = ("order", "title", "bug", "upstream", "patch")
UPSTREAM_FIELDS = ("commit", "release", "author", "subject", "body")


def info(name):
    """semantic-patches/<name>.toml, checked field by field."""
    path = SEMANTIC_PATCHES / f"{name}.toml"
    try:
        data = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError) as err:
        raise InputError(f"{path}: cannot read the fix's header data: {err}") from None
    for key in HEADER_FIELDS:
        if key not in data:
            raise InputError(f"{path}: field '{key}' missing")
    for key in UPSTREAM_FIELDS:
        if not isinstance(data["upstream"].get(key), str):
            raise InputError(f"{path}: [upstream] {key} must be a string")
    if not re.fullmatch(r"[0-9a-f]{40}", data["upstream"]["commit"]):
        raise InputError(f"{path}: [upstream] commit must be 40 hex digits")
    if not PATCH_NAME.match(data["patch"].get("name", "")):
        raise InputError(f"{path}: [patch] name must be letters, digits, '_', '.' and '-'")
    return data


def _discover():
    found = []
    for module in pkgutil.iter_modules(__path__):
        fix = importlib.import_module(f"{__name__}.{module.name}").FIX
        found.append(fix)
    found.sort(key=lambda f: f.order)
    return tuple(found)


FIXES = _discover()
NAMES = tuple(f.name for f in FIXES)
PIECES = tuple(spec for fix in FIXES for spec in fix.pieces)
SPEC = {spec.name: spec for spec in PIECES}
OWNER = {spec.name: fix.name for fix in FIXES for spec in fix.pieces}
BY_NAME = {fix.name: fix for fix in FIXES}


def check_names(names, where):
    """Fix names as a descriptor or the command line gives them."""
    unknown = [n for n in names if n not in NAMES]
    if unknown:
        raise InputError(f"{where}: unknown fix {', '.join(map(repr, unknown))}; "
                         f"valid: {', '.join(NAMES)}")
    return tuple(names)
