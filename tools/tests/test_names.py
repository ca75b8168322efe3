# SPDX-License-Identifier: GPL-2.0
"""Names used as paths are checked first: nothing is created outside the cache.

A version name names a lock, a tree and a build dir; a descriptor's fields
name a .deb and a private apt configuration. docs/faults.md ("Inputs") maps
each case here.
"""

import re

import pytest

from taintport import names
from taintport.cache import Cache
from taintport.errors import InputError
from taintport.tree import versions

from test_versions import write




# 4. a version name that is a path

@pytest.mark.parametrize("verb", ["build", "boot", "apply"])
@pytest.mark.parametrize("name", ["../../outside/data", "{tmp}/outside/data", "a/b"])
def test_a_version_that_is_a_path_touches_nothing(tmp_path, verb, name, taintport):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "data.lock").write_text("a file that held data\n")
    proc = taintport(verb, "--version", name.format(tmp=tmp_path),
                     "--variant", "upstream")
    assert proc.returncode == 2
    assert "unknown version(s)" in proc.stderr and "Traceback" not in proc.stderr
    assert (outside / "data.lock").read_text() == "a file that held data\n"
    assert [p.name for p in outside.iterdir()] == ["data.lock"]
    assert not (tmp_path / "cache" / "locks").exists(), "no lock before the name is known"


@pytest.mark.parametrize("name", ["../x", "/tmp/x", "a/b", "bookworm\n-6.1", ""])
def test_a_lock_is_named_only_by_a_version_name(tmp_path, name):
    with pytest.raises(InputError, match="is not a version name"):
        with Cache(tmp_path / "cache").locked(name):
            pass
    assert not list(tmp_path.rglob("*.lock"))


# 5. descriptor fields

@pytest.mark.parametrize("field, value", [
    ("package", "../../outside/x"),
    ("suite", "../../../outside/apt-escape"),
    ("release", "../bookworm"),
    ("security_archive", "http://security.debian.org/debian-security [trusted=yes]"),
    ("version", "1.0/../../../outside/x"),
    ("component", "main non-free"),
    ("archive", "http://deb.debian.org/debian [trusted=yes]"),
    ("distribution", "../debian"),
    ("name", "../x-1"),
    ("sha256", 123),
    ("size", "big"),
])
def test_a_descriptor_field_is_checked_naming_file_and_field(tmp_path, field, value):
    path = write(tmp_path, "x-1", **{field: value})
    with pytest.raises(InputError) as err:
        versions.load(path)
    assert str(err.value).startswith(f"{path}: {field}: {value!r} is not ")


def test_a_bad_descriptor_stops_every_verb_that_reads_versions(tmp_path):
    write(tmp_path, "x-1", package="../../outside/x")
    with pytest.raises(InputError, match=r"x-1.toml: package: '../../outside/x'"):
        versions.select(["x-1"], tmp_path)
    assert not (tmp_path / "outside").exists()


# 6. each name checked in full, one kind of value only (issue 34 item 8's mutations)

PATH_LIKE = ["..", ".", ".hidden", "a/b", "/etc", "a\nb", "", "A-1", "-x"]


@pytest.mark.parametrize("value", PATH_LIKE)
def test_a_version_name_that_is_a_path_or_hidden_is_refused(value):
    with pytest.raises(InputError, match=r"where: .* is not a version name"):
        names.version_name(value, "where")


@pytest.mark.parametrize("pattern", [names.SUITE, names.COMPONENT, names.DISTRIBUTION],
                         ids=["suite", "component", "distribution"])
@pytest.mark.parametrize("value", PATH_LIKE)
def test_a_suite_that_is_a_path_or_hidden_is_refused(pattern, value):
    with pytest.raises(InputError, match="is not a suite"):
        names.check(pattern, value, "where", "a suite")


@pytest.mark.parametrize("value", ["linux/source", "../linux-source-6.1", "/linux",
                                   ".linux", "linux source", "l"])
def test_a_package_name_that_is_a_path_is_refused(value):
    with pytest.raises(InputError, match="is not a Debian package name"):
        names.package(value)


@pytest.mark.parametrize("value", ["6.1.192-3/../x", "../6.1", "6.1 3", ":6.1"])
def test_a_deb_version_that_is_a_path_is_refused(value):
    with pytest.raises(InputError, match="is not a Debian version"):
        names.deb_version(value)


# what str() of each would make a name that passes: the check takes strings only
@pytest.mark.parametrize("value", [61, 6.1, True, None, ["bookworm-6.1"], b"bookworm-6.1",
                                   {"bookworm-6.1": 1}])
@pytest.mark.parametrize("check", [names.version_name, names.package, names.deb_version])
def test_a_name_that_is_not_a_string_is_refused(check, value):
    with pytest.raises(InputError, match=f"where: {re.escape(repr(value))} is not "):
        check(value, "where")


def test_each_check_accepts_the_names_debian_uses():
    assert names.version_name("bookworm-6.1") == "bookworm-6.1"
    assert names.package("linux-source-6.1") == "linux-source-6.1"
    assert names.deb_version("1:7.3~rc7-1~exp1") == "1:7.3~rc7-1~exp1"
    assert names.check(names.SUITE, "bookworm-security", "where", "a suite")


# 7. a name longer than a file name may be (ENAMETOOLONG was a traceback)

@pytest.mark.parametrize("check, longest", [
    (names.version_name, "b" * names.NAME_MAX), (names.package, "l" * names.NAME_MAX),
    (names.deb_version, "1" * names.NAME_MAX)])
def test_a_name_longer_than_name_max_is_refused_and_not_quoted_whole(check, longest):
    assert check(longest, "where") == longest
    with pytest.raises(InputError, match=r"where: '\w{59}\.\.\. \(5002 characters as "
                       rf"written\) is not .*at most {names.NAME_MAX} characters") as err:
        check(longest[0] * 5000, "where")
    assert len(str(err.value)) < 300
    with pytest.raises(InputError, match=r"where: 1000+\.\.\. \(202 characters as written\)"):
        check(10 ** 201, "where")
