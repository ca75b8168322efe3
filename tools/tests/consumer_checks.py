# SPDX-License-Identifier: GPL-2.0
"""The consumers' own checks, as the tests run them on what taintport writes.

KCIDB: Debian's python3-jsonschema (Draft 7, the validator kcidb-io itself
uses) with its format checker, against schemas/kcidb-v04_03.json. JUnit:
xmllint (libxml2-utils) against schemas/junit-10.xsd. Each schema file says
where its rules come from; docs/report-schema.md says what they demand.
"""
import datetime
import json
import re
import subprocess
import tempfile
from pathlib import Path

import jsonschema

SCHEMAS = Path(__file__).parent / "schemas"
KCIDB_SCHEMA = SCHEMAS / "kcidb-v04_03.json"
JUNIT_XSD = SCHEMAS / "junit-10.xsd"
# RFC 3339 section 5.6 (date-time); jsonschema checks it only with
# rfc3339-validator, which Debian 12 does not package, so the rule is here
RFC3339 = re.compile(r"\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})")


def format_checker():
    """Draft 7's format checker as Debian's jsonschema gives it, plus date-time.

    Its `uri` check exists only with python3-rfc3987 installed (without it
    jsonschema silently accepts any string as a URI); refuse to validate
    without it rather than pass everything."""
    checker = jsonschema.Draft7Validator.FORMAT_CHECKER
    if "uri" not in checker.checkers:
        raise AssertionError("jsonschema has no 'uri' format check: install python3-rfc3987 "
                             "(tools/install-deps)")
    checker = jsonschema.FormatChecker(list(checker.checkers))

    @checker.checks("date-time", raises=ValueError)
    def is_date_time(value):
        if not isinstance(value, str):
            return True
        if not RFC3339.fullmatch(value):
            return False
        datetime.datetime.fromisoformat(value.replace("Z", "+00:00").replace("z", "+00:00"))
        return True

    return checker


def kcidb_problems(view):
    """Every way a KCIDB document breaks the schema, one line each ("" path: the top)."""
    schema = json.loads(KCIDB_SCHEMA.read_text())
    validator = jsonschema.Draft7Validator(schema, format_checker=format_checker())
    return [f"{'/'.join(map(str, error.absolute_path))}: {error.message}"
            for error in validator.iter_errors(view)]


def junit_problems(path):
    """xmllint's complaints about a junit.xml against junit-10.xsd (none: valid)."""
    proc = subprocess.run(["xmllint", "--noout", "--schema", str(JUNIT_XSD), str(path)],
                          capture_output=True, text=True, timeout=120)
    if proc.returncode == 0:
        return []
    return [line for line in proc.stderr.splitlines() if line.strip()] or \
        [f"xmllint exited {proc.returncode}"]


# DEP-3 (https://dep-team.pages.debian.net/deps/dep3/) and the Debian kernel
# team's shape for upstream fixes; docs/patch-headers.md states each rule.
DEP3_FIELDS = {"Description", "Subject", "Origin", "Bug", "Forwarded", "Author", "From",
               "Reviewed-by", "Acked-by", "Last-Update", "Applied-Upstream", "Date"}
# a paragraph holding one of these is a (second) DEP-3 header, not git trailers
DEP3_ONLY = {"Description", "Origin", "Bug", "Forwarded", "Author", "Last-Update",
             "Applied-Upstream"}
ORIGIN_KEYWORDS = ("upstream", "backport", "vendor", "other")
LINUS = re.compile(r"https://git\.kernel\.org/linus/[0-9a-f]{40}")
NOTE = re.compile(r"^\[(?:[^\]\n:]+: )?Backported to \d+\.\d+: [^\]]*\]$", re.M)
SIGNED = re.compile(r"^Signed-off-by: .+ <[^<>\s]+@[^<>\s]+>$", re.M)
# what a header must not say: a machine's paths, our own generator and files
LOCAL = re.compile(r"/home/|/root/|/tmp/|/work/|/var/|\.cache|<cache>|<repo>|taintport|"
                   r"semantic-patches|\.cocci", re.I)


def fields_of(block):
    """[(name, value)] of an RFC 2822-like block; value None for a line that is
    no field."""
    fields = []
    for line in block.splitlines():
        if line[:1] in (" ", "\t") and fields:
            fields[-1] = (fields[-1][0], (fields[-1][1] or "") + " " + line.strip())
        else:
            name, colon, value = line.partition(":")
            fields.append((name, value.strip() if colon else None))
    return fields


