# SPDX-License-Identifier: GPL-2.0
"""The cell store: what decides a cell (its key), and finished cells kept for reruns.

A finished cell is stored under <cache>/cells/<key>, the key hashed from
everything that decides its result (package checksum, the variant's series,
fragments, the test matrix, tool versions, the timeout): a rerun with nothing
changed reuses it instead of building and booting again.
"""
import hashlib
import json
import platform
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from taintport.cache import Cache
from taintport.errors import TaintportError
from taintport.judge import verdict
from taintport.kernel import boot
from taintport.results import schema
from taintport.results.folder import Folder, read_cell
from taintport.results.cells import Cell, Inputs
from taintport.run import sources
from taintport.tree import series
from taintport.tree.variants import Variant
from taintport.tree.versions import Version

CELL_FILES = ("cell.json", "console.log", "build.log", "ktap.txt")


def tool_versions() -> dict[str, str]:
    def first_line(cmd: list[str]) -> str:
        try:
            out = subprocess.run(cmd, capture_output=True, text=True, timeout=20)
            return (out.stdout or out.stderr).strip().splitlines()[0]
        except (OSError, IndexError, subprocess.TimeoutExpired):
            return "missing"
    return {"gcc": first_line(["gcc", "--version"]),
            "qemu": first_line([boot.QEMU, "--version"]),
            "dracut": first_line(["dracut", "--version"]),
            "quilt": first_line(["quilt", "--version"]),
            "spatch": first_line(["spatch", "--version"]),
            "python": platform.python_version()}


def cell_key(variant: Variant, cell_inputs: Inputs, tools: dict[str, str],
             timeout: int) -> str:
    # The variant too: two variants can have the same inputs (a series whose
    # backported/ patches were dropped builds what reverted builds) and must
    # still never take each other's stored cell, judged by other rules.
    text = json.dumps({"variant": variant.name, "inputs": schema.keyed_inputs(cell_inputs),
                       "tools": tools, "timeout": timeout}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass(frozen=True)
class Todo:
    """A cell to build and boot, with what decides it."""
    variant: Variant
    inputs: Inputs
    key: str


@dataclass(frozen=True)
class Done:
    """A cell this run need not build: from the --resume folder, or stored."""
    variant: Variant
    resumed: Cell | None = None
    stored: Path | None = None


class Stored:
    """Sound cells (never errors) of earlier runs, by key, in <cache>/cells."""

    def __init__(self, cache: Cache, out: Path) -> None:
        self.root = cache.root / "cells"
        self.out = Path(out)

    def find(self, key: str) -> Path | None:
        """A stored cell's folder; a damaged one is run again, never trusted."""
        folder = self.root / key
        try:
            read_cell(folder / "cell.json")
        except TaintportError:
            return None
        return folder

    def keep(self, key: str, cell: Cell) -> None:
        if cell.status is verdict.Status.ERROR:
            return
        src = self.out / cell.version / cell.variant.name
        folder = self.root / key
        tmp = folder.with_name(key + ".tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        for name in CELL_FILES:
            if (src / name).exists():
                shutil.copy2(src / name, tmp / name)
        shutil.rmtree(folder, ignore_errors=True)
        tmp.rename(folder)

    def take(self, folder: Path, version: str, variant: Variant) -> Cell:
        """The stored cell's files copied into this run's folder, and its cell."""
        dest = self.out / version / variant.name
        dest.mkdir(parents=True, exist_ok=True)
        for name in CELL_FILES:
            if (folder / name).exists():
                shutil.copy2(folder / name, dest / name)
        cell = read_cell(dest / "cell.json")
        cell.reused = True
        return cell


def plan(version: Version, quilt_series: series.Series, variants: list[Variant],
         tools: dict[str, str], timeout: int, folder: Folder,
         stored: Stored | None) -> tuple[list[Done], list[Todo]]:
    """(cells already done, cells to run) for one version. Done: a finished
    cell of the --resume folder, or a stored one (when stored is given) whose
    inputs hash the same."""
    done, todo = [], []
    for variant in variants:
        cell_inputs = sources.of(variant).inputs(version, quilt_series, variant)
        key = cell_key(variant, cell_inputs, tools, timeout)
        earlier = folder.finished_earlier(version.name, variant, key)
        found = stored.find(key) if stored and not earlier else None
        if earlier or found:
            done.append(Done(variant, resumed=earlier, stored=found))
        else:
            todo.append(Todo(variant, cell_inputs, key))
    return done, todo
