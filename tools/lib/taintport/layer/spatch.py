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
from taintport.layer import spatch_cache
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
OUT = "<-o file>"  # the output file by its role, in the key of a run (spatch_cache)


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
        answers: Path, out: Path | None = None) -> Said:
    """spatch with cocci on files (relative to cwd): the verdicts, and with
    out (one file) the rules that fired while patching it into out. spatch
    matches the files of one run as one group (a rule's match in one
    changes what depends on it in another): give several only when that is
    what is meant. A question spatch answered cleanly before (the same
    spatch, semantic patch, options and bytes) is answered from the
    folder answers (spatch_cache), the file it wrote with -o written again."""
    files = list(files)
    defines = ["-D", "taintport", *(a for name, value in sorted(params.items())
                                    for a in ("-D", f"{name}={value}"))]
    if out is not None:
        defines = ["-D", "patch", *defines, "-o", OUT]
    sp_file = SEMANTIC_PATCHES / cocci
    args = [*SPATCH_PYTHON, "--sp-file", str(sp_file), *defines, "--no-includes",
            "--include-headers", "--very-quiet", *files]
    shown = ", ".join(files)
    env = environment(piece, shown)
    if out is not None:
        out.unlink(missing_ok=True)  # what is there afterwards is this run's
    name = spatch_cache.key(["spatch", *args], sp_file, files, cwd, env)
    answer = spatch_cache.recall(answers, name) if name else None
    asked = answer is None
    if answer is None:
        answer = _spatch(["spatch", *(str(out) if a == OUT else a for a in args)], cwd, env,
                         piece, shown, out)
    elif out is not None and answer.out is not None:
        out.write_bytes(answer.out)
    said = _said(cocci, answer, out is not None, piece, shown)  # raises: a failure is not kept
    if asked and name:
        spatch_cache.keep(answers, name, answer)
    return said


def _spatch(cmd: list[str], cwd: Path, env: dict[str, str], piece: str, shown: str,
            out: Path | None) -> spatch_cache.Answer:
    try:
        proc = subprocess.run(orphan_proof(cmd), capture_output=True, text=True,
                              timeout=SPATCH_TIMEOUT, cwd=cwd, env=env)
    except FileNotFoundError:
        raise LayerError(piece, shown, "spatch installed (Debian: coccinelle)") from None
    except subprocess.TimeoutExpired:
        raise LayerError(piece, shown, f"spatch to finish in {SPATCH_TIMEOUT}s") from None
    written = out.read_bytes() if out is not None and out.exists() else None
    return spatch_cache.Answer(proc.returncode, proc.stdout, proc.stderr, written)


def _said(cocci: str, answer: spatch_cache.Answer, patching: bool, piece: str,
          shown: str) -> Said:
    """The verdicts of a run, or LayerError when it did not run cleanly."""
    # spatch exits 0 even when a file failed to transform: read what it said.
    said = answer.stdout + answer.stderr
    returncode = answer.returncode
    if patching and returncode == 255 and NOTHING_CHANGED in said:
        returncode = 0  # -o with nothing to write: the piece was not missing
    failed = [line for line in said.splitlines() if any(f in line for f in SPATCH_FAILURES)]
    if returncode != 0 or failed:
        raise LayerError(piece, shown, f"spatch {cocci} to run cleanly, got: "
                         + ("; ".join(failed) or f"exit {returncode}"))
    verdicts = tuple(Verdict(m[1], m[2], m[3], Span(int(m[4]), int(m[5]), int(m[6]), int(m[7])),
                             m[8] or "")
                     for m in VERDICT.finditer(answer.stdout))
    return Said(verdicts, frozenset(m[1] for m in FIRED.finditer(answer.stdout)))
