# SPDX-License-Identifier: GPL-2.0
"""The fetch stage killed, filled up and fed hostile descriptors, for real:
`tools/taintport fetch` runs as a process of its own against a file: archive
fixture (debian_archive.py), is sent SIGKILL or SIGTERM in the middle of its
download or extraction, or fills a small tmpfs. docs/faults.md lists these.
"""
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from debian_archive import control, descriptor, publish, source_deb
from process_table import descendants, still_alive

REPO = Path(__file__).resolve().parents[2]
TAINTPORT = [sys.executable, str(REPO / "tools" / "taintport")]
PKG = "linux-source-9.9"
NAME = "kill-9.9"


def taintport(*args, timeout=300):
    proc = subprocess.run([*TAINTPORT, *map(str, args)], capture_output=True, text=True,
                          timeout=timeout)
    print(proc.stdout, proc.stderr)
    return proc


def start(*args):
    return subprocess.Popen([*TAINTPORT, *map(str, args)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def wait_for(condition, what, timeout=120.0):
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"never saw {what}"
        time.sleep(0.005)


def archive_with(tmp_path, **upload):
    """A versions folder with NAME pinned to one upload in a file: archive;
    {version: deb} of the uploads given (the first is pinned)."""
    debs = {ver: deb for ver, deb in upload.items()}
    url = publish(tmp_path / "repo", {"killrel": list(debs.values())})
    first = next(iter(debs))
    folder = tmp_path / "versions"
    descriptor(folder, NAME, "killrel", ["killrel"], url, debs[first], PKG, first,
               ["unsigned"])
    return folder, url, debs


def pin(folder, url, deb, version):
    descriptor(folder, NAME, "killrel", ["killrel"], url, deb, PKG, version, ["unsigned"])


def fetch_cmd(folder, cache):
    return ("fetch", "--versions", NAME, "--versions-dir", folder, "--cache", cache)


@pytest.fixture(scope="module")
def slow_upload(tmp_path_factory):
    """An upload whose extraction takes seconds: 60000 empty files (a few kB packed)."""
    work = tmp_path_factory.mktemp("slow")
    return source_deb(work, PKG, "9.9.2-1", empty=60000)


@pytest.mark.parametrize("signum", [signal.SIGKILL, signal.SIGTERM])
def test_a_fetch_killed_while_extracting_leaves_nothing_running_or_behind(
        tmp_path, slow_upload, signum):
    """Killed mid-extraction: dpkg-deb, tar and xz die with it (SIGKILL) or
    are ended by it (SIGTERM), and what it half-extracted is gone once the
    next fetch ran (SIGTERM: at once), even when that fetch finds its tree
    already there."""
    small = source_deb(tmp_path, PKG, "9.9.1-1", {"kernel/x.c": b"x\n"})
    folder, url, debs = archive_with(tmp_path, **{"9.9.1-1": small, "9.9.2-1": slow_upload})
    cache = tmp_path / "cache"
    assert taintport(*fetch_cmd(folder, cache)).returncode == 0  # the tree of 9.9.1-1
    parent = cache / "trees" / NAME
    pin(folder, url, slow_upload, "9.9.2-1")
    run = start(*fetch_cmd(folder, cache))
    wait_for(lambda: any(parent.glob(f".extract-*/{PKG}/many/1")), "the extraction start")
    pipeline = descendants(run.pid)
    assert {"tar", "xz"} <= set(pipeline.values()), pipeline
    run.send_signal(signum)
    run.wait(timeout=60)  # the fetch itself: a stage that outlived it may hold its stdout
    living = still_alive(pipeline)
    assert not living, f"a stage of the extraction outlived the fetch: {living}"
    run.communicate(timeout=120)
    left = list(parent.glob(".extract-*"))
    if signum == signal.SIGTERM:
        assert run.returncode == 2 and not left, "SIGTERM: cleaned up on the way out"
    else:
        assert left, "SIGKILL leaves the half-extracted folder to the next fetch"
    pin(folder, url, small, "9.9.1-1")  # back to the upload whose tree is there
    again = taintport(*fetch_cmd(folder, cache))
    assert again.returncode == 0 and "reused" in again.stdout
    assert not list(parent.glob(".extract-*"))
    assert (parent / PKG / "kernel" / "x.c").read_text() == "x\n"


def test_a_fetch_killed_while_downloading_leaves_nothing_running_or_behind(tmp_path):
    """SIGKILL during apt-get download: apt-get dies with the fetch, and the
    next fetch removes the partial download (133 MB with a real kernel). The
    package is 300 MB of zeros stored uncompressed: slow to copy and hash,
    never extracted."""
    root = tmp_path / "root"
    big = root / "usr" / "src" / f"{PKG}.tar.xz"
    big.parent.mkdir(parents=True)
    with open(big, "wb") as out:
        out.truncate(300 << 20)  # stored uncompressed: slow to copy and hash
    control(root, PKG, "9.9.1-1", "all")
    deb = tmp_path / f"{PKG}_9.9.1-1_all.deb"
    subprocess.run(["dpkg-deb", "-Znone", "--build", str(root), str(deb)], check=True,
                   capture_output=True)
    small = source_deb(tmp_path, PKG, "9.9.2-1")
    folder, url, _ = archive_with(tmp_path, **{"9.9.1-1": deb, "9.9.2-1": small})
    cache = tmp_path / "cache"
    run = start(*fetch_cmd(folder, cache))
    seen = {}

    def downloading():
        seen.update(descendants(run.pid))
        return "apt-get" in seen.values() and any((cache / "debs").glob(".download-*"))
    wait_for(downloading, "apt-get download")
    run.kill()
    run.wait(timeout=60)
    living = still_alive(seen)
    assert not living, f"apt-get or a child of it outlived the fetch: {living}"
    run.communicate(timeout=120)
    assert list((cache / "debs").glob(".download-*")), "the killed download's folder"
    pin(folder, url, small, "9.9.2-1")  # any fetch removes it: here of a small upload
    again = taintport(*fetch_cmd(folder, cache))
    assert again.returncode == 0
    assert not list((cache / "debs").glob(".download-*"))


@pytest.fixture
def small_disk(tmp_path):
    """A 24 MB tmpfs: a real file system that fills up."""
    mount = tmp_path / "small"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=24m", "tmpfs", str(mount)],
                          capture_output=True)
    if done.returncode:
        pytest.skip(f"cannot mount a tmpfs here (needs root): {done.stderr.decode().strip()}")
    yield mount
    subprocess.run(["umount", str(mount)], check=True)


def test_a_full_disk_while_extracting_is_a_clear_error_and_leaves_nothing(tmp_path,
                                                                           small_disk):
    deb = source_deb(tmp_path, PKG, "9.9.1-1", {"kernel/big": b"\0" * (48 << 20)})
    folder, _, _ = archive_with(tmp_path, **{"9.9.1-1": deb})
    proc = taintport(*fetch_cmd(folder, small_disk))
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert "no space left on device while extracting usr/src/linux-source-9.9.tar.xz" \
        in proc.stderr
    assert "nothing half-written was kept" in proc.stderr
    parent = small_disk / "trees" / NAME
    assert not (parent / PKG).exists() and not list(parent.glob(".extract-*"))
    assert os.statvfs(small_disk).f_bfree * os.statvfs(small_disk).f_frsize > 20 << 20


def test_hostile_descriptors_are_named_errors(tmp_path):
    folder = tmp_path / "versions"
    folder.mkdir()
    good = descriptor(folder, "ok-9.9", "ok", ["ok"], "file:/nowhere",
                      source_deb(tmp_path, PKG, "9.9.1-1"), PKG, "9.9.1-1", ["unsigned"])
    text = good.read_text()

    (folder / "ok-9.9.toml").write_bytes(text.replace('distribution = "debian"',
                                                      'distribution = "d\xe9bian"')
                                         .encode("latin-1"))
    proc = taintport("versions", "--versions-dir", folder)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "ok-9.9.toml: not UTF-8 text (byte 0xe9 at offset" in proc.stderr

    size = next(line for line in text.splitlines() if line.startswith("size = "))
    (folder / "ok-9.9.toml").write_text(text.replace(size, "size = 100000000000000000000"))
    proc = taintport("versions", "--versions-dir", folder)
    assert proc.returncode == 2
    assert "ok-9.9.toml: size: 100000000000000000000 is not a size in bytes" in proc.stderr
