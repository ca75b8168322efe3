# SPDX-License-Identifier: GPL-2.0
import os
import shutil
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
    config.addinivalue_line("markers", "trees_cache: reads or switches the fetched trees, in "
                            "a cache of the tests' own beside the user's (TREES_CACHE)")


# first: pytest-xdist's own hook reads the group from the markers to schedule
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """make check runs the tests on every core (pytest-xdist, --dist loadgroup):
    a boot under TCG, spatch and most tests are one thread, and a 2-core machine
    idled one core through them. The tests on the user's cache share its trees
    and build folders, which a matrix run switches between variants, so they
    run one after another on one worker, in file order; so do the tests on the
    trees' cache of their own, on one worker too (a module-scoped fixture such
    as test_coccicheck's states would run once on each worker).

    The user's cache group goes first: on a fresh machine it is the longest
    (the e2e's cold build of 6.1, 1117 s of a 2039 s make check, where its
    group started 2.5 minutes in behind unit tests), and the rest fills the
    other core around it."""
    for item in items:
        if item.get_closest_marker("users_cache"):
            item.add_marker(pytest.mark.xdist_group("users-cache"))
        elif item.get_closest_marker("trees_cache"):
            item.add_marker(pytest.mark.xdist_group("trees"))
    items.sort(key=lambda item: item.get_closest_marker("users_cache") is None)


# The trees' tests (test_trees, test_full_state, test_coccicheck) fetch, read
# and switch all six trees: in the user's cache they waited on its locks
# while the e2e's matrix held bookworm-6.1's for the whole of its cold build,
# and could not run beside it. Their own cache, in the user's (as make bench
# keeps its own there), takes the user's .debs as hard links, so nothing is
# downloaded twice; its trees are extracted once and kept for the next run.
TREES_CACHE = "make-check-trees"


@pytest.fixture(scope="module", autouse=True)
def trees_cache(request):
    """TAINTPORT_CACHE for a module marked trees_cache (autouse and module
    scope: set before its own module-scoped fixtures read the cache)."""
    if request.node.get_closest_marker("trees_cache") is None:
        yield None
        return
    from taintport.cache import Cache
    user = Cache()
    own = Cache(user.root / TREES_CACHE)
    own.debs().mkdir(parents=True, exist_ok=True)
    for deb in user.debs().glob("*.deb") if user.debs().is_dir() else ():
        if not (own.debs() / deb.name).exists():
            try:
                os.link(deb, own.debs() / deb.name)
            except OSError:  # another file system (a TAINTPORT_CACHE link)
                shutil.copy2(deb, own.debs() / deb.name)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TAINTPORT_CACHE", str(own.root))
        yield own


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
