# SPDX-License-Identifier: GPL-2.0
"""Which kernel series upstream still maintains: where a stable mail can go.

A `[PATCH X.Y.y]` mail is written only for a series in LONGTERM that is
older than the fix's upstream release (a newer series has the fix already).
Any other tree (a vendor's 4.18, an ended 5.4) has no stable branch to send
to: the tool says so and writes the distribution patch only.

A mail must apply to the branch it names, so its hunk is the branch's own:
the layer's patch on the pinned Debian tree of that series as shipped (the
longterm code plus Debian's patches, which leave the fixes' files alone),
committed in quilt/<version>/ and kept current by `regen --check`. It is
mailed only when that hunk makes, on the user's tree, exactly the change the
layer made there: a tree with vendor lines where the fix goes (a vendor bit
or comment in the mask, another series' code under this Makefile) gets the
distribution patch and the reason, never a mail built from vendor text.

The table is kernel.org's "Longterm release kernels" (https://www.kernel.org/releases.html)
as it stood when this file was last checked (AS_OF): update it, and the date,
when that page changes. The short-lived stable series between longterm ones
are left out: each ends within weeks of the next mainline release, so no
fix a distribution still carries can be meant for one.
"""
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from taintport.errors import InputError
from taintport.layer.model import Fix
from taintport.layer.sources import kernel_version
from taintport.process import require, run
from taintport.tree import series as quilt_series
from taintport.tree import variants, versions
from taintport.tree.variants import Base
from taintport.tree.versions import Version

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


@dataclass(frozen=True)
class BranchCode:
    """One fix's hunk on a stable branch's own code: the layer's patch on the
    pinned tree of a version of that series, as shipped."""
    version: Version
    patch: Path

    @property
    def diff(self) -> str:
        """The patch's -p1 diff, without its header."""
        text = self.patch.read_text()
        start = text.find("\n--- a/")
        if start < 0:
            raise InputError(f"{self.patch}: no '--- a/' line: not a patch")
        return text[start + 1:]


def users(series: str, fix: Fix) -> list[Version]:
    """The versions of versions/ of this kernel series that ship without the fix."""
    return [v for v in versions.all_versions() if v.series == series and fix.name not in v.ships]


def branch_code(series: str, fix: Fix) -> BranchCode | None:
    """The fix's patch on the pinned tree of a version of this series that
    lacks it; None when versions/ pins no such tree."""
    group = variants.table().layer_on(Base.SHIPPED).layer_group
    for version in users(series, fix):
        try:
            found = quilt_series.load(version.name)
        except InputError:
            continue  # a version without a committed series has no hunk to offer
        for name in found.patches:
            if name.startswith(f"{group}/") and name.endswith(f"-{fix.patch_name}.patch"):
                return BranchCode(version, found.directory / name)
    return None


def same_change(before: Mapping[str, bytes], after: Mapping[str, bytes], diff: str) -> bool:
    """diff, pushed with --fuzz=0 onto the files as they were (before), makes
    them exactly as the layer left them (after), and touches no other file."""
    require("patch", "patch")
    with tempfile.TemporaryDirectory(prefix="taintport-branch-") as scratch_name:
        scratch = Path(scratch_name)
        for rel, data in before.items():
            (scratch / rel).parent.mkdir(parents=True, exist_ok=True)
            (scratch / rel).write_bytes(data)
        patch = scratch / ".branch.diff"
        patch.write_text(diff)
        proc = run(["patch", "-p1", "--fuzz=0", "--no-backup-if-mismatch", "-s", "-f",
                    "-i", str(patch)], stage="apply", cwd=scratch, check=False)
        patch.unlink()
        found = {str(p.relative_to(scratch)): p.read_bytes()
                 for p in scratch.rglob("*") if p.is_file()}
    return proc.returncode == 0 and found == {**before, **after}


def vendor_context(branch: str, code: BranchCode, files: list[str]) -> str:
    """Why a tree whose code where the fix goes is not the branch's gets no mail."""
    return (f"vendor context: {' and '.join(files)} here is not {branch}'s own code where "
            f"the fix goes ({code.patch.relative_to(quilt_series.QUILT_DIR.parent)}, the "
            f"hunk on {code.version.name}'s {code.version.version}, does not make this "
            "tree's change with --fuzz=0)")


def no_code(branch: str, series: str) -> str:
    return (f"versions/ pins no {series} tree without the fix, so taintport has no hunk of "
            f"{branch}'s own code to build the mail from")
