# SPDX-License-Identifier: GPL-2.0
"""The fetch stage's disk errors: a full disk named with the folder, what it
was doing and how much a tree takes."""
import errno
import os
import shutil
from pathlib import Path

from taintport.errors import RunError

# roughly what an extracted linux-source takes, for the out-of-space message
TREE_BYTES = 1_500_000_000


def disk_error(err: OSError, what: str, where: Path) -> RunError:
    """An OSError of the fetch stage as a message naming the folder and the cause."""
    if err.errno == errno.ENOSPC:
        return out_of_space(what, where)
    return RunError("fetch", f"{what} in {where} failed: {err.strerror or err}"
                    + (f" ({err.filename})" if err.filename else ""))


def nearly_full(where: Path) -> bool:
    """Whether the file system of where has less than a few MB left (the
    half-extracted tree is still there when this is asked)."""
    try:
        usage = os.statvfs(where)
    except OSError:
        return False
    return usage.f_bavail * usage.f_frsize < 8 << 20


def out_of_space(what: str, where: Path) -> RunError:
    try:
        free = f"{shutil.disk_usage(where).free / 1e6:.0f} MB free"
    except OSError:
        free = "free space unknown"
    return RunError("fetch", f"no space left on device while {what} in {where} ({free}; a "
                    f"kernel tree takes about {TREE_BYTES / 1e9:.1f} GB): free some space or "
                    "move the cache (--cache DIR or TAINTPORT_CACHE); nothing half-written "
                    "was kept")
