# SPDX-License-Identifier: GPL-2.0
"""The fetch stage against a small apt archive of our own (file:, no network).

The archive has the same layout as Debian's (dists/<suite>/main, pool/), and
the package the same shape as linux-source-*: a .deb holding
usr/src/<package>.tar.xz with <package>/Makefile inside.
"""
import hashlib
import os
import shutil
import subprocess
import tarfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from taintport.cache import Cache, held, scratch
from taintport.errors import InputError, RunError
from taintport.tree import fetch
from taintport.tree.archive import apt, download, pins
from taintport.tree.variants import named
from taintport.tree.versions import Version

PKG = "linux-source-9.9"


def make_deb(work, version, marker, tree=None):
    """A linux-source-shaped .deb; tree (a folder) becomes its source tree."""
    root = work / f"pkg-{version}-{marker}"
    src = root / "src" / PKG
    if tree:
        shutil.copytree(tree, src)
    else:
        src.mkdir(parents=True)
    (src / "Makefile").write_text(f"# {marker}\n")
    tarball = root / "usr" / "src" / f"{PKG}.tar.xz"
    tarball.parent.mkdir(parents=True)
    with tarfile.open(tarball, "w:xz") as tar:
        tar.add(src, arcname=PKG)
    (root / "DEBIAN").mkdir()
    (root / "DEBIAN" / "control").write_text(
        f"Package: {PKG}\nVersion: {version}\nArchitecture: all\n"
        "Maintainer: test <t@localhost>\nDescription: test source\n")
    subprocess.run(["rm", "-rf", str(root / "src")], check=True)
    deb = work / f"{PKG}_{version}_all.deb"
    subprocess.run(["dpkg-deb", "-Zxz", "--build", str(root), str(deb)], check=True,
                   capture_output=True)
    return deb


def tree_of(root, **files):
    """A source tree of the given files, with a tarball's old times."""
    root.mkdir(parents=True)
    for name, text in files.items():
        (root / name).write_text(text)
        os.utime(root / name, (1_600_000_000, 1_600_000_000))
    return root


def sha(path):
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def publish(archive, debs):
    """Write pool/ and a Packages index (+ a Release) for the given .debs."""
    pool = archive / "pool"
    pool.mkdir(parents=True, exist_ok=True)
    entries = []
    for deb in debs:
        target = pool / deb.name
        target.write_bytes(deb.read_bytes())
        version = deb.name.split("_")[1]
        entries.append(f"Package: {PKG}\nVersion: {version}\nArchitecture: all\n"
                       f"Filename: pool/{deb.name}\nSize: {target.stat().st_size}\n"
                       f"SHA256: {sha(target)}\nDescription: test\n")
    packages = archive / "dists" / "testsuite" / "main" / "binary-amd64" / "Packages"
    packages.parent.mkdir(parents=True, exist_ok=True)
    packages.write_text("\n".join(entries))
    (archive / "dists" / "testsuite" / "Release").write_text(
        "Suite: testsuite\nCodename: testsuite\nArchitectures: amd64 all\n"
        f"Components: main\nSHA256:\n {sha(packages)} {packages.stat().st_size} "
        "main/binary-amd64/Packages\n")


def version(archive, ver, digest, size=None):
    """test-9.9 pinned to ver; its size is the archive's .deb's unless given."""
    deb = Path(archive) / "pool" / f"{PKG}_{ver}_all.deb"
    if size is None:
        size = deb.stat().st_size if deb.exists() else 1
    return Version(name="test-9.9", distribution="debian", release="testsuite",
                   suites=("testsuite",), archive=f"file:{archive}", component="main",
                   package=PKG, suite="testsuite", version=ver, sha256=digest, size=size,
                   path=Path("versions/test-9.9.toml"))


@pytest.fixture
def archive(tmp_path):
    good = make_deb(tmp_path, "9.9.1-1", "good")
    other = make_deb(tmp_path, "9.9.2-1", "newer")
    publish(tmp_path / "archive", [good, other])
    return tmp_path / "archive", good


