# SPDX-License-Identifier: GPL-2.0
"""Patch files a maintainer can use as they are: DEP-3 quilt patches, stable mails.

One fix carried onto one tree becomes either a quilt patch with a DEP-3
header (https://dep-team.pages.debian.net/deps/dep3/) in the shape the
Debian kernel team gives its upstream cherry-picks, or a mail for
stable@vger.kernel.org in `git format-patch` shape that can be sent as it is
(Documentation/process/stable-kernel-rules.rst, option 3). docs/patch-headers.md
lists the rules and where they come from.

Both keep upstream's whole commit message, trailers included. Where the
change is upstream's word for word, the header says `Origin: upstream`;
where it had to be adapted (another tree's code, commits folded together, only
the pieces the tree lacks), `Origin: backport` and a note in
modifying-patches.rst's place, `[Name: Backported to X.Y: why]`, followed by
the sender's Signed-off-by. The name and the sign-off come from an Identity;
without one both are left out (the command line says so).
"""
import hashlib
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from email import policy
from email.message import EmailMessage
from pathlib import Path
from typing import Sequence

from taintport.errors import InputError
from taintport.layer.model import FixPatch, PieceState
from taintport.process import require, run
from taintport.tree.versions import Version

SEPARATOR = "---\n"
STABLE_LIST = "stable@vger.kernel.org"
COMMIT_URL = "https://git.kernel.org/linus/"
# "Name <mail>": what --signoff takes and a Signed-off-by line carries
IDENTITY = re.compile(r"([^<>\s](?:[^<>\n]*[^<>\s])?)\s*<([^<>\s@]+@[^<>\s@]+)>")
# a trailer line of a commit message that names a person
SIGNER = re.compile(r"^Signed-off-by: (.+)$", re.M)
WIDTH = 72  # a note's lines, as a commit message wraps


@dataclass(frozen=True)
class Identity:
    """Who sends or carries a patch: the backport note's name, the Signed-off-by."""
    name: str
    mail: str

    def __str__(self) -> str:
        return f"{self.name} <{self.mail}>"


def parse_identity(text: str, where: str = "--signoff") -> Identity:
    match = IDENTITY.fullmatch(text.strip())
    if not match:
        raise InputError(f"{where}: {text!r} is not 'Name <mail@example.org>'")
    return Identity(match.group(1), match.group(2))


