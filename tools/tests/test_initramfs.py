# SPDX-License-Identifier: GPL-2.0
"""The per-cell archive appended to the dracut image every kernel shares."""
import shutil
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest

from taintport.kernel import build, initramfs


def cell(tmp_path):
    for name in ("tlp", "utt"):
        (tmp_path / f"{name}.ko").write_bytes(b"\x7fELF unsigned " + name.encode())
        (tmp_path / f"{name}-signed.ko").write_bytes(
            b"\x7fELF signed " + name.encode() + b"~Module signature appended~\n")
    (tmp_path / "taintport-agent").write_bytes(b"\x7fELF static agent")
    return SimpleNamespace(modules=build.module_files(tmp_path),
                           agent=tmp_path / "taintport-agent")


def test_cell_archive_is_newc_that_cpio_reads(tmp_path):
    """GNU cpio, an independent reader, lists and unpacks what we write."""
    archive = initramfs.cell_archive(cell(tmp_path), "0123abcd")
    assert len(archive) % 4 == 0
    listed = subprocess.run(["cpio", "-it", "--quiet"], input=archive, capture_output=True,
                            check=True).stdout.decode().split()
    assert listed == ["taintport", "taintport/taintport-agent", "taintport/tlp-signed.ko",
                      "taintport/tlp.ko", "taintport/utt-signed.ko", "taintport/utt.ko",
                      "taintport/token"]
    out = tmp_path / "root"
    out.mkdir()
    subprocess.run(["cpio", "-id", "--quiet", "--no-absolute-filenames"], input=archive,
                   cwd=out, check=True)
    assert (out / "taintport" / "token").read_text() == "0123abcd\n"
    # the agent built for the cell's kernel: dracut's image holds none
    agent = out / "taintport" / "taintport-agent"
    assert agent.read_bytes() == b"\x7fELF static agent" and agent.stat().st_mode & 0o111
    for module in ("tlp.ko", "tlp-signed.ko", "utt.ko", "utt-signed.ko"):
        packed = out / "taintport" / module
        assert packed.read_bytes() == (tmp_path / module).read_bytes()
        assert packed.stat().st_mode & 0o777 == 0o644  # never executable, never stripped


def test_same_files_same_bytes(tmp_path):
    files = cell(tmp_path)
    assert initramfs.cell_archive(files, "t") == initramfs.cell_archive(files, "t")
    assert initramfs.cell_archive(files, "t") != initramfs.cell_archive(files, "u")


def test_image_is_the_dracut_image_then_the_cell_archive(tmp_path):
    base = tmp_path / "base.img"
    base.write_bytes(b"070701" + b"0" * 506)  # stands for dracut's archive
    image = initramfs.build(cell(tmp_path), "tok", base, tmp_path / "initramfs.img")
    data = Path(image).read_bytes()
    assert data.startswith(base.read_bytes())
    assert data[len(base.read_bytes()):] == initramfs.cell_archive(cell(tmp_path), "tok")


def test_module_files_are_every_module_of_the_build_folder(tmp_path):
    """What cli's boot finds in an artifacts folder is what the build returned."""
    cell(tmp_path)
    (tmp_path / "bzImage").write_bytes(b"")
    (tmp_path / "module-build").mkdir()
    (tmp_path / "module-build" / "utt.ko").write_bytes(b"")  # make's own copy
    assert [m.name for m in build.module_files(tmp_path)] == [
        "tlp-signed.ko", "tlp.ko", "utt-signed.ko", "utt.ko"]


def test_a_make_interrupted_here_leaves_no_half_written_cmd_file(tmp_path):
    """SIGTERM during make can cut fixdep's .o.cmd short ("unterminated variable
    reference" on the next make): the .cmd files written since the mark go."""
    import os
    import time

    log = tmp_path / "build.log"
    (tmp_path / "kernel").mkdir()
    old = tmp_path / "kernel" / ".panic.o.cmd"
    old.write_text("savedcmd_kernel/panic.o := gcc ...\n")
    os.utime(old, (time.time() - 100, time.time() - 100))
    with pytest.raises(KeyboardInterrupt):
        with build.building(tmp_path, log):
            (tmp_path / "kernel" / ".tracepoint.o.cmd").write_text("savedcmd_kernel/trace")
            raise KeyboardInterrupt  # make killed mid-way
    assert (tmp_path / ".taintport-building").exists()
    with build.building(tmp_path, log):
        assert not (tmp_path / "kernel" / ".tracepoint.o.cmd").exists()
        assert old.exists(), "a .cmd from an earlier, finished make stays"
    assert not (tmp_path / ".taintport-building").exists()
    assert "1 .cmd files it wrote dropped" in log.read_text()


@pytest.mark.skipif(not shutil.which("dracut"), reason="dracut (dracut-core) not installed")
def test_dracut_image_holds_no_kernels_file_and_the_cell_brings_its_agent(tmp_path):
    """The real dracut, as the matrix runs it once for every kernel: init and
    the hook, no agent and no module; a cell's image gets its agent from the
    archive appended after it."""
    image = initramfs.base(tmp_path, tmp_path / "agent-base.img", tmp_path / "log")
    listed = subprocess.run(["cpio", "-it", "--quiet"], stdin=image.open("rb"),
                            capture_output=True, check=True).stdout.decode().split()
    assert any(name.endswith("taintport-agent.sh") for name in listed)
    assert not [name for name in listed if name.startswith("taintport/")]
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".partial")]
    whole = initramfs.build(cell(tmp_path), "tok", image, tmp_path / "initramfs.img")
    assert whole.read_bytes().startswith(image.read_bytes())
    assert b"taintport/taintport-agent" in whole.read_bytes()[image.stat().st_size:]
