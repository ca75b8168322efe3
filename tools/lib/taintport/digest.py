# SPDX-License-Identifier: GPL-2.0
"""Digests of files and folders: what a pin is checked against and a cell is keyed on;
and whether two files hold the same bytes.

A leaf: the fetch, kernel and run stages all hash what they read, and none of
them imports another stage for it.
"""
import hashlib
from pathlib import Path


def sha256_of(path: Path | str) -> str:
    """The SHA256 of one file, read in blocks (a linux-source .deb is 140 MB)."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def tree_digest(folder: Path | str) -> str:
    """One SHA256 over every file below folder, names included (not build
    output: __pycache__ and out/)."""
    h = hashlib.sha256()
    for f in sorted(p for p in Path(folder).rglob("*") if p.is_file()
                    and "__pycache__" not in p.parts and "out" not in p.parts):
        h.update(str(f.relative_to(folder)).encode() + b"\0" + f.read_bytes())
    return h.hexdigest()


def same_bytes(a: Path, b: Path) -> bool:
    """a and b hold the same bytes, read in blocks side by side."""
    with open(a, "rb") as left, open(b, "rb") as right:
        while True:
            block = left.read(1 << 20)
            if block != right.read(1 << 20):
                return False
            if not block:
                return True
