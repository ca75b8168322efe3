# SPDX-License-Identifier: GPL-2.0
import os

import pytest

from taintport.errors import InputError
from taintport.tree import versions


def test_repository_descriptors_load():
    loaded = versions.all_versions()
    assert "bookworm-6.1" in [v.name for v in loaded]
    v = versions.select(["bookworm-6.1"])[0]
    assert v.package == "linux-source-6.1"
    assert v.tarball == "usr/src/linux-source-6.1.tar.xz"


def test_unknown_version_lists_valid_ones():
    with pytest.raises(InputError, match=r"unknown version\(s\) nope-1.0; valid: .*bookworm-6.1"):
        versions.select(["nope-1.0"])


def write(tmp_path, stem, **fields):
    base = dict(name=stem, distribution="debian", release="bookworm",
                suites=["bookworm-security", "bookworm"],
                archive="http://deb.debian.org/debian",
                security_archive="http://security.debian.org/debian-security",
                component="main", package="linux-source-6.1", suite="bookworm-security",
                version="6.1.1-1", sha256="a" * 64, size=1, ships=["unsigned"])
    base.update(fields)
    lines = [f'{k} = "{v}"' if isinstance(v, str) else f"{k} = {v}".replace("'", '"')
             for k, v in base.items()]
    path = tmp_path / f"{stem}.toml"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_bad_checksum_field_names_file(tmp_path):
    path = write(tmp_path, "x-1", sha256="xyz")
    with pytest.raises(InputError, match=r"x-1.toml: sha256: 'xyz' is not 64 lower-case hex digits"):
        versions.load(path)


def test_name_must_match_file(tmp_path):
    path = write(tmp_path, "x-1", name="y-1")
    path.rename(tmp_path / "x-1.toml")
    with pytest.raises(InputError, match="does not match the file name"):
        versions.load(tmp_path / "x-1.toml")


def test_unknown_field_is_refused(tmp_path):
    path = write(tmp_path, "x-1", colour="red")
    with pytest.raises(InputError, match="unknown field"):
        versions.load(path)


def test_ships_names_fixes_of_the_family(tmp_path):
    v = versions.load(write(tmp_path, "x-1", ships=["unsigned", "livepatch"]))
    assert v.ships == ("unsigned", "livepatch")
    with pytest.raises(InputError, match=r"x-1.toml: ships: unknown fix 'kpatch'; valid: "):
        versions.load(write(tmp_path, "x-1", ships=["kpatch"]))
    with pytest.raises(InputError, match="x-1.toml: ships must be a list"):
        versions.load(write(tmp_path, "x-1", ships="unsigned"))


def test_a_version_names_its_release_and_the_suites_its_users_take_it_from(tmp_path):
    v = versions.load(write(tmp_path, "x-1"))
    assert (v.release, v.suites, v.suite, v.upload) == \
        ("bookworm", ("bookworm-security", "bookworm"), "bookworm-security",
         "bookworm-security 6.1.1-1")
    # a -security suite is served from the security archive, the rest from the archive
    assert [(s.suite, s.archive) for s in v.sources()] == [
        ("bookworm-security", "http://security.debian.org/debian-security"),
        ("bookworm", "http://deb.debian.org/debian")]
    with pytest.raises(InputError, match=r"suite 'bookworm-updates' \(where the pin came "
                                         r"from\) is not one of suites"):
        versions.load(write(tmp_path, "x-1", suite="bookworm-updates"))
    with pytest.raises(InputError, match="no security_archive says where it is served"):
        path = write(tmp_path, "x-1")
        path.write_text("".join(line + "\n" for line in path.read_text().splitlines()
                                if not line.startswith("security_archive")))
        versions.load(path)
    with pytest.raises(InputError, match=r"suites\[1\]: '\.\./etc' is not a Debian suite"):
        versions.load(write(tmp_path, "x-1", suites=["bookworm-security", "../etc"]))
    with pytest.raises(InputError, match="suites: must be a list of suite names"):
        versions.load(write(tmp_path, "x-1", suites=[]))


def test_a_size_no_deb_has_is_refused(tmp_path):
    with pytest.raises(InputError, match=r"x-1.toml: size: 100000000000000000000 is not a "
                                         r"size in bytes \(0 to \d+\)"):
        versions.load(write(tmp_path, "x-1", size=10 ** 20))


def test_a_descriptor_that_is_not_utf8_is_an_input_error(tmp_path):
    path = write(tmp_path, "x-1")
    path.write_bytes(path.read_bytes() + b"# caf\xe9\n")
    with pytest.raises(InputError, match=r"x-1.toml: not UTF-8 text \(byte 0xe9 at offset"):
        versions.load(path)


def test_repository_descriptors_follow_their_users_newest_upload():
    """Every Debian release's kernel series is a version (bullseye's 6.1 is not
    served: README), pinned from the suites its users take the kernel from."""
    pinned = {v.name: (v.release, v.suite, v.package) for v in versions.all_versions()}
    assert pinned == {
        "bullseye-5.10": ("bullseye", "bullseye-security", "linux-source-5.10"),
        "bookworm-6.1": ("bookworm", "bookworm-security", "linux-source-6.1"),
        "bookworm-6.12": ("bookworm", "bookworm-security", "linux-source-6.12"),
        "trixie-6.12": ("trixie", "trixie-security", "linux-source-6.12"),
        "sid-7.2": ("sid", "sid", "linux-source-7.2"),
        "experimental-7.3": ("experimental", "experimental", "linux-source-7.3")}


def test_repository_descriptors_say_which_fixes_ship():
    ships = {v.name: v.ships for v in versions.all_versions()}
    assert ships["bookworm-6.1"] == ("unsigned", "test")
    assert ships["bullseye-5.10"] == ("unsigned",)  # and no TAINT_TEST at all
    assert ships["trixie-6.12"] == ("unsigned", "test", "livepatch")
    # decided by looking (inspect on the fetched trees, test_trees.py)
    assert ships["bookworm-6.12"] == ("unsigned", "test", "livepatch")


@pytest.mark.parametrize("verb", [["versions"], ["versions", "--outdated"],
                                  ["versions", "--repin", "deep-1.0"]])
def test_a_deeply_nested_descriptor_is_a_named_refusal(tmp_path, taintport, verb):
    """200,000 nested arrays: tomllib recurses past Python's limit; every verb
    that reads versions/ names the file and exits 2, no traceback."""
    folder = tmp_path / "versions"
    folder.mkdir()
    (folder / "deep-1.0.toml").write_text("a = " + "[" * 200_000 + "\n")
    proc = taintport(*verb, "--versions-dir", folder)
    assert proc.returncode == 2
    assert f"{folder / 'deep-1.0.toml'}: cannot read version descriptor: nested too deeply" \
        in proc.stderr
    assert "Traceback" not in proc.stderr


def test_a_fifo_or_a_huge_file_in_versions_is_refused_without_waiting(tmp_path):
    fifo = tmp_path / "fifo-1.0.toml"
    os.mkfifo(fifo)
    with pytest.raises(InputError, match="not a regular file"):
        versions.load(fifo)
    huge = tmp_path / "huge-1.0.toml"
    huge.write_text("# " + "x" * versions.MAX_DESCRIPTOR + "\n")
    with pytest.raises(InputError, match="a version descriptor is a few KB"):
        versions.load(huge)
