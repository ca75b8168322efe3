# SPDX-License-Identifier: GPL-2.0
"""Test harness: a cell turned unexpected or broken on purpose, no kernel involved.

A CI pipeline must show a kernel regression (exit 1) apart from a broken run
(exit 2). Testing that with a real misbehaving kernel or a real breakage costs
builds and boots; this harness lets the tests provoke each in seconds on
cells reused from the cache. The library knows nothing of it: install()
wraps the results folder's publish, and a test that runs taintport in
another process (a pipeline job) puts `wrapper()` where tools/taintport was
in its own copy of the project. It reads the environment variable

    TAINTPORT_TEST_PROVOKE=STATUS:VERSION/VARIANT[,STATUS:VERSION/VARIANT...]

with STATUS `unexpected` or `error`. Every cell it touches says so in its
checks or errors, the cell store keeps the cell as judged, and an unset
variable changes nothing. Its second switch, TAINTPORT_TEST_FAULT=NAME, boots
every guest a matrix run makes with taintport.fault=NAME (the agent breaks on
purpose, as `boot --append` asks one cell to): faulty_chain().
"""
import dataclasses
import os
import re
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from taintport import names
from taintport.errors import InputError
from taintport.judge.verdict import Check, Status
from taintport.results.cells import FAULTS, Cell
from taintport.results.folder import Folder
from taintport.run import stages
from taintport.tree import variants
from taintport.tree.variants import Variant

VARIABLE = "TAINTPORT_TEST_PROVOKE"
FAULT_VARIABLE = "TAINTPORT_TEST_FAULT"
TARGET = re.compile(r"(unexpected|error):([^/]+)/([^/]+)")
CHECK = "provoked_unexpected"


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
        if why in cell.errors or any(c.name == CHECK for c in cell.checks):
            continue  # published again (a peer judged it): provoked once is enough
        if target.status is Status.ERROR:
            cell = dataclasses.replace(cell, status=target.status,
                                       errors=[*cell.errors, why])
        else:
            provoked = Check(name=CHECK, expected=True, observed=False, diagnostics=(why,))
            cell = dataclasses.replace(cell, status=target.status,
                                       checks=[*cell.checks, provoked])
    return cell


def faulty_chain(fault: str) -> Callable[..., None]:
    """A stages.Chain.__init__ whose guests all boot with taintport.fault=fault."""
    if fault not in FAULTS:
        raise InputError(f"{FAULT_VARIABLE}={fault!r}: not a fault the agent knows "
                         f"(one of {', '.join(FAULTS)})")
    chain = stages.Chain.__init__

    def with_fault(self: stages.Chain, *args: Any, **kwargs: Any) -> None:
        chain(self, *args, **{**kwargs, "append": f"taintport.fault={fault}"})
    return with_fault


def install(environ: Mapping[str, str] = os.environ) -> None:
    """Every cell a results folder publishes from now on goes through apply()
    (the caller keeps and stores its own, unprovoked), and with a fault named
    every chain boots its guests with it; read now, before any work."""
    targets = from_environment(environ)
    if environ.get(FAULT_VARIABLE):
        stages.Chain.__init__ = faulty_chain(environ[FAULT_VARIABLE])  # type: ignore
    if not targets:
        return
    publish = Folder.publish

    def provoking(self: Folder, cell: Cell) -> None:
        publish(self, apply(targets, cell))
    Folder.publish = provoking  # type: ignore[method-assign]


def main() -> int:
    """tools/taintport with the harness installed (what wrapper() runs)."""
    from taintport.cli import main as taintport, refused
    try:
        install()
    except InputError as err:
        return refused(err)
    return taintport()


def wrapper() -> str:
    """A tools/taintport for a copy of the project: the same command with the harness."""
    return ("#!/usr/bin/python3\n"
            "# tools/tests/provoke.py: the test harness put this here in a test's copy\n"
            "import os\nimport sys\n\n"
            "HERE = os.path.dirname(os.path.realpath(__file__))\n"
            'sys.path[:0] = [os.path.join(HERE, "lib"), os.path.join(HERE, "tests")]\n\n'
            "import provoke  # noqa: E402\n\n"
            "sys.exit(provoke.main())\n")


if __name__ == "__main__":
    sys.exit(main())