def test_fetch_verifies_extracts_and_reuses(tmp_path, archive):
    arch, good = archive
    cache = Cache(tmp_path / "cache")
    v = version(arch, "9.9.1-1", sha(good))
    got = fetch.fetch(cache, v, tmp_path / "log")
    assert (got.tree / "Makefile").read_text() == "# good\n"
    assert not got.reused
    # the second run needs no archive at all
    subprocess.run(["rm", "-rf", str(arch)], check=True)
    again = fetch.fetch(cache, v, tmp_path / "log")
    assert again.reused and again.tree == got.tree


def test_pinned_version_gone_lists_what_the_suite_has(tmp_path, archive):
    arch, good = archive
    v = version(arch, "9.9.0-1", "0" * 64)
    with pytest.raises(InputError) as err:
        fetch.fetch(Cache(tmp_path / "cache"), v, tmp_path / "log")
    text = str(err.value)
    assert "testsuite no longer offers linux-source-9.9 9.9.0-1" in text
    assert "9.9.1-1 (testsuite), 9.9.2-1 (testsuite)" in text and "--repin test-9.9" in text


def test_pin_disagreeing_with_the_index(tmp_path, archive):
    arch, good = archive
    v = version(arch, "9.9.1-1", "1" * 64)
    with pytest.raises(InputError, match="differs from the one testsuite's index publishes"):
        fetch.fetch(Cache(tmp_path / "cache"), v, tmp_path / "log")
    assert not list((tmp_path / "cache").rglob("Makefile"))


def test_tampered_download_is_refused_and_does_not_poison_the_cache(tmp_path, archive):
    arch, good = archive
    cache = Cache(tmp_path / "cache")
    v = version(arch, "9.9.1-1", sha(good))
    # the index still lists the good checksum, but the pool now serves other bytes
    (tmp_path / "bad").mkdir()
    bad = make_deb(tmp_path / "bad", "9.9.1-1", "evil")
    (arch / "pool" / good.name).write_bytes(bad.read_bytes())
    with pytest.raises((InputError, RunError)):
        fetch.fetch(cache, v, tmp_path / "log")
    assert not list(cache.debs().glob("*.deb"))
    assert not cache.tree(v).exists()
    (arch / "pool" / good.name).write_bytes(good.read_bytes())
    got = fetch.fetch(cache, v, tmp_path / "log")
    assert (got.tree / "Makefile").read_text() == "# good\n"


def test_corrupt_cached_deb_is_fetched_again(tmp_path, archive):
    arch, good = archive
    cache = Cache(tmp_path / "cache")
    v = version(arch, "9.9.1-1", sha(good))
    cache.debs().mkdir(parents=True)
    (cache.debs() / v.deb_name).write_bytes(b"not a deb")
    got = fetch.fetch(cache, v, tmp_path / "log")
    assert sha(got.deb) == v.sha256


def test_what_a_killed_run_left_goes_and_a_live_runs_stays(tmp_path, archive):
    """A scratch folder nobody holds the lock of was left by a killed run: the
    next fetch removes it, even when the tree is there already; one a live
    run holds stays."""
    arch, good = archive
    cache = Cache(tmp_path / "cache")
    v = version(arch, "9.9.1-1", sha(good))
    got = fetch.fetch(cache, v, tmp_path / "log")
    leftover = cache.tree(v).parent / ".extract-dead"
    (leftover / PKG).mkdir(parents=True)
    (leftover / PKG / "half").write_text("")
    download = cache.debs() / ".download-dead"
    download.mkdir()
    (download / "half.deb").write_bytes(b"x" * 1000)
    with scratch(cache.tree(v).parent, ".extract-") as live:
        again = fetch.fetch(cache, v, tmp_path / "log")
        assert live.is_dir(), "a live run's folder is never taken"
    assert again.reused and again.tree == got.tree
    assert not leftover.exists() and not download.exists()
    assert (got.tree / "Makefile").exists()


def test_a_pinned_size_unlike_the_index_is_refused_before_any_download(tmp_path, archive):
    arch, good = archive
    cache = Cache(tmp_path / "cache")
    v = version(arch, "9.9.1-1", sha(good), size=good.stat().st_size + 1)
    with pytest.raises(InputError, match=r"pinned size \d+ of linux-source-9.9 9.9.1-1 "
                                         r"differs from the \d+ bytes testsuite's index"):
        fetch.fetch(cache, v, tmp_path / "log")
    assert not list(cache.debs().glob("*.deb"))


