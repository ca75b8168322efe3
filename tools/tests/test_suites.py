# SPDX-License-Identifier: GPL-2.0
"""Versions that follow what a release's users get, against a private archive
fixture: a file: repository of a release's suites (the release, -updates,
-security, -backports) indexed by dpkg-scanpackages and apt-ftparchive, with
small fake linux-source and kernel packages.

`versions --outdated`, `versions --repin` (the source and [shipped]) and the
all-suites `check --all-point-releases` run here as a user runs them.
"""
import re
import subprocess

import pytest
from debian.debian_support import version_compare

from taintport.cache import Cache
from taintport.tree import fetch, versions

from debian_archive import descriptor, kernel_debs, publish, sha, source_deb
from test_layer import _tree

SUITES = ["testrel-security", "testrel-updates", "testrel"]


def tree_files(root):
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


@pytest.fixture(scope="module")
def archive(tmp_path_factory):
    """testrel serves linux-source-9.9 9.9.1-1 and 9.9.2-1 (point releases),
    testrel-security 9.9.3-1 (newest: a security upload, with its binary
    kernel) and a second series, linux-source-9.10 9.10.1-1~deb1u1;
    testrel-updates nothing; testrel-backports linux-source-9.12."""
    work = tmp_path_factory.mktemp("archive")
    fixed = tree_files(_tree(work / "fixed", ".res"))
    prefix = tree_files(_tree(work / "prefix", ".c"))
    debs = {
        "991": source_deb(work, "linux-source-9.9", "9.9.1-1", prefix),
        "992": source_deb(work, "linux-source-9.9", "9.9.2-1", fixed),
        "993": source_deb(work, "linux-source-9.9", "9.9.3-1", fixed),
        "910": source_deb(work, "linux-source-9.10", "9.10.1-1~deb1u1", fixed),
        "912": source_deb(work, "linux-source-9.12", "9.12.1-1~bpo1+1", prefix),
    }
    old_kernel = kernel_debs(work, "9.9.0-2", "9.9.2-1")
    new_kernel = kernel_debs(work, "9.9.0-3", "9.9.3-1")
    url = publish(work / "repo", {
        "testrel": [debs["991"], debs["992"], *old_kernel],
        "testrel-updates": [],
        "testrel-security": [debs["993"], debs["910"], *new_kernel],
        "testrel-backports": [debs["912"]],
    })
    return work, url, debs, old_kernel


@pytest.fixture
def pinned(tmp_path, archive):
    """testrel-9.9 pinned to the point release 9.9.2-1 (behind testrel-security),
    with its binary kernel; testrel-9.10 pinned to its newest."""
    work, url, debs, old_kernel = archive
    folder = tmp_path / "versions"
    descriptor(folder, "testrel-9.9", "testrel", SUITES, url, debs["992"],
               "linux-source-9.9", "9.9.2-1", ["unsigned"], backports=["testrel-backports"],
               shipped=old_kernel, pin_suite="testrel")
    descriptor(folder, "testrel-9.10", "testrel", SUITES, url, debs["910"],
               "linux-source-9.10", "9.10.1-1~deb1u1", ["unsigned"])
    return folder


def test_outdated_lists_each_pin_behind_its_suites_and_repin_moves_it(taintport, pinned,
                                                                      archive):
    _, _, debs, _ = archive
    proc = taintport("versions", "--outdated", "--versions-dir", pinned)
    assert proc.returncode == 1, "a pin is behind: exit 1"
    assert re.search(r"^testrel-9.9 +testrel 9.9.2-1 -> testrel-security 9.9.3-1 +OUTDATED",
                     proc.stdout, re.M)
    assert re.search(r"^testrel-9.10 +testrel-security 9.10.1-1~deb1u1: current", proc.stdout,
                     re.M)
    assert "1 of 2 pins behind their suites" in proc.stdout

    proc = taintport("versions", "--repin", "testrel-9.9", "--versions-dir", pinned)
    assert proc.returncode == 0
    assert "testrel-9.9: testrel 9.9.2-1 -> testrel-security 9.9.3-1" in proc.stdout
    moved = versions.load(pinned / "testrel-9.9.toml")
    assert (moved.suite, moved.version, moved.sha256, moved.size) == \
        ("testrel-security", "9.9.3-1", sha(debs["993"]), debs["993"].stat().st_size)
    # [shipped] follows the upload: the signed image of 9.9.3-1, its headers
    # with their common part and kbuild, from the same suites
    assert moved.shipped is not None and moved.shipped.release == "9.9.0-3-amd64"
    assert [(p.package, p.version) for p in moved.shipped.packages] == [
        ("linux-image-9.9.0-3-amd64", "9.9.3-1"), ("linux-headers-9.9.0-3-amd64", "9.9.3-1"),
        ("linux-headers-9.9.0-3-common", "9.9.3-1"), ("linux-kbuild-9.9", "9.9.3-1")]
    assert moved.release == "testrel" and moved.suites == tuple(SUITES)

    proc = taintport("versions", "--outdated", "--versions-dir", pinned)
    assert proc.returncode == 0, "every pin current: exit 0"
    assert "0 of 2 pins behind their suites" in proc.stdout
    # and the moved pin fetches: from testrel-security, checked against its index
    got = fetch.fetch(Cache(pinned.parent / "cache"), moved, pinned.parent / "log")
    assert (got.tree / "Makefile").read_text() == "# linux-source-9.9 9.9.3-1\n"


