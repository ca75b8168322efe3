"""The family of fixes taintport carries, one module per fix.

Each module here defines FIX, a model.Fix: its pieces (the semantic patches
in semantic-patches/ that judge and carry them, re-layouts and scripted
edits), its parameters, and its header data (semantic-patches/<name>.toml,
read by taintport.family). Adding a fix means adding a module here, its
.toml and .cocci files and fixtures, its reverted patches under quilt/ and
its checks in test-matrix/expectations.toml: the engine names none, it is
handed FIXES (docs/new-fix.md).
"""
import importlib
import pkgutil

from taintport import family
from taintport.errors import InputError
from taintport.layer.model import Fix, PieceSpec


def _discover() -> tuple[Fix, ...]:
    found = [importlib.import_module(f"{__name__}.{module.name}").FIX
             for module in pkgutil.iter_modules(__path__)]
    found.sort(key=lambda f: f.order)
    names = tuple(f.name for f in found)
    if names != family.NAMES:
        raise InputError(f"{__path__[0]}: the fix modules {', '.join(names)} are not the "
                         f"family of semantic-patches/*.toml ({', '.join(family.NAMES)})")
    params = [p.name for f in found for p in f.params]
    if len(params) != len(set(params)):
        raise InputError(f"{__path__[0]}: two fixes declare one parameter: {', '.join(params)}")
    return tuple(found)


FIXES = _discover()
NAMES = family.NAMES
BY_NAME = {fix.name: fix for fix in FIXES}
PIECES: tuple[PieceSpec, ...] = tuple(spec for fix in FIXES for spec in fix.pieces)
SPEC = {spec.name: spec for spec in PIECES}