def test_an_archive_password_is_never_printed(tmp_path):
    """apt prints a mirror's URL without user and password; so does taintport."""
    v = version(tmp_path, "9.9.1-1", "0" * 64)
    v = Version(**{**v.__dict__, "archive": "http://mirror-user:s3cret@127.0.0.1:9/debian"})
    with pytest.raises(RunError) as err:
        fetch.fetch(Cache(tmp_path / "cache"), v, tmp_path / "log")
    assert "http://127.0.0.1:9/debian" in str(err.value)
    assert "s3cret" not in str(err.value) and "mirror-user" not in str(err.value)
    assert "s3cret" not in (tmp_path / "log").read_text()
    assert apt.redacted("https://u:p@host:8443/debian") == "https://host:8443/debian"
    assert apt.redacted("file:/srv/mirror") == "file:/srv/mirror"


def test_the_next_upload_keeps_the_series_build_folder(tmp_path):
    """Moving the pin to the next upload of a series replaces the tree; every
    unchanged file keeps its time (make rebuilds only what changed) and the
    build folder stays. Without an old tree to compare with, the build
    folder goes (its objects could be newer than a changed source)."""
    one = make_deb(tmp_path, "9.9.1-1", "one", tree=tree_of(tmp_path / "t1", same="kept\n",
                                                            changed="old\n", gone="x\n"))
    (tmp_path / "two").mkdir()
    two = make_deb(tmp_path / "two", "9.9.2-1", "two",
                   tree=tree_of(tmp_path / "t2", same="kept\n", changed="new\n", new="y\n"))
    publish(tmp_path / "archive", [one, two])
    cache = Cache(tmp_path / "cache")
    first = version(tmp_path / "archive", "9.9.1-1", sha(one))
    tree = fetch.fetch(cache, first, tmp_path / "log").tree
    build = cache.build(first)
    (build / "kernel").mkdir(parents=True)
    (build / "vmlinux").write_text("built\n")
    # a variant switch since the build gave one unchanged file a time of its own
    os.utime(tree / "same", (1_700_000_000, 1_700_000_000))
    times = {name: (tree / name).stat().st_mtime_ns for name in ("same", "changed")}
    second = version(tmp_path / "archive", "9.9.2-1", sha(two))
    assert cache.tree(second) == tree and cache.build(second) == build, \
        "the series keeps its paths"
    got = fetch.fetch(cache, second, tmp_path / "log")
    assert not got.reused and (tree / "changed").read_text() == "new\n"
    assert (tree / "same").stat().st_mtime_ns == times["same"]
    assert (tree / "changed").stat().st_mtime_ns > times["changed"]
    assert (tree / "new").stat().st_mtime > (build / "vmlinux").stat().st_mtime - 1
    assert not (tree / "gone").exists()
    assert (build / "vmlinux").exists(), "the build folder is kept"
    assert fetch.extracted(tree) == f"{PKG} 9.9.2-1 {sha(two)}\n"
    assert "files unchanged since linux-source-9.9 9.9.1-1" in (tmp_path / "log").read_text()
    deadline = time.monotonic() + 60  # the old tree is deleted by a thread of its own
    while list(tree.parent.glob(".extract-*")) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not list(tree.parent.glob(".extract-*"))
    # no old tree: nothing to compare with, so the build folder goes
    subprocess.run(["rm", "-rf", str(tree)], check=True)
    fetch.fetch(cache, first, tmp_path / "log")
    assert not build.exists()


def test_the_layout_keyed_by_upload_is_removed_once(tmp_path, archive):
    arch, good = archive
    cache = Cache(tmp_path / "cache")
    v = version(arch, "9.9.1-1", sha(good))
    old_tree = cache.root / "trees" / v.name / "9.9.0-1" / PKG
    old_build = cache.root / "build" / v.name / "9.9.0-1"
    for folder in (old_tree, old_build):
        folder.mkdir(parents=True)
        (folder / "Makefile").write_text("old\n")
    got = fetch.fetch(cache, v, tmp_path / "log")
    assert not old_tree.parent.exists() and not old_build.exists()
    assert got.tree == cache.root / "trees" / v.name / PKG


