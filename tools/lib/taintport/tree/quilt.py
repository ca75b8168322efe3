# SPDX-License-Identifier: GPL-2.0
"""quilt, run with an environment of our own.

quilt reads QUILT_PC, QUILT_PATCHES, QUILT_SERIES, QUILT_PATCH_OPTS and
more from the environment, and ~/.quiltrc: either could move its state out
of the tree it works on or change how it patches. Every run here passes
--quiltrc=-, sets those it needs, and removes every other QUILT_* variable.
"""
import os
import subprocess
from pathlib import Path

from taintport.process import appending, orphan_proof, run

PC = ".pc"


def environment(patches: str) -> dict[str, str | None]:
    """quilt's environment: patches/ and .pc/ inside the folder it runs in."""
    env: dict[str, str | None] = {key: None for key in os.environ if key.startswith("QUILT_")}
    env.update(QUILT_PATCHES=patches, QUILT_PC=PC, QUILT_SERIES="series", LC_ALL="C")
    return env


def quilt(cwd: Path, args: list[str], patches: str, log: Path | None = None,
          check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run quilt in cwd; its output is returned and also appended to log."""
    proc: subprocess.CompletedProcess[str] = run(
        orphan_proof(["quilt", "--quiltrc=-", *args]), stage="apply", cwd=cwd, env=environment(patches),
        check=check)
    if log:
        with appending(log) as out:
            out.write(f"$ quilt {' '.join(args)}\n{proc.stdout}{proc.stderr}")
    return proc