def test_outdated_exits_2_when_an_index_cannot_be_read(taintport, pinned, archive):
    _, url, debs, _ = archive
    descriptor(pinned, "gone-9.9", "gone", ["gone-security", "gone"], url, debs["992"],
               "linux-source-9.9", "9.9.2-1", ["unsigned"])
    proc = taintport("versions", "--outdated", "--versions-dir", pinned)
    assert proc.returncode == 2
    assert "apt could not fetch the gone-security index" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_check_reads_every_suite_and_names_it(taintport, pinned, archive):
    """The release's point releases, its security uploads (both series) and
    its backports, one line each naming the suite; the layer only: nothing
    is built and only the pinned .debs stay."""
    proc = taintport("check", "--all-point-releases", "--versions-dir", pinned)
    assert proc.returncode == 0, proc.stderr
    lines = [line.split()[:3] for line in proc.stdout.splitlines()[:-1]]
    assert sorted(lines) == sorted([
        ["testrel-security", "linux-source-9.10", "9.10.1-1~deb1u1"],
        ["testrel-security", "linux-source-9.9", "9.9.3-1"],
        ["testrel", "linux-source-9.9", "9.9.1-1"],
        ["testrel", "linux-source-9.9", "9.9.2-1"],
        ["testrel-backports", "linux-source-9.12", "9.12.1-1~bpo1+1"]])
    verdicts = {(s, v): line for line in proc.stdout.splitlines()
                for s, _, v in [line.split()[:3]]}
    assert "unsigned: already upstream" in verdicts[("testrel-security", "9.9.3-1")]
    assert "unsigned: carried define" in verdicts[("testrel", "9.9.1-1")]
    assert "unsigned: carried define" in verdicts[("testrel-backports", "9.12.1-1~bpo1+1")]
    assert proc.stdout.splitlines()[-1].startswith("5 uploads listed, 5 checked in ")
    cache = pinned.parent / "cache"
    assert not (cache / "build").exists() and not (cache / "trees").exists()
    kept = sorted(d.name for d in (cache / "debs").glob("*.deb"))
    assert kept == ["linux-source-9.10_9.10.1-1~deb1u1_all.deb",
                    "linux-source-9.9_9.9.2-1_all.deb"]
    assert not list((cache / "check").glob(".layer-*"))


def test_a_deb_two_suites_list_is_read_once(tmp_path, archive):
    """A point release that also went out as a security upload: one download,
    one line per suite."""
    from taintport.layer import pointreleases
    work, _, debs, _ = archive
    url = publish(tmp_path / "repo", {"twin": [debs["992"]], "twin-security": [debs["992"]]})
    path = descriptor(tmp_path / "v", "twin-9.9", "twin", ["twin-security", "twin"], url,
                      debs["992"], "linux-source-9.9", "9.9.2-1", ["unsigned"])
    outcomes = list(pointreleases.check_all(Cache(tmp_path / "cache"),
                                            [versions.load(path)], tmp_path / "log"))
    assert [(o.suite, o.version) for o in outcomes] == [("twin-security", "9.9.2-1"),
                                                         ("twin", "9.9.2-1")]
    assert outcomes[0].verdict == outcomes[1].verdict and outcomes[1].seconds == 0.0
    assert (tmp_path / "log").read_text().count("apt-get") == 2 + 1  # two updates, one download


@pytest.mark.parametrize("pair", [
    ("6.1.192-3", "6.1.180-1~deb11u1"), ("7.3.4-1~bpo13+1", "7.3~rc7-1~exp1"),
    ("6.12.118-1", "6.12.118-1~deb12u1"), ("1:0.1", "9.9"), ("1.0a", "1.0"),
    ("1.0", "1.0~rc1"), ("1.0-1", "1.0"), ("1.10", "1.9"), ("1.0+b1", "1.0"),
    ("2.0-1", "2.0-1"), ("1.001", "1.1"), ("1.0.0", "1.0")])
