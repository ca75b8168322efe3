"""Which kernel series upstream still maintains: where a stable mail can go.

A `[PATCH X.Y.y]` mail is written only for a series in LONGTERM that is
older than the fix's upstream release (a newer series has the fix already).
Any other tree (a vendor's 4.18, an ended 5.4) has no stable branch to send
to: the tool says so and writes the distribution patch only.

The table is kernel.org's "Longterm release kernels" (https://www.kernel.org/releases.html)
as it stood when this file was last checked (AS_OF): update it, and the date,
when that page changes. The short-lived stable series between longterm ones
are left out: each ends within weeks of the next mainline release, so no
fix a distribution still carries can be meant for one.
"""
from dataclasses import dataclass
from pathlib import Path

from taintport.errors import InputError
from taintport.layer.sources import kernel_version

AS_OF = "2026-12-04"
SOURCE = "https://www.kernel.org/releases.html"


@dataclass(frozen=True)
class Series:
    name: str          # "6.1"
    projected_eol: str  # as the page says it, "Dec, 2027"


LONGTERM = (
    Series("6.12", "Dec, 2026"),
    Series("6.6", "Dec, 2026"),
    Series("6.1", "Dec, 2027"),
    Series("5.15", "Dec, 2026"),
    Series("5.10", "Dec, 2026"),
)
MAINTAINED = {series.name: series for series in LONGTERM}


def numbers(series: str) -> tuple[int, ...]:
    """"6.1" -> (6, 1); "v6.3" -> (6, 3)."""
    return tuple(int(part) for part in series.lstrip("v").split("."))


def tree_series(tree: Path) -> str:
    """"6.1" from a tree's top Makefile (VERSION, PATCHLEVEL)."""
    version = kernel_version(tree)
    if version is None:
        raise InputError(f"{tree}/Makefile: no VERSION and PATCHLEVEL lines")
    return f"{version[0]}.{version[1]}"


def branch(series: str, release: str) -> str | None:
    """"6.1.y" when upstream maintains the series and it predates the fix's
    release (v6.3), else None: there is no stable branch to send it to."""
    if series not in MAINTAINED or numbers(series) >= numbers(release):
        return None
    return f"{series}.y"


def no_branch(series: str, release: str) -> str:
    """Why a tree of this series gets no stable mail, for the user."""
    if series in MAINTAINED:
        return f"{series}.y has the fix already (upstream since {release})"
    listed = ", ".join(s.name for s in LONGTERM)
    return (f"upstream maintains no {series}.y stable branch (longterm series on "
            f"{SOURCE} as of {AS_OF}: {listed})")
