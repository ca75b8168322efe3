# SPDX-License-Identifier: GPL-2.0
"""Initramfs stage: dracut with our module from a private module folder,
then the cell's own files appended as a second cpio archive.

dracut reads its modules from $dracutbasedir/modules.d. We build such a
folder in the cache (links to the host's dracut files plus our 50taintport)
so the host's /usr/lib/dracut is only ever read, and we ignore the host's
dracut.conf so a local setting cannot change the guest.
"""
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path

from taintport import REPO
from taintport.atomic import replacing
from taintport.errors import RunError
from taintport.kernel.build import Artifacts
from taintport.process import require, run

HOST_DRACUT = Path("/usr/lib/dracut")
OUR_MODULES = (REPO / "test-matrix" / "dracut" / "50taintport",
               REPO / "test-matrix" / "dracut" / "51taintport-selftests")


def private_base(folder: Path | str) -> Path:
    """A dracutbasedir in folder: the host's dracut plus ours, made per call (cheap)."""
    if not (HOST_DRACUT / "modules.d").is_dir():
        raise RunError("initramfs", f"{HOST_DRACUT}/modules.d missing; install dracut-core")
    base = Path(folder) / "dracut-base"
    (base / "modules.d").mkdir(parents=True)
    for entry in HOST_DRACUT.iterdir():
        if entry.name != "modules.d":
            os.symlink(entry, base / entry.name)
    ours = {m.name for m in OUR_MODULES}
    for module in (HOST_DRACUT / "modules.d").iterdir():
        if module.name not in ours:
            os.symlink(module, base / "modules.d" / module.name)
    for module in OUR_MODULES:
        os.symlink(module, base / "modules.d" / module.name)
    return base


# Neither image holds a kernel's file (--no-kernel; the agent, the modules
# and the selftests come with each cell's archive), so each is one image for
# every kernel: --kver only reaches dracut's own build-parameter.txt in it.
ANY_KERNEL = "any"


def base(cache_root: Path, image: Path, log: Path) -> Path:
    """dracut's part of the agent's image, the same for every kernel: init and
    the hook (50taintport); the agent, built per release, comes per cell."""
    return shared("taintport", cache_root, image, log)


def selftests_base(cache_root: Path, image: Path, log: Path) -> Path:
    """dracut's part of the selftests' image, the same for every kernel: init,
    the tools the selftests call and their hook (51taintport-selftests); the
    tree's selftests and modules come per cell."""
    return shared("taintport-selftests", cache_root, image, log)


def shared(module: str, cache_root: Path, image: Path, log: Path) -> Path:
    """dracut with module into image, written whole beside it and renamed
    (atomic.replacing): another run reading the image it made earlier never
    reads half of this one, and one killed here leaves what the next sweeps."""
    with replacing(image, 0o600) as temp:
        dracut(module, cache_root, temp, log)
    return Path(image)


def dracut(module: str, cache_root: Path, image: Path, log: Path) -> Path:
    """dracut's image written into image, an empty file made for it (dracut
    copies its image onto it)."""
    require("dracut", "dracut-core")
    image = Path(image)
    with tempfile.TemporaryDirectory(dir=cache_root, prefix=".dracut-tmp-") as tmp:
        folder = Path(tmp) / "payload"  # empty: each cell appends its own files
        folder.mkdir()
        base_dir = private_base(tmp)
        (Path(tmp) / "no-conf.d").mkdir()
        run(["dracut", "--quiet", "--force", "--no-kernel", "--no-hostonly",
             "--no-hostonly-cmdline", "--no-compress", "--no-early-microcode",
             "--conf", "/dev/null", "--confdir", Path(tmp) / "no-conf.d",
             "--tmpdir", tmp, "--kver", ANY_KERNEL,
             "-m", f"base {module}", image],
            stage="initramfs", log=log,
            env={"dracutbasedir": str(base_dir), "TAINTPORT_PAYLOAD": str(folder)})
    # so a dracut that wrote nothing cannot pass for an image
    if not image.is_file() or image.stat().st_size == 0:
        raise RunError("initramfs", f"dracut did not write {image}")
    return image


def newc(entries: Sequence[tuple[str, int, bytes | None]]) -> bytes:
    """An uncompressed cpio archive in the kernel's "newc" format.

    entries: (path, mode, data) with data None for a folder. Owner root,
    mtime 0, so the same files give the same bytes. The format and the
    rule that archives may follow one another are the kernel's
    (Documentation/driver-api/early-userspace/buffer-format.rst).
    """
    out = bytearray()

    def pad() -> None:
        out.extend(b"\0" * (-len(out) % 4))

    def member(ino: int, name: str, mode: int, data: bytes | None) -> None:
        raw = name.encode() + b"\0"
        fields = (ino, mode, 0, 0, 2 if data is None else 1, 0, len(data or b""),
                  0, 0, 0, 0, len(raw), 0)
        out.extend(b"070701" + b"".join(b"%08X" % f for f in fields) + raw)
        pad()
        out.extend(data or b"")
        pad()

    for ino, (name, mode, data) in enumerate(entries, start=1):
        kind = 0o040000 if data is None else 0o100000
        member(ino, name, kind | mode, data)
    member(0, "TRAILER!!!", 0, b"")
    return bytes(out)


def cell_archive(artifacts: Artifacts, token: str) -> bytes:
    """The cell's own files, under /taintport/: the agent built for its
    kernel, every module file of the build, then the token."""
    # modules are not executable: nothing may strip their signature
    modules = [(f"taintport/{Path(m).name}", 0o644, Path(m).read_bytes())
               for m in artifacts.modules]
    return newc([("taintport", 0o755, None),
                 ("taintport/taintport-agent", 0o755, Path(artifacts.agent).read_bytes()),
                 *modules, ("taintport/token", 0o644, (token + "\n").encode())])


def build(artifacts: Artifacts, token: str, base_image: Path, image: Path) -> Path:
    """The dracut image followed by this cell's archive: the kernel unpacks
    one after the other into the same root, so dracut runs once per run, not
    once per cell or kernel (1.5-3.5 s each under load)."""
    return appended(base_image, cell_archive(artifacts, token), image)


def appended(base_image: Path, archive: bytes, image: Path) -> Path:
    """image: base_image, then archive (a newc cpio archive)."""
    dracut_part = Path(base_image).read_bytes()
    with open(image, "wb") as out:
        out.write(dracut_part)
        # the kernel looks for the next archive's header on a 4-byte boundary
        # and skips NULs before it
        out.write(b"\0" * (-len(dracut_part) % 4))
        out.write(archive)
    return Path(image)
