# SPDX-License-Identifier: GPL-2.0
"""The names taintport allows, checked before any of them becomes part of a path.

A version name, a Debian package, suite or version string each
end up in a file name (a lock, a tree, a .deb, an apt configuration, a
results folder). Each is checked here against what taintport or Debian
allows, so that `../x`, `/etc` or a control character is an input error
naming where it came from, never a path outside the cache or the results.
A variant is a name of test-matrix/variants.toml's table (tree/variants.py).
"""
import re

from taintport.errors import InputError

# The longest name taintport takes: each is part of a file name, and two of
# them with an architecture (<package>_<version>_amd64.deb) stay below the
# 255 bytes a file name may have (a longer one was ENAMETOOLONG, not an error
# naming it). Debian's longest package and version names are about 60.
NAME_MAX = 100
# versions/<name>.toml: a distribution's suite and kernel series, bookworm-6.1
VERSION_NAME = re.compile(rf"[a-z0-9][a-z0-9.+-]{{0,{NAME_MAX - 1}}}")
# Debian Policy 5.6.1 (Source) and 5.6.7 (Package): lower case, digits, + - .
PACKAGE = re.compile(rf"[a-z0-9][a-z0-9+.-]{{1,{NAME_MAX - 1}}}")
# Debian Policy 5.6.12 (Version): [epoch:]upstream[-revision]
DEB_VERSION = re.compile(rf"(?=.{{1,{NAME_MAX}}}\Z)([0-9]+:)?[0-9][A-Za-z0-9.+~-]*")
# suite and component names in a Release file and on a sources.list line
SUITE = re.compile(rf"[a-z0-9][a-z0-9.+-]{{0,{NAME_MAX - 1}}}")
COMPONENT = SUITE
DISTRIBUTION = re.compile(rf"[a-z][a-z0-9-]{{0,{NAME_MAX - 1}}}")
# an archive URL on one sources.list line: no space, no option brackets
ARCHIVE = re.compile(r"(https?|file):[^\s\[\]#]+")
SHA256 = re.compile(r"[0-9a-f]{64}")


def check(pattern: re.Pattern[str], value: object, where: str, what: str) -> str:
    """value if it is a string matching pattern in full, else an InputError naming where."""
    if not isinstance(value, str) or not pattern.fullmatch(value):
        shown = repr(value)
        if len(shown) > 120:  # a name of 5,000 characters is not quoted whole
            shown = f"{shown[:60]}... ({len(shown)} characters as written)"
        raise InputError(f"{where}: {shown} is not {what}")
    return value


def version_name(value: object, where: str = "version name") -> str:
    return check(VERSION_NAME, value, where,
                 f"a version name (lower case, digits, '.', '+', '-'; like bookworm-6.1; "
                 f"at most {NAME_MAX} characters)")


def package(value: object, where: str = "package") -> str:
    return check(PACKAGE, value, where, f"a Debian package name (at most {NAME_MAX} characters)")


def deb_version(value: object, where: str = "version") -> str:
    return check(DEB_VERSION, value, where, f"a Debian version (at most {NAME_MAX} characters)")
