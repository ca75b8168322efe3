# SPDX-License-Identifier: GPL-2.0
"""spatch's answers, kept by everything they depend on (ccache's idea, for the judge).

The same spatch, semantic patch, -D values and input bytes give the same
output, and the layer asks the same question again and again: `inspect` then
`apply` on one tree, the rerun after an interrupted run, `regen` on every
pinned tree, each variant of the matrix. A run costs 60 ms on a small file and
seconds on a big one, most of the small one's before spatch reads a line (its
Python probe starts python3 twice, sh, ldd and ldconfig). make check ran
spatch 3,953 times on 720 distinct inputs: 493 of its 598 s of spatch went to
questions already answered.

An answer is stored under the SHA-256 of what spatch reads: the executable
(its path, device, inode, size and modification time: an upgrade or another
spatch first on PATH is another spatch), the command line (the -o file by its
role, not its name), the bytes of the semantic patch and of every input file,
the .cocciconfig files spatch reads (the user's and the working folder's) and
the COCCI* variables; not the working folder's name (a scratch copy's is new
each run: the files are named relative to it and their bytes are in). Only a
clean run is kept; a failing one runs again each time. An entry carries its
key and the SHA-256 of its body: one that does not read back whole, or answers
another key, is a miss, never an answer.

Kept in the cache (Cache.spatch_answers(): cache/spatch/), LIMIT entries and LIMIT_BYTES at most,
the least recently used dropped first; a cache that cannot be written only
means spatch runs again next time.
"""
import base64
import hashlib
import json
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

from taintport import atomic

FORMAT = "taintport spatch answer 1"
LIMIT = 4096
LIMIT_BYTES = 64 << 20
ENTRY = re.compile(r"[0-9a-f]{64}\.json")
CONFIG = ".cocciconfig"  # spatch reads $HOME's and the working folder's


@dataclass(frozen=True)
class Answer:
    """What one clean spatch run said, and the file it wrote with -o (None: none)."""
    returncode: int
    stdout: str
    stderr: str
    out: bytes | None


def _identity(env: Mapping[str, str]) -> list[str] | None:
    found = shutil.which("spatch", path=env.get("PATH"))
    if found is None:
        return None
    real = os.path.realpath(found)
    info = os.stat(real)
    return [real, str(info.st_dev), str(info.st_ino), str(info.st_size),
            str(info.st_mtime_ns)]


def _bytes_or_none(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None


def key(cmd: Sequence[str], cocci: Path, files: Sequence[str], cwd: Path,
        env: Mapping[str, str]) -> str | None:
    """The key of a spatch run, or None when it cannot be told (no spatch on
    PATH, a file that cannot be read): that run is only run."""
    digest = hashlib.sha256()

    def field(value: bytes | str | None) -> None:
        if value is None:
            digest.update(b"-")
            return
        data = value.encode() if isinstance(value, str) else value
        digest.update(b"%d:" % len(data) + data)

    try:
        identity = _identity(env)
        if identity is None:
            return None
        parts: list[bytes | str | None] = [
            FORMAT, *identity, *cmd, cocci.read_bytes(),
            _bytes_or_none(Path(env.get("HOME", "/nonexistent")) / CONFIG),
            _bytes_or_none(cwd / CONFIG),
            *(f"{k}={v}" for k, v in sorted(env.items()) if k.startswith("COCCI"))]
        for part in parts:
            field(part)
        for rel in files:
            field(rel)
            field((cwd / rel).read_bytes())
    except OSError:
        return None
    return digest.hexdigest()


def _body(answer: Answer) -> dict[str, object]:
    return {"returncode": answer.returncode, "stdout": answer.stdout, "stderr": answer.stderr,
            "out": None if answer.out is None else base64.b64encode(answer.out).decode()}


def _seal(body: dict[str, object]) -> str:
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


def recall(where: Path, name: str) -> Answer | None:
    """The answer kept in where under key name, or None (none, or not whole)."""
    path = where / f"{name}.json"
    try:
        doc = json.loads(path.read_bytes())
        body = doc["body"]
        if doc["key"] != name or doc["sha256"] != _seal(body):
            return None
        answer = Answer(int(body["returncode"]), str(body["stdout"]), str(body["stderr"]),
                        None if body["out"] is None else base64.b64decode(body["out"],
                                                                          validate=True))
    except (OSError, ValueError, KeyError, TypeError):
        return None
    try:
        os.utime(path)  # used: the last to go
    except OSError:
        pass
    return answer


def keep(where: Path, name: str, answer: Answer) -> None:
    """Store answer in where under key name; a cache that cannot take it is
    left as it is."""
    body = _body(answer)
    data = json.dumps({"key": name, "body": body, "sha256": _seal(body)}).encode()
    try:
        where.mkdir(parents=True, exist_ok=True)
        atomic.replace_file(where / f"{name}.json", data)
        prune(where)
    except OSError:
        pass


def prune(where: Path) -> None:
    """Down to three quarters of LIMIT and LIMIT_BYTES when over either, the
    least recently used first; what killed runs left half-written goes too
    (never a live run's: atomic.sweep_temps)."""
    atomic.sweep_temps(where)
    entries = []
    with os.scandir(where) as scan:
        for entry in scan:
            if ENTRY.fullmatch(entry.name) and entry.is_file(follow_symlinks=False):
                info = entry.stat(follow_symlinks=False)
                entries.append((info.st_mtime_ns, info.st_size, entry.path))
    total = sum(size for _, size, _ in entries)
    if len(entries) <= LIMIT and total <= LIMIT_BYTES:
        return
    entries.sort()
    while entries and (len(entries) > LIMIT * 3 // 4 or total > LIMIT_BYTES * 3 // 4):
        _, size, path = entries.pop(0)
        Path(path).unlink(missing_ok=True)
        total -= size