def git_identity(where: Path) -> Identity | None:
    """git's user.name and user.email as git sees them in `where` (its repository's
    configuration, else the user's); None when either is unset or git is missing."""
    values = []
    for key in ("user.name", "user.email"):
        try:
            proc = subprocess.run(["git", "config", "--get", key], cwd=where,
                                  capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            return None
        values.append(proc.stdout.strip() if proc.returncode == 0 else "")
    if not all(values):
        return None
    return parse_identity(f"{values[0]} <{values[1]}>", "git config user.name/user.email")


def url(fix_patch: FixPatch) -> str:
    return COMMIT_URL + fix_patch.fix.commit


def upstream_message(fix_patch: FixPatch) -> str:
    """The whole message after the subject, trailers included."""
    return fix_patch.fix.info.upstream.body.strip("\n")


def signers(fix_patch: FixPatch) -> tuple[str, ...]:
    return tuple(SIGNER.findall(upstream_message(fix_patch)))


def with_params(text: str, fix_patch: FixPatch) -> str:
    """text with the values the fix was carried with ({letter})."""
    for name, value in fix_patch.params.items():
        text = text.replace("{" + name + "}", value)
    return text


def word_for_word(fix_patch: FixPatch) -> bool:
    """The change is upstream's commit as it is: one commit, all of it, every
    hunk its text."""
    return not (fix_patch.adapted or fix_patch.fix.info.upstream.also or
                any(p.state is PieceState.PRESENT for p in fix_patch.pieces))


def touched(diff: str) -> list[str]:
    return re.findall(r"^\+\+\+ b/(\S+)", diff, re.M)


def reasons(fix_patch: FixPatch) -> list[str]:
    """Why the change is not upstream's word for word, one reason each."""
    info = fix_patch.fix.info
    said = []
    if info.upstream.also:
        said.append(with_params(info.folded, fix_patch) if info.folded else
                    "with " + ", ".join(sha[:12] for sha in info.upstream.also) + " folded in")
    kept = [p for p in fix_patch.pieces if p.state is PieceState.PRESENT]
    if kept:
        files = touched(fix_patch.diff)
        named = ", ".join(files[:-1]) + " and " + files[-1] if len(files) > 1 else files[0]
        said.append(f"this tree has the rest of it, so only {named} "
                    + ("changes" if len(files) == 1 else "change"))
    said += list(fix_patch.adapted)
    return said


def note(fix_patch: FixPatch, series: str, identity: Identity | None) -> str:
    """[Name: Backported to 6.1: why] (modifying-patches.rst, as the Debian kernel
    team writes it), wrapped with one-space continuation lines; "" for a change
    that is upstream's word for word."""
    if word_for_word(fix_patch):
        return ""
    who = f"{identity.name}: " if identity else ""
    return "[" + wrap(f"{who}Backported to {series}: " + "; ".join(reasons(fix_patch)),
                      WIDTH, " ") + "]"


def origin(fix_patch: FixPatch) -> str:
    kind = "upstream" if word_for_word(fix_patch) else "backport"
    return f"{kind}, {url(fix_patch)}"


def message(fix_patch: FixPatch, series: str, identity: Identity | None) -> str:
    """Upstream's message, then the backport note and the sender's Signed-off-by."""
    lines = [upstream_message(fix_patch)]
    backport = note(fix_patch, series, identity)
    if backport:
        lines.append(backport)
    if identity and (backport or str(identity) not in signers(fix_patch)):
        lines.append(f"Signed-off-by: {identity}")
    return "\n".join(lines) + "\n"


def patch_file(fix_patch: FixPatch, series: str, identity: Identity | None) -> str:
    """The DEP-3 quilt patch of one fix for a tree of `series` ("6.1"): the
    kernel team's cherry-pick shape, Origin and Forwarded in the first header."""
    up = fix_patch.fix.info.upstream
    head = [f"From: {up.author}"] + ([f"Date: {up.date}"] if up.date else [])
    # Forwarded: the change is upstream's; nothing is left to forward upstream
    head += [f"Subject: {up.subject}", f"Origin: {origin(fix_patch)}",
             "Forwarded: not-needed", ""]
    return ("\n".join(head) + "\n" + message(fix_patch, series, identity)
            + SEPARATOR + fix_patch.diff)


@dataclass(frozen=True)
class Change:
    """What one carried fix does to the files it touches, on top of the fixes
    before it: {path: bytes} before and after, and each file's git mode."""
    before: dict[str, bytes]
    after: dict[str, bytes]
    modes: dict[str, str]

    def index(self) -> dict[str, str]:
        """{path: "<blob before>..<blob after> <mode>"}: a mail's index lines."""
        return {rel: f"{blob(self.before[rel])}..{blob(self.after[rel])} {self.modes[rel]}"
                for rel in self.before}


@dataclass(frozen=True)
class Seen:
    """A boot that showed a fix's bug, as a results folder records it."""
    fix: str
    series: str       # the kernel series booted, "6.1"
    kernel: str       # which kernel: "Debian bookworm's 6.1.176-1, the distribution's binary"
    run: str          # the results run it came from: its start and folder


def who_has_it(users: Sequence[Version]) -> str:
    """Who runs the bug: the distribution kernels of this series whose pinned
    source lacks the fix (versions/), each by its upload; "" for none."""
    if not users:
        return ""
    kernels = [f"{v.distribution.capitalize()} {v.release} ({v.package} {v.version}, "
               f"{v.suite})" for v in users]
    return ("Who has it: the users of " + ", ".join(kernels)
            + ", whose source as published lacks it.")


def booted(bug: str, seen: Sequence[Seen]) -> str:
    """What the results runs given showed, by run; "" for none."""
    runs: dict[str, list[str]] = {}
    for boot in seen:
        runs.setdefault(boot.run, []).append(boot.kernel)
    return " ".join(f"Booted with the bug seen ({bug}) in {run}: " + "; ".join(kernels) + "."
                    for run, kernels in runs.items())


def mail(fix_patch: FixPatch, branch: str, identity: Identity | None, change: Change,
         diff: str, users: Sequence[Version] = (), seen: Sequence[Seen] = ()) -> str:
    """One fix as a mail for the stable list, `git format-patch` shaped, for a
    stable branch ("6.1.y"), carrying diff (the branch's own hunk). Headers by
    the standard library's email (RFC 2047 for a name that is not ASCII,
    folded as RFC 5322 says): To the list, Cc upstream's author and signers.
    Below the ---: why a stable tree should take it, who has the bug (users)
    and what booted kernels showed (seen: only from a results run, named).
    change's index lines let `git am -3` fall back to a merge."""
    up = fix_patch.fix.info.upstream
    sender = str(identity) if identity else None
    cc = [who for who in dict.fromkeys([up.author, *signers(fix_patch)]) if who != sender]
    why = [fix_patch.fix.info.stable] if fix_patch.fix.info.stable else []
    why += [wrap(text, WIDTH, "") for text in (who_has_it(users),
                                                booted(fix_patch.fix.info.bug, seen)) if text]
    head = EmailMessage(policy=policy.default)
    # git format-patch's first line: the commit, and the date git always writes there
    head.set_unixfrom(f"From {up.commit} Mon Sep 17 00:00:00 2001")
    head["From"] = up.author
    if up.date:
        head["Date"] = up.date
    head["Subject"] = f"[PATCH {branch}] {up.subject}"
    head["To"] = STABLE_LIST
    if cc:
        head["Cc"] = cc
    head.set_content(f"commit {up.commit} upstream.\n\n"
                     + message(fix_patch, branch.removesuffix(".y"), identity)
                     + SEPARATOR + "".join(part + "\n\n" for part in why)
                     + diffstat(diff) + "\n\n" + git_diff(diff, change.index()), cte="8bit")
    # bytes: a str generator would turn an 8bit body into base64
    return head.as_bytes(unixfrom=True).decode()


def wrap(text: str, width: int, indent: str) -> str:
    words, lines, line = text.split(), [], ""
    for word in words:
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    lines.append(line)
    return ("\n" + indent).join(lines)


def diffstat(diff: str) -> str:
    """git's diffstat lines for a unified diff."""
    counts: dict[str, list[int]] = {}
    name = None
    for line in diff.splitlines():
        if line.startswith("+++ "):
            name = line[4:].split("\t")[0].split("/", 1)[1]
            counts[name] = [0, 0]
        elif name and line.startswith("+"):
            counts[name][0] += 1
        elif name and line.startswith("-") and not line.startswith("--- "):
            counts[name][1] += 1
    width = max(len(n) for n in counts)
    rows = [f" {n.ljust(width)} | {a + d} {'+' * a}{'-' * d}" for n, (a, d) in counts.items()]
    added = sum(a for a, _ in counts.values())
    removed = sum(d for _, d in counts.values())
    files = f"{len(counts)} file{'s' if len(counts) != 1 else ''} changed"
    rows.append(f" {files}, {added} insertion{'s' if added != 1 else ''}(+), "
                f"{removed} deletion{'s' if removed != 1 else ''}(-)")
    return "\n".join(rows)


def git_diff(diff: str, index: dict[str, str]) -> str:
    """A -p1 unified diff with git's "diff --git" and "index" lines before each file."""
    def header(match: re.Match[str]) -> str:
        path = match.group(1)
        line = f"index {index[path]}\n" if path in index else ""
        return f"diff --git a/{path} b/{path}\n{line}--- a/{path}\n"
    return re.sub(r"^--- a/(\S+)\n", header, diff, flags=re.M)


def blob(data: bytes) -> str:
    """git's object name of a file's content (git hash-object)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def changes(tree: Path, carried: tuple[FixPatch, ...]) -> list[Change]:
    """For each carried fix, its Change: each fix's diff applies on top of the
    ones before it, as the layer made them."""
    require("patch", "patch")
    found = []
    with tempfile.TemporaryDirectory(prefix="taintport-index-") as scratch_name:
        scratch = Path(scratch_name)
        for fix_patch in carried:
            paths = touched(fix_patch.diff)
            for rel in paths:
                if not (scratch / rel).exists():
                    (scratch / rel).parent.mkdir(parents=True, exist_ok=True)
                    shutil.copyfile(Path(tree) / rel, scratch / rel)
            before = {rel: (scratch / rel).read_bytes() for rel in paths}
            diff = scratch / ".fix.diff"
            diff.write_text(fix_patch.diff)
            run(["patch", "-p1", "--fuzz=0", "--no-backup-if-mismatch", "-s", "-i", str(diff)],
                stage="apply", cwd=scratch)
            modes = {rel: "100755" if (Path(tree) / rel).stat().st_mode & 0o111 else "100644"
                     for rel in paths}
            found.append(Change(before, {rel: (scratch / rel).read_bytes() for rel in paths},
                                modes))
    return found
