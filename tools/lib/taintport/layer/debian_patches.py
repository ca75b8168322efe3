# SPDX-License-Identifier: GPL-2.0
"""Where a carried fix goes in a Debian kernel source package's debian/patches.

The Debian kernel team keeps the upstream fixes it carries as
bugfix/all/<subject>.patch, unnumbered, and lists them in
debian/patches/series under "# Miscellaneous bug fixes" (linux 6.1.176-1 and
5.10.223-1; docs/patch-headers.md). `apply --export` into a debian/patches
folder does the same; into any other folder it writes taintport/NNNN-*.patch
appended to the series, as a quilt series of one's own expects.
"""
from pathlib import Path

from taintport.layer.model import FixPatch

MISC = "# Miscellaneous bug fixes"
BUGFIX = "bugfix/all/"


def is_debian_patches(folder: Path) -> bool:
    """A source package's patch folder: <package>/debian/patches."""
    return Path(folder).resolve().parts[-2:] == ("debian", "patches")


def name(fix_patch: FixPatch) -> str:
    return f"{BUGFIX}{fix_patch.fix.patch_name}.patch"


def entry(line: str) -> str:
    """The patch a series line names ("" for a comment or a blank line)."""
    return line.split("#", 1)[0].split()[0] if line.split("#", 1)[0].strip() else ""


def listed(series: str, names: list[str]) -> str:
    """The series text with names added where the team lists upstream fixes:
    at the end of the "# Miscellaneous bug fixes" block, else after the last
    bugfix/all/ line, else at the end. A name already listed is not added again;
    no line is dropped."""
    lines = series.splitlines()
    new = [n for n in names if n not in {entry(line) for line in lines}]
    if not new:
        return series
    at = len(lines)
    if MISC in (line.strip() for line in lines):
        at = [line.strip() for line in lines].index(MISC) + 1
        while at < len(lines) and lines[at].strip() and not lines[at].startswith("#"):
            at += 1
    else:
        fixes = [i for i, line in enumerate(lines) if entry(line).startswith(BUGFIX)]
        at = fixes[-1] + 1 if fixes else len(lines)
    return "\n".join(lines[:at] + new + lines[at:]) + "\n"