def header_of(text):
    """(first header's fields in order, the text after it up to ---)."""
    head, _, _ = text.partition("\n---\n")
    block, _, rest = head.lstrip("\n").partition("\n\n")
    return fields_of(block), rest


def dep3_problems(text):
    """DEP-3's field rules for one patch's header: the first header, and a
    second one, the last paragraph before the diff when it holds only fields."""
    fields, rest = header_of(text)
    problems = [f"not a field: {name!r}" for name, value in fields
                if value is None or not re.fullmatch(r"[A-Za-z][A-Za-z0-9-]*", name)]
    problems += [f"field {name} is not DEP-3's" for name, _ in fields
                 if name not in DEP3_FIELDS and not name.startswith("Bug-")]
    last = fields_of(rest.strip("\n").split("\n\n")[-1]) if rest.strip() else []
    if all(value is not None for _, value in last) and {n for n, _ in last} & DEP3_ONLY:
        fields += [(name, value) for name, value in last
                   if name in DEP3_FIELDS or name.startswith("Bug-")]
    known = {name for name, _ in fields}
    if not known & {"Description", "Subject"}:
        problems.append("neither Description nor Subject")
    values = dict(fields)
    if "Origin" not in values and not known & {"Author", "From"}:
        problems.append("no Origin (and no Author)")
    if "Origin" in values:
        keyword, comma, where = values["Origin"].partition(", ")
        if not (comma and keyword in ORIGIN_KEYWORDS):
            keyword, where = "", values["Origin"]
        # an upstream commit is named by its URL, else "commit:<id>"
        if keyword in ("", "upstream", "backport") and \
                not re.fullmatch(r"(https?://\S+|commit:[0-9a-f]{7,40})", where):
            problems.append(f"Origin {values['Origin']!r}: not [keyword, ]URL or commit:<id>")
    forwarded = values.get("Forwarded")
    if forwarded is not None and forwarded not in ("no", "not-needed") and \
            not re.fullmatch(r"https?://\S+", forwarded):
        problems.append(f"Forwarded {forwarded!r}: says forwarded, with no URL to show where")
    if "Last-Update" in values and not re.fullmatch(r"\d{4}-\d{2}-\d{2}", values["Last-Update"]):
        problems.append("Last-Update is not YYYY-MM-DD")
    return problems


def team_shape_problems(text, sender=None):
    """The Debian kernel team's shape for an upstream fix (docs/patch-headers.md):
    From, Date, Subject then Origin (a git.kernel.org/linus URL); upstream's whole
    message with its Signed-off-by chain; a change that is not upstream's word for
    word says so in a [Name: Backported to X.Y: why] note after upstream's last
    trailer; the sender's Signed-off-by last; nothing about where it was made."""
    fields, message = header_of(text)
    names = [name for name, _ in fields]
    problems = []
    if names[:1] != ["From"] or "Subject" not in names or \
            names[names.index("Subject") + 1:names.index("Subject") + 2] != ["Origin"]:
        problems.append(f"fields {names}: not From, [Date,] Subject, Origin")
    values = dict(fields)
    keyword, _, url = values.get("Origin", "").rpartition(", ")
    if not LINUS.fullmatch(url) or keyword not in ("", "upstream", "backport"):
        problems.append(f"Origin {values.get('Origin')!r}: not [upstream|backport, ]"
                        "https://git.kernel.org/linus/<sha>")
    if values.get("Forwarded", "not-needed") != "not-needed":
        problems.append(f"Forwarded {values['Forwarded']!r} on an upstream fix")
    if not SIGNED.search(message):
        problems.append("upstream's Signed-off-by chain is missing")
    notes = NOTE.findall(message)
    if keyword == "upstream" and notes:
        problems.append("Origin says upstream's word for word, yet a backport note")
    if keyword == "backport" and not notes:
        problems.append("Origin says backport, but no [Backported to X.Y: why] note")
    lines = message.rstrip("\n").splitlines()
    if notes:
        start = max(i for i, line in enumerate(lines) if line.startswith("["))
        end = next(i for i in range(start, len(lines)) if lines[i].endswith("]"))
        trailers = [line for line in lines[end + 1:] if line.strip()]
        if any(not SIGNED.fullmatch(line) for line in trailers):
            problems.append(f"after the note, only the sender's Signed-off-by: {trailers}")
    if sender and lines[-1] != f"Signed-off-by: {sender}":
        problems.append(f"the sender's Signed-off-by is not last: {lines[-1]!r}")
    if LOCAL.search(text.partition("\n---\n")[0]):
        problems.append(f"a local path or our own files: {LOCAL.search(text).group(0)!r}")
    return problems


