# SPDX-License-Identifier: GPL-2.0
"""spatch, run the way the layer needs it: the judge of every piece, and its fixer.

Every semantic patch under semantic-patches/ has a `taintport` virtual rule
set (semantic-patches/README.md): with -D taintport it prints one line per
verdict of its own rules,

    taintport: present <rule> <file>:<line>:<col>-<line>:<col>
    taintport: missing <rule> <file>:<line>:<col>-<line>:<col> <message>
    taintport: taken <rule> <file>:<line>:<col>-<line>:<col> <message>

and, with -D patch too, one `taintport: fired <rule> <file>:<line>` line per
rule that changed code. A plain spatch or `make coccicheck` run never prints
them; its report mode prints the same messages at the same places, so what
the layer says about a tree is what the semantic patches say.
"""
import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from taintport.family import SEMANTIC_PATCHES
from taintport.layer.model import LayerError, Params, Span
from taintport.process import orphan_proof

SPATCH_TIMEOUT = 600
# spatch embeds the python3 it finds on PATH unless told which: ours is
# Debian's (a pyenv shim first on PATH also cost a second per run).
SPATCH_PYTHON = ("--python", "/usr/bin/python3")
SPATCH_FAILURES = ("EXN", "An error occurred", "semantic error", "parse error:",
                   "Fatal error", "Traceback")
VERDICT = re.compile(r"^taintport: (present|missing|taken) (\w+) (.+?):(\d+):(\d+)-(\d+):(\d+)"
                     r"(?: (.*))?$", re.M)
NOTHING_CHANGED = "-o can not be applied because there are no modified files"
FIRED = re.compile(r"^taintport: fired (\w+) ", re.M)


@dataclass(frozen=True)
class Verdict:
    """One verdict line: what a rule of the semantic patch found, and where."""
    kind: str                      # "present", "missing" or "taken"
    rule: str
    path: str
    span: Span
    message: str = ""


@dataclass(frozen=True)
class Said:
    verdicts: tuple[Verdict, ...]
    fired: frozenset[str]


def environment(piece: str, shown: str) -> dict[str, str]:
    """The run's environment with a HOME: spatch (OCaml) ends in "Fatal error:
    exception Not_found" without one (cron, env -i, a service). A HOME that is
    unset is the user's home from the password database, as a login sets it."""
    env = dict(os.environ)
    if "HOME" not in env:
        home = os.path.expanduser("~")
        if home == "~":
            raise LayerError(piece, shown, "HOME set (spatch needs it, and this user has no "
                             "home in the password database either)")
        env["HOME"] = home
    return env


def run(cocci: str, files: Iterable[str], cwd: Path, params: Params, piece: str,
        out: Path | None = None) -> Said:
    """spatch with cocci on files (relative to cwd): the verdicts, and with
    out (one file) the rules that fired while patching it into out. spatch
    matches the files of one run as one group (a rule's match in one
    changes what depends on it in another): give several only when that is
    what is meant."""
    files = list(files)
    defines = ["-D", "taintport", *(a for name, value in sorted(params.items())
                                    for a in ("-D", f"{name}={value}"))]
    if out is not None:
        defines = ["-D", "patch", *defines, "-o", str(out)]
    cmd = ["spatch", *SPATCH_PYTHON, "--sp-file", str(SEMANTIC_PATCHES / cocci), *defines,
           "--no-includes", "--include-headers", "--very-quiet", *files]
    shown = ", ".join(files)
    try:
        proc = subprocess.run(orphan_proof(cmd), capture_output=True, text=True,
                              timeout=SPATCH_TIMEOUT, cwd=cwd, env=environment(piece, shown))
    except FileNotFoundError:
        raise LayerError(piece, shown, "spatch installed (Debian: coccinelle)") from None
    except subprocess.TimeoutExpired:
        raise LayerError(piece, shown, f"spatch to finish in {SPATCH_TIMEOUT}s") from None
    # spatch exits 0 even when a file failed to transform: read what it said.
    said = proc.stdout + proc.stderr
    if out is not None and proc.returncode == 255 and NOTHING_CHANGED in said:
        proc.returncode = 0  # -o with nothing to write: the piece was not missing
    failed = [line for line in said.splitlines() if any(f in line for f in SPATCH_FAILURES)]
    if proc.returncode != 0 or failed:
        raise LayerError(piece, shown, f"spatch {cocci} to run cleanly, got: "
                         + ("; ".join(failed) or f"exit {proc.returncode}"))
    verdicts = tuple(Verdict(m[1], m[2], m[3], Span(int(m[4]), int(m[5]), int(m[6]), int(m[7])),
                             m[8] or "")
                     for m in VERDICT.finditer(proc.stdout))
    return Said(verdicts, frozenset(m[1] for m in FIRED.finditer(proc.stdout)))