def test_version_order_is_dpkgs(pair):
    a, b = pair
    for left, right in (pair, (b, a)):
        ours = version_compare(left, right)
        for op, holds in (("gt", ours > 0), ("eq", ours == 0), ("lt", ours < 0)):
            dpkg = subprocess.run(["dpkg", "--compare-versions", left, op, right]).returncode
            assert (dpkg == 0) == holds, (left, op, right)


def test_reports_name_the_upload_and_which_releases_users_have_the_bug():
    """The known-bugs list says, per cell, which upload from which suite it
    booted, and per bug, which releases' users have it."""
    from taintport.judge.verdict import FixState, Status
    from taintport.results import report
    from taintport.results.cells import Cell, Inputs, Matrix
    from taintport.results.reports import summary
    from taintport.tree.variants import named

    def known_bug(name, variant, release, suite, package, version):
        cell = Cell.new(name, named(variant), {"unsigned": FixState.PRESENT,
                                        "livepatch": FixState.MISSING})
        cell.status = Status.KNOWN_BUG
        cell.inputs = Inputs(package=package, package_version=version, release=release,
                             suite=suite)
        return cell
    cells = [known_bug("bullseye-6.1", "upstream", "bullseye", "bullseye-security",
                       "linux-source-6.1", "6.1.180-1~deb11u1"),
             known_bug("bookworm-6.1", "upstream", "bookworm", "bookworm-security",
                       "linux-source-6.1", "6.1.192-3"),
             known_bug("bookworm-6.1", "shipped", "bookworm", "bookworm-security",
                       "linux-image-6.1.0-57-amd64", "6.1.192-3")]
    lines = report.known_bugs(cells)
    assert lines[1].startswith("bookworm-6.1 upstream (as shipped in bookworm-security "
                               "6.1.192-3): livepatch module tainted K")
    assert lines[2].startswith("bookworm-6.1 shipped (the distribution's binary, "
                               "linux-image-6.1.0-57-amd64 6.1.192-3 from bookworm-security)")
    assert report.users_with_bugs(cells) == [
        "livepatch module tainted K, its trace events missing: the users of bullseye "
        "(bullseye-security 6.1.180-1~deb11u1); bookworm (bookworm-security 6.1.192-3)"]
    text = summary.render(Matrix(cells))
    known = text[text.index("## Known bugs"):text.index("## Fixes of the family")]
    assert "* livepatch module tainted K, its trace events missing: the users of bullseye" \
        in known
    assert "bookworm-6.1  bookworm-security 6.1.192-3" in text  # the build summary


def test_an_upload_the_archive_does_not_serve_is_said_and_the_rest_checked(tmp_path, archive,
                                                                          taintport):
    """An index that lists a .deb its archive does not serve (a mirror out of
    step; Debian's bullseye-security 6.1 uploads on 2026-12-04): `check` says
    so on that upload's line and checks the others (exit 0); fetching it is
    an error naming the suite, the package and the 404."""
    import shutil
    _, _, debs, _ = archive
    repo = tmp_path / "repo"
    url = publish(repo, {"half": [debs["991"], debs["992"]]})
    (repo / "pool" / "half" / debs["991"].name).unlink()
    folder = tmp_path / "versions"
    descriptor(folder, "half-9.9", "half", ["half"], url, debs["991"], "linux-source-9.9",
               "9.9.1-1", ["unsigned"])
    proc = taintport("check", "--all-point-releases", "--versions-dir", folder)
    assert proc.returncode == 0, proc.stderr
    assert re.search(r"^half +linux-source-9.9 +9.9.1-1 +not served: half's index lists "
                     r"linux-source-9.9 9.9.1-1, but file:\S+ does not serve it", proc.stdout,
                     re.M)
    assert re.search(r"^half +linux-source-9.9 +9.9.2-1 +unsigned: already upstream",
                     proc.stdout, re.M)
    assert "2 uploads listed, 1 checked in" in proc.stdout
    assert "1 not served by their archive, 0 could not be checked" in proc.stdout
    proc = taintport("fetch", "--versions", "half-9.9", "--versions-dir", folder)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "half's index lists linux-source-9.9 9.9.1-1, but file:" in proc.stderr
    assert "does not serve it" in proc.stderr
    shutil.rmtree(repo)