@pytest.mark.parametrize("where", ["missing-folder", "refused-port"])
def test_unreachable_archive_names_the_failing_command(tmp_path, where):
    v = version(tmp_path / "no-such-archive", "9.9.1-1", "0" * 64)
    if where == "refused-port":
        # loopback port 9 (discard) has no listener here: connection refused
        v = Version(**{**v.__dict__, "archive": "http://127.0.0.1:9/debian"})
    with pytest.raises(RunError) as err:
        fetch.fetch(Cache(tmp_path / "cache"), v, tmp_path / "log")
    assert "apt could not fetch the testsuite index" in str(err.value)
    assert "apt-get -q update" in str(err.value)


def test_second_update_of_one_suite_waits_and_says_so(tmp_path, archive, capfd):
    """Two apt-get update on one private configuration collide ("Could not get
    lock"): the second waits for the first, as a second run on a version does."""
    arch, good = archive
    cache = Cache(tmp_path / "cache")
    v = version(arch, "9.9.1-1", sha(good))
    private = apt.PrivateApt(cache.apt(), v)
    private.root.mkdir(parents=True)
    with ThreadPoolExecutor(max_workers=2) as pool:
        with held(private.root / "update.lock", "the testsuite apt index"):
            second = pool.submit(download.fetch_deb, cache, v, tmp_path / "log")
            # no timing guess: the second says it waits, and is still waiting
            said = ""
            deadline = time.monotonic() + 60
            while "waiting for pid" not in said and time.monotonic() < deadline \
                    and not second.done():
                said += capfd.readouterr().err
                time.sleep(0.05)
            assert "waiting for pid" in said and "the testsuite apt index" in said, said
            assert not second.done(), "the second update did not wait"
        deb, reused = second.result(timeout=120)
    assert sha(deb) == sha(good) and not reused


def pinned_descriptor(path, arch):
    """test-9.9 pinned to an upload its suite no longer has, commented as a
    maintainer writes a descriptor."""
    path.write_text(f'# the test kernel\nname = "test-9.9"\ndistribution = "debian"\n'
                    f'release = "testsuite"\nsuites = ["testsuite"]  # one suite\n'
                    f'archive = "file:{arch}"\ncomponent = "main"\npackage = "{PKG}"\n\n'
                    '# the pin: moved by --repin\n'
                    f'suite = "testsuite"\nversion = "9.9.0-1"  # a trailing comment\n'
                    f'sha256 = "{"0" * 64}"\nsize = 1\nships = ["unsigned"]\n')
    return path


def test_repin_moves_the_pin_to_the_newest_on_purpose(tmp_path, archive):
    """Only the pinned values change: every comment and blank line stays."""
    from taintport.tree import versions
    arch, good = archive
    path = pinned_descriptor(tmp_path / "test-9.9.toml", arch)
    before = path.read_text()
    v = versions.load(path)
    moved = pins.repin(Cache(tmp_path / "cache"), v, tmp_path / "log")
    assert (moved.old, moved.new) == ("testsuite 9.9.0-1", "testsuite 9.9.2-1")
    assert moved.shipped == "no [shipped] table"
    newer = arch / "pool" / f"{PKG}_9.9.2-1_all.deb"
    assert path.read_text() == before.replace('"9.9.0-1"', '"9.9.2-1"').replace(
        "0" * 64, sha(newer)).replace("size = 1\n", f"size = {newer.stat().st_size}\n")
    moved = versions.load(path)
    assert moved.version == "9.9.2-1"
    fetch.fetch(Cache(tmp_path / "cache"), moved, tmp_path / "log")


def test_a_repin_killed_at_its_rename_leaves_the_descriptor_as_it_was(tmp_path, archive,
                                                                     monkeypatch):
    from taintport import atomic
    from taintport.tree import versions
    arch, _ = archive
    path = pinned_descriptor(tmp_path / "test-9.9.toml", arch)
    before = path.read_text()

    rename = os.rename

    def killed(src, dst):
        if Path(dst) == path:  # the descriptor's; the private apt state's go through
            raise OSError(5, "Input/output error")
        rename(src, dst)
    monkeypatch.setattr(atomic.os, "rename", killed)
    with pytest.raises(OSError):
        pins.repin(Cache(tmp_path / "cache"), versions.load(path), tmp_path / "log")
    assert path.read_text() == before
    assert atomic.leftovers(path) == []


