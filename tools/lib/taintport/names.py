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

# versions/<name>.toml: a distribution's suite and kernel series, bookworm-6.1
VERSION_NAME = re.compile(r"[a-z0-9][a-z0-9.+-]*")
# Debian Policy 5.6.1 (Source) and 5.6.7 (Package): lower case, digits, + - .
PACKAGE = re.compile(r"[a-z0-9][a-z0-9+.-]+")
# Debian Policy 5.6.12 (Version): [epoch:]upstream[-revision]
DEB_VERSION = re.compile(r"([0-9]+:)?[0-9][A-Za-z0-9.+~-]*")
# suite and component names in a Release file and on a sources.list line
SUITE = re.compile(r"[a-z0-9][a-z0-9.+-]*")
COMPONENT = re.compile(r"[a-z0-9][a-z0-9.+-]*")
DISTRIBUTION = re.compile(r"[a-z][a-z0-9-]*")
# an archive URL on one sources.list line: no space, no option brackets
ARCHIVE = re.compile(r"(https?|file):[^\s\[\]#]+")
SHA256 = re.compile(r"[0-9a-f]{64}")


def check(pattern: re.Pattern[str], value: object, where: str, what: str) -> str:
    """value if it is a string matching pattern in full, else an InputError naming where."""
    if not isinstance(value, str) or not pattern.fullmatch(value):
        raise InputError(f"{where}: {value!r} is not {what}")
    return value


def version_name(value: object, where: str = "version name") -> str:
    return check(VERSION_NAME, value, where,
                 "a version name (lower case, digits, '.', '+', '-'; like bookworm-6.1)")


def package(value: object, where: str = "package") -> str:
    return check(PACKAGE, value, where, "a Debian package name")


def deb_version(value: object, where: str = "version") -> str:
    return check(DEB_VERSION, value, where, "a Debian version")