# A stable mail, through the tools its readers and senders use.
GIT = ["git", "-c", "user.name=Stable Reader", "-c", "user.email=reader@example.org",
       "-c", "init.defaultBranch=main", "-c", "commit.gpgsign=false"]


def git_repository(dest, files):
    """A git repository holding {relative path: bytes} in one commit: the tree a
    stable maintainer applies a mail to."""
    for rel, data in files.items():
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        (dest / rel).write_bytes(data)
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "the tree as shipped"]):
        subprocess.run(GIT + args, cwd=dest, check=True, capture_output=True)
    return dest


def git_am(repo, mail, three_way=True):
    """`git am [-3]` of one mail; the CompletedProcess (the repository is left
    as am left it, aborted when it failed)."""
    proc = subprocess.run(GIT + ["am", *(["-3"] if three_way else []), str(mail)], cwd=repo,
                          capture_output=True, text=True, timeout=120)
    if proc.returncode:
        subprocess.run(GIT + ["am", "--abort"], cwd=repo, capture_output=True)
    return proc


def mailinfo(mail):
    """git mailinfo's view of a mail: ({Author, Email, Subject, Date}, message, patch)."""
    with tempfile.TemporaryDirectory() as scratch:
        msg, patch = Path(scratch) / "msg", Path(scratch) / "patch"
        with open(mail) as text:
            proc = subprocess.run(GIT + ["mailinfo", str(msg), str(patch)], stdin=text,
                                  capture_output=True, text=True, timeout=60, check=True)
        info = dict(line.split(": ", 1) for line in proc.stdout.splitlines() if ": " in line)
        return info, msg.read_text(), patch.read_text()


def checkpatch(tree, patch, *options):
    """The tree's own scripts/checkpatch.pl on a patch or mail: [(kind, what, the
    line it is about)] for each ERROR, WARNING or CHECK, and the whole output."""
    proc = subprocess.run(["perl", "scripts/checkpatch.pl", "--no-tree", *options, str(patch)],
                          cwd=tree, capture_output=True, text=True, timeout=300)
    findings = []
    for block in proc.stdout.split("\n\n"):
        found = re.match(r"(ERROR|WARNING|CHECK): (.*)", block)
        if found:  # the line it is about follows a "#<n>:" line, when it names one
            about = re.search(r"^#\d+: .*\n(?:FILE: .*\n)?(.*)", block, re.M)
            findings.append((found.group(1), found.group(2), about.group(1) if about else ""))
    if not re.search(r"^total: \d+ errors, \d+ warnings", proc.stdout, re.M):
        findings.append(("ERROR", "checkpatch did not finish", proc.stdout + proc.stderr))
    return findings, proc.stdout


def upstream_lines():
    """Lines checkpatch may question but a patch must keep as they are: upstream's
    own commit messages (66cc69e's NAKed-by:), and the "commit <sha> upstream."
    line stable-kernel-rules.rst asks for, which checkpatch reads as a badly
    quoted commit (GIT_COMMIT_ID) it cannot find without upstream's history."""
    from taintport.layer import fixes
    kept = set()
    for fix in fixes.FIXES:
        kept |= set(fix.info.upstream.body.splitlines())
        kept.add(f"commit {fix.commit} upstream.")
    return kept - {""}


def send_email(mail, sender, scratch):
    """git send-email with a dummy SMTP command (a script that keeps what it is
    given): (--dry-run's output, the message a real send hands over, its argv)."""
    dummy = Path(scratch) / "smtp"
    kept = Path(scratch) / "sent"
    dummy.write_text(f'#!/bin/sh\necho "$@" > {kept}.argv\ncat > {kept}\n')
    dummy.chmod(0o755)
    cmd = GIT + ["send-email", "--confirm=never", "--no-annotate", f"--from={sender}",
                 f"--smtp-server={dummy}", "--8bit-encoding=UTF-8", str(mail)]
    dry = subprocess.run(cmd[:len(GIT) + 1] + ["--dry-run"] + cmd[len(GIT) + 1:],
                         capture_output=True, text=True, timeout=120, cwd=scratch)
    sent = subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=scratch)
    if sent.returncode:
        return dry, None, sent.stderr
    return dry, kept.read_text(), Path(f"{kept}.argv").read_text()
