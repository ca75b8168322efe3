# SPDX-License-Identifier: GPL-2.0
"""The options several verbs share, each defined once and named the same way
everywhere, and the argument types that refuse a bad value before any work."""
import argparse
import os
import subprocess
from collections.abc import Callable
from pathlib import Path

from taintport import REPO, __version__
from taintport.errors import InputError
from taintport.kernel import build
from taintport.layer import fixes
from taintport.layer.model import LayerError, Param
from taintport.results import folder
from taintport.results.reports import kcidb
from taintport.run import matrix
from taintport.tree import series, variants, versions

Parser = argparse.ArgumentParser


def version_text() -> str:
    """The tool's version, and the commit when it runs from a clone (a CI log
    says exactly which taintport ran)."""
    if not (REPO / ".git").exists():
        return f"taintport {__version__}"
    try:
        commit = subprocess.run(["git", "-C", str(REPO), "describe", "--always", "--dirty",
                                 "--abbrev=12"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return f"taintport {__version__}"
    described = commit.stdout.strip()
    return f"taintport {__version__} (git {described})" if commit.returncode == 0 and \
        described else f"taintport {__version__}"


def at_least(low: int, what: str) -> Callable[[str], int]:
    """An argument type: a whole number of `what`, low or more."""
    def convert(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of {what}") \
                from None
        if value < low:
            raise argparse.ArgumentTypeError(f"{value} {what}: at least {low}")
        return value
    return convert


def split_names(values: list[str] | None) -> tuple[str, ...]:
    """Accept both `--versions a b` and `--versions a,b`."""
    return tuple(v for value in values or [] for v in value.split(",") if v)


def cache(p: Parser) -> None:
    p.add_argument("--cache", type=Path, default=None, metavar="DIR",
                   help="cache root (default ${XDG_CACHE_HOME:-~/.cache}/taintport, "
                        "or $TAINTPORT_CACHE)")


def quilt_dir(p: Parser, what: str = "folder of per-version quilt series",
              default: Path | None = series.QUILT_DIR) -> None:
    """default None: the verb tells a given folder from none (quilt/ then)."""
    p.add_argument("--quilt-dir", type=Path, default=default, metavar="DIR",
                   help=f"{what} (default: quilt/)")


def jobs(p: Parser) -> None:
    """Only on the verbs that build a kernel."""
    p.add_argument("--jobs", "-j", type=at_least(1, "jobs"), default=build.default_jobs(),
                   metavar="N",
                   help="make -j for kernel builds (default: cores + 1)")


def versions_dir(p: Parser) -> None:
    p.add_argument("--versions-dir", type=Path, default=versions.VERSIONS_DIR, metavar="DIR",
                   help="the version descriptors (default: versions/)")


def version_names(p: Parser, what: str = "names from versions/ (default: all)") -> None:
    p.add_argument("--versions", nargs="+", metavar="NAME", help=what)


def out(p: Parser, what: str) -> None:
    p.add_argument("--out", type=Path, metavar="DIR", help=what)


def timeout(p: Parser) -> None:
    p.add_argument("--timeout", type=at_least(1, "seconds"), default=matrix.DEFAULT_TIMEOUT,
                   metavar="SECONDS",
                   help="seconds a guest may run before it is killed (default %(default)s)")


def parallel(p: Parser) -> None:
    p.add_argument("--parallel", type=at_least(1, "kernels"), default=2, metavar="N",
                   help="kernels worked on at once (default %(default)s): one builds while "
                        "another fetches or boots")


def artifacts_url(p: Parser) -> None:
    p.add_argument("--artifacts-url", metavar="BASE",
                   help="where the results folder is published: the KCIDB view's URLs "
                        f"become BASE/<path> (default ${kcidb.ARTIFACTS_ENV}, which the "
                        "generated CI pipelines set; else file:// URLs of the folder)")


def checked_url(given: str | None) -> str | None:
    """--artifacts-url (or its variable) refused now, before a folder is made."""
    kcidb.artifacts(Path.cwd(), given)
    return given


def one_cell(p: Parser, choices: list[str]) -> None:
    p.add_argument("--version", required=True, metavar="NAME", help="a name from versions/")
    p.add_argument("--variant", required=True, choices=choices)


def booted() -> list[str]:
    return [v.name for v in variants.table().booted()]


def fix_params(p: Parser) -> None:
    """One option per parameter a fix declares (--letter for the unsigned fix),
    checked when parsed: the fix's own words, not spatch's -D."""
    for fix in fixes.FIXES:
        for param in fix.params:
            def check(text: str, param: Param = param) -> str:
                try:
                    return param.check(text)
                except LayerError as err:
                    raise argparse.ArgumentTypeError(err.expected) from None
            p.add_argument(f"--{param.name}", dest=f"param_{param.name}", type=check,
                           metavar=param.name.upper(), help=f"{param.help} ({fix.name} fix)")


def given_params(args: argparse.Namespace) -> dict[str, str]:
    return {param.name: getattr(args, f"param_{param.name}")
            for fix in fixes.FIXES for param in fix.params
            if getattr(args, f"param_{param.name}") is not None}


def new_folder(path: Path | None, option: str = "--out") -> Path | None:
    """A results folder a run will fill: refused now when it holds results,
    before anything is fetched or built."""
    if path is not None:
        if path.exists() and not path.is_dir():
            raise InputError(f"{option} {path}: not a folder")
        folder.refuse_used(path)
    return path


def results_folder(text: str | Path) -> Path:
    """A folder `taintport matrix` wrote (its matrix.json), said plainly when not."""
    path = Path(text)
    if not path.is_dir():
        raise InputError(f"{path}: no such results folder")
    if not os.path.lexists(path / "matrix.json"):  # what is there is read, and judged, later
        raise InputError(f"{path}: not a results folder (no matrix.json: a folder "
                         "'taintport matrix' or 'taintport report merge' wrote)")
    return path


def unused(args: argparse.Namespace, verb: str, names: dict[str, str]) -> None:
    """Refuse an option the chosen form of a verb would ignore: {dest: why}
    (given: neither unset nor, for --versions-dir, its default)."""
    for dest, why in names.items():
        value = getattr(args, dest, None)
        if value not in (None, False, [], ()) and \
                not (dest == "versions_dir" and value == versions.VERSIONS_DIR):
            raise InputError(f"{verb}: {why}")
