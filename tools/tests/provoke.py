"""Test-only: a cell turned unexpected or broken on purpose, no kernel involved.

A CI pipeline must show a kernel regression (exit 1) apart from a broken run
(exit 2). Testing that with a real misbehaving kernel or a real breakage costs
builds and boots; this switch lets make check provoke each in seconds on
cells reused from the cache. It is read from the environment variable

    TAINTPORT_TEST_PROVOKE=STATUS:VERSION/VARIANT[,STATUS:VERSION/VARIANT...]

with STATUS `unexpected` or `error`. Never set it outside a test: every cell
it touches says so in its checks or errors, the cell store keeps the cell as
judged, and an unset variable changes nothing.
"""
import dataclasses
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass

from taintport import names
from taintport.errors import InputError
from taintport.judge.verdict import Check, Status
from taintport.results.cells import Cell
from taintport.tree import variants
from taintport.tree.variants import Variant

VARIABLE = "TAINTPORT_TEST_PROVOKE"
TARGET = re.compile(r"(unexpected|error):([^/]+)/([^/]+)")


@dataclass(frozen=True)
class Target:
    status: Status
    version: str
    variant: Variant


def from_environment(environ: Mapping[str, str] = os.environ) -> list[Target]:
    """The cells to provoke; InputError (exit 2) for a malformed value."""
    targets = []
    for item in filter(None, environ.get(VARIABLE, "").split(",")):
        match = TARGET.fullmatch(item.strip())
        if not match:
            raise InputError(f"{VARIABLE}={item!r}: expected STATUS:VERSION/VARIANT with "
                             "STATUS unexpected or error (a test-only switch)")
        status, version, variant = match.groups()
        names.version_name(version, f"{VARIABLE} version")
        targets.append(Target(Status(status), version,
                              variants.named(variant, f"{VARIABLE} variant")))
    return targets


def apply(targets: list[Target], cell: Cell) -> Cell:
    """The cell as published: a provoked copy when a target names it, else itself."""
    for target in targets:
        if (target.version, target.variant) != (cell.version, cell.variant):
            continue
        why = (f"test-only: {VARIABLE} made this cell {target.status.value} on purpose; "
               "no kernel behaved differently")
        if target.status is Status.ERROR:
            cell = dataclasses.replace(cell, status=target.status,
                                       errors=[*cell.errors, why])
        else:
            provoked = Check(name="provoked_unexpected", expected=True, observed=False,
                             diagnostics=(why,))
            cell = dataclasses.replace(cell, status=target.status,
                                       checks=[*cell.checks, provoked])
    return cell
