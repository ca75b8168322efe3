# SPDX-License-Identifier: GPL-2.0
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tools" / "lib"))


def fake_command(tmp_path, monkeypatch, name, script):
    """A shell script named name, first on PATH for this test: a tool
    (spatch, qemu-system-x86_64) that fails, hangs or behaves on purpose."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    fake = bin_dir / name
    fake.write_text("#!/bin/sh\n" + script)
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    return fake


def pytest_configure(config):
    config.addinivalue_line("markers", "e2e: builds and boots real kernels (minutes)")
    config.addinivalue_line("markers", "users_cache: reads or switches the trees and build "
                            "folders of the user's taintport cache")


# first: pytest-xdist's own hook reads the group from the markers to schedule
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """make check runs the tests on every core (pytest-xdist, --dist loadgroup):
    a boot under TCG, spatch and most tests are one thread, and a 2-core machine
    idled one core through them. The tests on the user's cache share its trees
    and build folders, which a matrix run switches between variants, so they
    run one after another on one worker, as they did before.

    That group goes first: on a fresh machine it is the longest (the e2e's
    cold build of 6.1: 1117 s of a 2039 s make check, its group started
    2.5 minutes in behind unit tests), and the rest fills the other core."""
    for item in items:
        if item.get_closest_marker("users_cache"):
            item.add_marker(pytest.mark.xdist_group("users-cache"))
    items.sort(key=lambda item: item.get_closest_marker("users_cache") is None)


@pytest.fixture(autouse=True)
def critical_path_first(request):
    """The tests beside the user's cache group at the niceness of the e2e's
    kernel build: at 0 they took a whole core from it (its cold build of 6.1
    835 s there, 422 s alone), and that build is what make check waits for
    longest. Lowering the niceness back needs root (CI is): elsewhere the
    tests share the cores as they did."""
    from taintport.process import NICE_LEVEL
    if os.geteuid() == 0:
        level = 0 if request.node.get_closest_marker("users_cache") else NICE_LEVEL
        os.setpriority(os.PRIO_PROCESS, 0, level)
    yield


@pytest.fixture
def taintport(tmp_path):
    """tools/taintport run from tmp_path with a private cache there (never ~/.cache)."""
    env = dict(os.environ, TAINTPORT_CACHE=str(tmp_path / "cache"))

    def run(*args):
        proc = subprocess.run([sys.executable, str(REPO / "tools" / "taintport"),
                               *map(str, args)], capture_output=True, text=True,
                              timeout=300, env=env, cwd=tmp_path)
        print(proc.stdout, proc.stderr)
        return proc
    return run
