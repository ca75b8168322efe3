"""Initramfs stage: dracut with our module from a private module folder.

dracut reads its modules from $dracutbasedir/modules.d. We build such a
folder in the cache (links to the host's dracut files plus our 50taintport)
so the host's /usr/lib/dracut is only ever read, and we ignore the host's
dracut.conf so a local setting cannot change the guest.
"""
import os
import shutil
import tempfile
from pathlib import Path

from . import REPO
from .errors import RunError
from .process import require, run

HOST_DRACUT = Path("/usr/lib/dracut")
OUR_MODULE = REPO / "test-matrix" / "dracut" / "50taintport"


def private_base(folder):
    """A dracutbasedir in folder: the host's dracut plus 50taintport, made per call (cheap)."""
    if not (HOST_DRACUT / "modules.d").is_dir():
        raise RunError("initramfs", f"{HOST_DRACUT}/modules.d missing; install dracut-core")
    base = Path(folder) / "dracut-base"
    (base / "modules.d").mkdir(parents=True)
    for entry in HOST_DRACUT.iterdir():
        if entry.name != "modules.d":
            os.symlink(entry, base / entry.name)
    for module in (HOST_DRACUT / "modules.d").iterdir():
        if module.name != OUR_MODULE.name:
            os.symlink(module, base / "modules.d" / module.name)
    os.symlink(OUR_MODULE, base / "modules.d" / OUR_MODULE.name)
    return base


def payload(artifacts, token):
    """The four files the dracut module installs under /taintport/."""
    folder = artifacts.directory / "payload"
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir()
    shutil.copy2(artifacts.agent, folder / "taintport-agent")
    shutil.copy2(artifacts.unsigned, folder / "utt.ko")
    shutil.copy2(artifacts.signed, folder / "utt-signed.ko")
    (folder / "token").write_text(token + "\n")
    return folder


def build(artifacts, token, cache_root, image, log):
    require("dracut", "dracut-core")
    folder = payload(artifacts, token)
    with tempfile.TemporaryDirectory(dir=cache_root, prefix=".dracut-tmp-") as tmp:
        base = private_base(tmp)
        (Path(tmp) / "no-conf.d").mkdir()
        run(["dracut", "--quiet", "--force", "--no-kernel", "--no-hostonly",
             "--no-hostonly-cmdline", "--no-compress", "--no-early-microcode",
             "--conf", "/dev/null", "--confdir", Path(tmp) / "no-conf.d",
             "--tmpdir", tmp, "--kver", artifacts.release,
             "-m", "base taintport", image],
            stage="initramfs", log=log,
            env={"dracutbasedir": str(base), "TAINTPORT_PAYLOAD": str(folder)})
    if not Path(image).exists():
        raise RunError("initramfs", f"dracut did not write {image}")
    return Path(image)