def test_the_private_sources_list_is_readable_by_its_owner_alone(tmp_path, archive):
    """It names the archive, and a mirror's URL may carry its password; one
    written 0644 by an older run gets 0600 too."""
    arch, good = archive
    cache = Cache(tmp_path / "cache")
    v = version(arch, "9.9.1-1", sha(good))
    sources = cache.apt() / "testsuite" / "sources.list"
    sources.parent.mkdir(parents=True)
    sources.write_text("deb [trusted=yes] file:/old testsuite main\n")
    sources.chmod(0o644)
    fetch.fetch(cache, v, tmp_path / "log")
    assert sources.stat().st_mode & 0o777 == 0o600
    assert sources.read_text() == f"deb [trusted=yes] file:{arch} testsuite main\n"


def test_an_index_stanza_keeps_its_continuation_lines():
    """A field folded over lines (Depends, Description) is read whole, and the
    fields after it are still read."""
    from taintport.tree.archive.published import stanzas
    text = ("Package: linux-headers-7.2-amd64\nVersion: 7.2.13-1\n"
            "Depends: linux-headers-7.2-common (= 7.2.13-1),\n linux-kbuild-7.2 (= 7.2.13-1)\n"
            "SHA256: " + "a" * 64 + "\nSize: 12\n\nPackage: b\nVersion: 1\n")
    first, second = stanzas(text)
    assert first["Depends"].split(",")[1].strip() == "linux-kbuild-7.2 (= 7.2.13-1)"
    assert first["Size"] == "12" and second["Package"] == "b"


def test_fetch_ahead_extracts_waiting_versions_and_skips_held_ones(tmp_path, archive):
    """The matrix's fetch-ahead: after the first workers' fetch, later trees are
    extracted before their worker starts, at most one per worker ahead of them;
    a version someone holds is left alone."""
    import dataclasses
    import threading
    import time

    from taintport.run.schedule import Schedule

    arch, good = archive
    cache = Cache(tmp_path / "cache")
    first, held, waiting = (dataclasses.replace(version(arch, "9.9.1-1", sha(good)),
                                                name=f"test-{n}")
                            for n in ("first", "held", "waiting"))
    schedule = Schedule(cache, tmp_path / "out", 1, needs_work=lambda version: True)
    chosen = schedule.order([first, held, waiting])
    assert chosen == [first, held, waiting]  # no costs, one kernel series: as asked
    schedule.take(first)
    schedule.mark_fetched(first)
    done = threading.Event()
    with cache.locked(held.name):
        ahead = threading.Thread(target=schedule.fetch_ahead, args=(chosen, done))
        ahead.start()
        time.sleep(2)
        # held is skipped; waiting would be two trees ahead of one worker
        assert not cache.tree(waiting).exists()
        schedule.take(held)  # a worker takes held
        ahead.join(timeout=30)
        done.set()
    assert not ahead.is_alive()
    assert not cache.tree(first).exists()  # its worker fetches it itself
    assert (cache.tree(waiting) / "Makefile").read_text() == "# good\n"
    assert not cache.tree(held).exists()


def test_longest_build_first_from_recorded_costs(tmp_path, archive):
    """The matrix starts the kernel that built longest before (the longest
    build seen is kept, not a later warm rebuild); without one, the newest."""
    import dataclasses

    from taintport.run.schedule import Schedule, kernel_series

    arch, good = archive
    v = version(arch, "9.9.1-1", sha(good))
    assert kernel_series(dataclasses.replace(v, package="linux-source-6.12")) == (6, 12)
    schedule = Schedule(Cache(tmp_path / "cache"), tmp_path / "out", 1, lambda version: True)
    a, b, new = (dataclasses.replace(v, name=name, package=package) for name, package in
                 (("a", "linux-source-6.1"), ("b", "linux-source-5.10"),
                  ("new", "linux-source-7.3")))
    schedule.record_cost(a, 120.0)
    schedule.record_cost(a, 7.0)  # a warm rebuild
    schedule.record_cost(b, 300.0)
    assert schedule.build_costs() == {"a": 120.0, "b": 300.0}
    assert [x.name for x in schedule.order([a, b, new])] == ["new", "b", "a"]


