# SPDX-License-Identifier: GPL-2.0
"""Promises about the host: nothing loads modules here, keys stay put, guests are cut off."""
import re
import stat
import subprocess
from pathlib import Path

import pytest

from taintport.cache import Cache
from taintport.kernel import boot
from taintport.tree import versions

REPO = Path(__file__).resolve().parents[2]
MODULE_CALLS = re.compile(r"\b(insmod|modprobe|rmmod|finit_module|init_module|delete_module)\b")
# Only the guest side may name these: the agent (which refuses on a host) and
# the dracut hook that starts it. Docs and this test describe them.
GUEST_SIDE = ("test-matrix/agent/", "test-matrix/dracut/")


def test_no_host_code_path_loads_or_unloads_modules():
    files = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True,
                           check=True).stdout.split()
    offenders = []
    for name in files:
        if name.startswith(GUEST_SIDE) or name.endswith((".md", ".cocci", ".patch")) \
                or name.startswith(("tools/tests/", "semantic-patches/", "quilt/")):
            continue
        path = REPO / name
        if not path.is_file():
            continue
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            if MODULE_CALLS.search(line):
                offenders.append(f"{name}:{number}: {line.strip()}")
    assert offenders == []


def test_guests_have_no_network_device():
    cmd = boot.command("bzImage", "initrd", "console.log", "console=ttyS0", "tcg")
    assert cmd[cmd.index("-nic") + 1] == "none"
    assert "-nodefaults" in cmd


def test_guests_run_their_userspace_at_fixed_addresses():
    """TCG translates a library again at each new address (boot.GUEST_APPEND)."""
    cmd = boot.command("bzImage", "initrd", "console.log", "console=ttyS0 loglevel=1", "tcg")
    assert cmd[cmd.index("-append") + 1].split() == ["console=ttyS0", "loglevel=1",
                                                     "norandmaps"]


@pytest.mark.e2e
@pytest.mark.users_cache
def test_signing_key_stays_in_the_build_dir_and_out_of_results():
    """Run after test_e2e: the build dir exists and results were written."""
    version = versions.select(["bookworm-6.1"])[0]
    cache = Cache()
    key = cache.build(version) / "certs" / "signing_key.pem"
    assert key.exists()
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    text = key.read_text()
    body = [line for line in text.splitlines() if line and not line.startswith("-----")]
    secret = body[len(body) // 2]  # a line from inside the private key
    searched = 0
    for folder in (REPO / "results", cache.root / "cells", cache.root / "artifacts",
                   cache.root / "logs"):
        if not folder.exists():
            continue
        for path in folder.rglob("*"):
            if path.is_file() and path.stat().st_size < 50_000_000:
                searched += 1
                assert secret.encode() not in path.read_bytes(), path
    assert searched > 0