def test_a_variant_boots_while_the_next_one_builds(tmp_path, archive, monkeypatch):
    """Within a version, the boot half of a cell (initramfs, QEMU, verdict) runs
    beside the next variant's build; cells still publish in series order, and
    a build that fails makes an error cell without stopping the next variant."""
    import threading
    import time

    from taintport.run import matrix, sources
    from taintport.errors import RunError as Broke
    from taintport.results.cells import Inputs
    from taintport.run.stages import BootProfile, Built
    from taintport.judge.verdict import Status

    arch, good = archive
    v = version(arch, "9.9.1-1", sha(good))
    monkeypatch.setattr(matrix.series, "load", lambda name, quilt_dir: None)
    monkeypatch.setattr(sources.TreeBuild, "inputs",
                        lambda self, version, quilt_series, variant:
                        Inputs("linux-source-9.9", "1"))
    runner = matrix.Runner(Cache(tmp_path / "cache"), tmp_path / "out")
    spans = {}
    lock = threading.Lock()

    def span(name, seconds):
        start = time.monotonic()
        time.sleep(seconds)
        with lock:
            spans[name] = (start, time.monotonic())

    def build_cell(self, chain, version, tree, quilt_series, cell):
        span(f"build {cell.variant}", 0.4)
        if cell.variant.name == "reverted":
            raise Broke("build", "make failed (a test's failure)")
        return Built(artifacts=None, identical=None, profile=BootProfile("", (), 1, 1))

    def judge_boot(cell, built):
        span(f"boot {cell.variant}", 0.6)
        cell.status = Status.AS_EXPECTED

    monkeypatch.setattr(sources.TreeBuild, "prepare", build_cell)
    monkeypatch.setattr(runner.chain, "boot", judge_boot)
    # the selftests' boot after the agent's (test_selftests.py) has no kernel here
    monkeypatch.setattr(matrix.selftests, "stage", lambda *args: None)
    runner.run([v], [named("upstream"), named("reverted"), named("backported")])
    cells = runner.ordered_cells()
    assert [(c.variant.name, c.status) for c in cells] == [
        ("upstream", Status.AS_EXPECTED), ("reverted", Status.ERROR),
        ("backported", Status.AS_EXPECTED)]
    assert "make failed" in cells[1].errors[0]
    # the upstream boot and the reverted build overlapped
    assert spans["build reverted"][0] < spans["boot upstream"][1]
    assert spans["boot upstream"][0] < spans["build reverted"][1]
    assert spans["boot backported"][0] >= spans["build backported"][1]


def test_the_cache_can_be_removed_once_the_retired_trees_are_gone(tmp_path):
    """make bench removes its caches right after a move retired a tree: a
    thread still deleting it raced the removal (FileNotFoundError)."""
    import threading
    tree = tmp_path / "trees" / "old"
    for i in range(2000):
        (tree / f"d{i % 20}").mkdir(parents=True, exist_ok=True)
        (tree / f"d{i % 20}" / f"f{i}").write_text("x")
    fetch.retire(tree)
    fetch.wait_retired()
    assert not any(t.name.startswith(fetch.RETIRING) for t in threading.enumerate())
    assert not any((tmp_path / "trees").rglob("f*"))
    shutil.rmtree(tmp_path / "trees")


def test_the_hosts_apt_hooks_never_run(tmp_path, archive, monkeypatch):
    """A host's apt hooks (docker's Post-Invoke removing /var/cache/apt's
    files, appstream's refresh) never run around the private apt's calls,
    while its settings still apply. The host's configuration here is a
    planted apt.conf standing in for /etc/apt/apt.conf."""
    arch, good = archive
    hooked = tmp_path / "hooked"
    host = tmp_path / "host-apt.conf"
    host.write_text(
        f'APT::Update::Pre-Invoke {{ "touch {hooked}"; }};\n'
        f'APT::Update::Post-Invoke {{ "touch {hooked}"; }};\n'
        f'APT::Update::Post-Invoke-Success {{ "touch {hooked}"; }};\n')
    monkeypatch.setattr(apt, "HOST_CONFIG", str(host))
    cache = Cache(tmp_path / "cache")
    got = fetch.fetch(cache, version(arch, "9.9.1-1", sha(good)), tmp_path / "log")
    assert (got.tree / "Makefile").read_text() == "# good\n"
    assert not hooked.exists(), "the host's apt hook ran"
    config = cache.apt() / "testsuite" / "apt.conf.last"
    assert config.read_text().startswith(f'#include "{host}";\n'), "the host's settings"
