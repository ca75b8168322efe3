# SPDX-License-Identifier: GPL-2.0
"""Stable mails that can be sent as they are written: every mail `apply
--export DIR --mail` writes goes through the tools of the people who read and
send it: `git am -3` onto a git repository of the tree (its index lines make
the three-way fallback work), `git mailinfo`, `git send-email` with a dummy
SMTP command (dry run, then a real hand-over), and, on the fetched trees
(test_trees.py), the tree's own scripts/checkpatch.pl; and `git apply
--check` on the pinned 6.1 and 5.10 trees' own files. Only a series upstream
maintains gets a mail (layer/stable.py), carrying that branch's own hunk, and
only where the tree's code is the branch's; any other tree gets the
distribution patch, and is told why. A "booted" line comes only from a
results run (--results), which it names."""
import email
import json
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from consumer_checks import git_am, git_repository, mailinfo, send_email
from taintport.cache import Cache
from taintport.tree.archive.download import fetch_deb
from taintport.layer import carry, engine, fixes, stable
from taintport.tree import fetch, versions
from test_patch_headers import SENDER, export, own_tree

REPO = Path(__file__).resolve().parents[2]
TAINTPORT = [sys.executable, str(REPO / "tools" / "taintport")]
AUTHOR = "Jianlin Lv <iecedge@gmail.com>"
ROSTEDT = "Steven Rostedt (Google) <rostedt@goodmis.org>"


def files_of(tree):
    return {str(p.relative_to(tree)): p.read_bytes() for p in tree.rglob("*")
            if p.is_file() and ".git" not in p.parts}


LIVEPATCH = next(f for f in fixes.FIXES if f.name == "livepatch")


def branch_text(series):
    """kernel/tracepoint.c as the stable branch has it where the fix goes: the
    lines before the change of the branch's own hunk (quilt/<version>/patched/),
    under a comment line."""
    code = stable.branch_code(series, LIVEPATCH)
    hunk = code.diff.split("\n@@", 1)[1].split("\n", 1)[1]
    lines = [line[1:] for line in hunk.splitlines(True) if line[:1] in (" ", "-")]
    return "/* the stable branch's code where the fix goes */\n" + "".join(lines)


def branch_tree(root, series, text=None):
    """A tree of one's own whose kernel/tracepoint.c is the branch's code
    (or text), under a Makefile of that series."""
    tree = own_tree(root, series, "livepatch_has-bad-taint-test.c")
    (tree / "kernel/tracepoint.c").write_text(branch_text(series) if text is None else text)
    return tree


def mail_for(tmp_path, series, mask, *extra, text=None):
    tree = (own_tree(tmp_path / "tree", series, mask) if mask
            else branch_tree(tmp_path / "tree", series, text))
    proc = export(tree, tmp_path / "mails", "--mail", *extra)
    assert proc.returncode == 0, proc.stderr
    return tree, proc, sorted((tmp_path / "mails").glob("*.patch"))


def test_a_61_mail_applies_with_git_am_and_says_who_and_why(tmp_path):
    tree, proc, (mail,) = mail_for(tmp_path, "6.1", None, "--signoff", SENDER)
    text = mail.read_text()
    head = email.message_from_string(text)  # compat32: keeps "(Google)", a comment to RFC 5322
    assert head["Subject"] == "[PATCH 6.1.y] tracepoint: Allow livepatch module add trace event"
    assert head["To"] == "stable@vger.kernel.org"
    assert " ".join(head["Cc"].split()) == f"{AUTHOR}, {ROSTEDT}", \
        "the upstream author and signers"
    assert "\ncommit e7bb66f79a7b19a47b3eff745ea9f7ba1ae76032 upstream.\n" in text
    message, below = text.split("\n---\n", 1)
    assert message.endswith(f"Signed-off-by: {SENDER}"), "the sender signs last"
    reason = " ".join(below.split("\n kernel/tracepoint.c |")[0].split())  # as wrapped
    assert "livepatch module is tainted K" in reason
    assert "Who has it: the users of Debian bookworm (linux-source-6.1 " in reason
    assert "Booted" not in reason, "no results run given: no boot is claimed"
    assert "\nindex " in below and "\n-- \n" not in text, "index lines; no signature"

    repo = git_repository(tmp_path / "repo", files_of(tree))
    am = git_am(repo, mail)
    assert am.returncode == 0, am.stdout + am.stderr
    log = subprocess.run(["git", "log", "-1", "--format=%an <%ae>%n%s%n%b"], cwd=repo,
                         capture_output=True, text=True, check=True).stdout
    assert log.startswith(f"{AUTHOR}\ntracepoint: Allow livepatch module add trace event\n")
    assert f"Signed-off-by: {SENDER}" in log and "[PATCH" not in log
    applied = (repo / "kernel/tracepoint.c").read_text()
    assert "(1 << TAINT_LIVEPATCH));" in applied

    info, msg, patch = mailinfo(mail)
    assert (info["Author"], info["Email"]) == ("Jianlin Lv", "iecedge@gmail.com")
    assert info["Subject"] == "tracepoint: Allow livepatch module add trace event"
    assert msg.startswith("commit e7bb66f79a7b19a47b3eff745ea9f7ba1ae76032 upstream.")
    assert "\ndiff --git a/kernel/tracepoint.c b/kernel/tracepoint.c\nindex " in patch


def test_git_am_falls_back_to_a_merge_with_the_index_lines(tmp_path):
    """A stable tree whose context moved since: plain `git am` refuses the
    hunk, `git am -3` merges it through the blobs the index lines name."""
    tree, _, (mail,) = mail_for(tmp_path, "6.1", None, "--signoff", SENDER)
    repo = git_repository(tmp_path / "repo", files_of(tree))
    source = repo / "kernel/tracepoint.c"
    source.write_text(source.read_text().replace(
        "bool trace_module_has_bad_taint(struct module *mod)",
        "bool trace_module_has_bad_taint(struct module *mod) /* moved on */"))
    subprocess.run(["git", "-c", "user.name=x", "-c", "user.email=x@example.org", "commit",
                    "-qam", "later"], cwd=repo, check=True)
    assert git_am(repo, mail, three_way=False).returncode != 0
    merged = git_am(repo, mail)
    assert merged.returncode == 0, merged.stdout + merged.stderr
    assert "/* moved on */" in source.read_text() and "TAINT_LIVEPATCH" in source.read_text()


def test_git_send_email_sends_it_as_written(tmp_path):
    _, _, (mail,) = mail_for(tmp_path, "5.10", None, "--signoff", SENDER)
    dry, sent, argv = send_email(mail, SENDER, tmp_path)
    assert dry.returncode == 0, dry.stdout + dry.stderr
    shown = dry.stdout + dry.stderr
    assert "Subject: [PATCH 5.10.y] tracepoint: Allow livepatch module add trace event" in shown
    assert "Result: OK" in shown
    assert sent is not None, argv
    # the envelope: the list, the author and the signers
    for who in ("stable@vger.kernel.org", "iecedge@gmail.com", "rostedt@goodmis.org"):
        assert who in argv
    headers, body = sent.split("\n\n", 1)
    assert f"\nFrom: {SENDER}\n" in f"\n{headers}\n", "the sender sends ..."
    assert body.startswith(f"From: {AUTHOR}\n"), "... upstream's author stays the author"
    assert "[Jane Maintainer: Backported to 5.10: " in body
    assert body.endswith(mail.read_text().rsplit("\n@@", 1)[1]), \
        "the diff's last hunk ends the mail: no signature after it"


def test_a_series_upstream_does_not_maintain_gets_the_patch_and_a_reason(tmp_path):
    """A vendor's 4.18 (and an ended 5.4): no [PATCH 4.18.y] for a branch that
    does not exist; the distribution patch, listed in the series, instead."""
    tree, proc, mails = mail_for(tmp_path, "4.18", "livepatch_has-bad-taint.c",
                                 "--signoff", SENDER)
    assert mails == []
    assert "livepatch: no stable mail: upstream maintains no 4.18.y stable branch" in \
        proc.stdout and "wrote the distribution patch only" in proc.stdout
    (patch,) = (tmp_path / "mails" / "taintport").glob("*.patch")
    assert "Backported to 4.18" in patch.read_text()
    assert (tmp_path / "mails" / "series").read_text().strip() == \
        f"taintport/{patch.name}"


def test_the_stable_table():
    assert stable.branch("6.1", "v6.3") == "6.1.y"
    assert stable.branch("5.10", "v6.3") == "5.10.y"
    assert stable.branch("6.12", "v6.3") is None, "6.12 has the fix"
    assert stable.branch("4.18", "v6.3") is None and stable.branch("5.4", "v6.3") is None
    assert stable.branch("3.10", "v3.15") is None, "3.10 ended in 2017"
    assert "has the fix already" in stable.no_branch("6.12", "v6.3")


@pytest.mark.parametrize("series, mask, text", [
    ("6.1", "livepatch_vendor-bit-end.c", None),
    ("6.1", "livepatch_vendor-bit-middle.c", None),
    ("6.1", "livepatch_vendor-comment.c", None),
    ("6.1", "livepatch_has-bad-taint-test.c", None),  # 6.1's mask, other lines around it
    ("6.1", None, "5.10"),  # a Makefile saying 6.1 over 5.10's code
], ids=["vendor-bit-end", "vendor-bit-middle", "vendor-comment", "other-context",
        "6.1-makefile-5.10-code"])
def test_vendor_context_gets_the_patch_and_the_reason_not_a_mail(tmp_path, series, mask, text):
    """A mail for 6.1.y must apply to 6.1.y: a tree whose lines where the fix
    goes are not the branch's gets no mail built from them."""
    _, proc, mails = mail_for(tmp_path, series, mask, "--signoff", SENDER,
                              text=branch_text(text) if text else None)
    assert mails == []
    assert ("livepatch: no stable mail: vendor context: kernel/tracepoint.c here is not "
            "6.1.y's own code where the fix goes") in proc.stdout
    assert "wrote the distribution patch only" in proc.stdout
    (patch,) = (tmp_path / "mails" / "taintport").glob("*.patch")
    assert "TAINT_LIVEPATCH" in patch.read_text()


def pristine_files(name, scratch):
    """{path: bytes} of the files the layer's pieces live in (and the Makefile),
    as the pinned upload of version `name` ships them: read from the verified
    .deb in the cache (no tree, no lock: a run may be switching the cached
    tree), downloaded and verified first when it is not there (122 MB for
    5.10: make check fetches only 6.1's tree otherwise)."""
    version = versions.select([name])[0]
    cache = Cache()
    deb, _ = fetch_deb(cache, version, scratch.parent / "fetch.log")
    rels = {rel for fix in fixes.FIXES for spec in fix.pieces for rel in spec.paths}
    parents = {Path(rel).parent for rel in rels}
    # tar takes each member for the first name it matches: no folder inside another
    folders = sorted(str(f) for f in parents if not any(p in f.parents for p in parents))
    scratch.mkdir()
    codes, said = fetch.untar(deb, version.tarball, scratch,
                              [f"{version.source_dir}/{f}" for f in (*folders, "Makefile")])
    assert codes == (0, 0, 0, 0), said
    src = scratch / version.source_dir
    return {rel: (src / rel).read_bytes() for rel in sorted(rels | {"Makefile"})
            if (src / rel).is_file()}


def git_apply_check(files, mail, where):
    """`git apply --check` of a mail in a folder holding files."""
    for rel, data in files.items():
        (where / rel).parent.mkdir(parents=True, exist_ok=True)
        (where / rel).write_bytes(data)
    return subprocess.run(["git", "apply", "--check", "-v", str(mail)], cwd=where,
                          capture_output=True, text=True, timeout=60)


@pytest.mark.users_cache  # the .debs in the user's cache, fetched once
@pytest.mark.parametrize("name", ["bookworm-6.1", "bullseye-5.10"])
def test_every_mail_applies_to_the_pinned_tree_of_its_branch(tmp_path, name):
    """The mail written for the pinned tree itself and the one written for a
    tree of one's own holding the branch's code, each `git apply --check`ed
    on the pinned tree's own files (the longterm code plus Debian's patches)."""
    files = pristine_files(name, tmp_path / "deb")
    version = versions.select([name])[0]
    own = tmp_path / "own"
    for rel, data in files.items():
        (own / rel).parent.mkdir(parents=True, exist_ok=True)
        (own / rel).write_bytes(data)
    written = []
    for tree, out in ((own, tmp_path / "own-mails"),
                      (branch_tree(tmp_path / "fixture", version.series), tmp_path / "mails")):
        proc = export(tree, out, "--mail", "--signoff", SENDER)
        assert proc.returncode == 0, proc.stderr
        (mail,) = out.glob("*.patch")
        assert f"[PATCH {version.series}.y]" in mail.read_text()
        written.append(mail)
    for i, mail in enumerate(written):
        check = git_apply_check(files, mail, tmp_path / f"check-{i}")
        assert check.returncode == 0, check.stdout + check.stderr


RESULTS = Path(__file__).parent / "data" / "results"


def test_a_booted_line_only_from_a_results_run_and_naming_it(tmp_path):
    """Without --results no boot is claimed (above); with the committed
    bookworm run the line names the upload it booted and when the run
    started; a run of another series backs nothing in a 5.10.y mail."""
    _, _, (mail,) = mail_for(tmp_path / "61", "6.1", None, "--signoff", SENDER,
                             "--results", str(RESULTS / "bookworm-6.1"))
    below = " ".join(mail.read_text().split("\n---\n", 1)[1].split())
    assert ("Booted with the bug seen (livepatch module tainted K, its trace events missing) "
            "in the taintport run started 2026-12-07T13:29:00Z, results folder bookworm-6.1: "
            "Debian bookworm's linux-source-6.1 6.1.192-3, the tree as the distribution ships "
            "it, built by us; Debian bookworm's linux-image-6.1.0-57-amd64 6.1.192-3") in below
    _, _, (mail,) = mail_for(tmp_path / "510", "5.10", None, "--signoff", SENDER,
                             "--results", str(RESULTS / "bookworm-6.1"))
    assert "Booted" not in mail.read_text()


def test_results_that_back_nothing_are_refused_before_anything_is_written(tmp_path):
    tree = branch_tree(tmp_path / "tree", "6.1")
    for results, said in ((RESULTS / "trixie-6.12", "no cell of a tree as shipped shows a "
                                                    "known bug"),
                          (tmp_path / "tree", "matrix.json")):
        proc = export(tree, tmp_path / "mails", "--mail", "--results", str(results))
        assert proc.returncode == 2 and said in proc.stderr, proc.stderr
        assert not (tmp_path / "mails").exists()
    proc = export(tree, tmp_path / "mails", "--results", str(RESULTS / "bookworm-6.1"))
    assert proc.returncode == 2 and "--mail too" in proc.stderr
    switch = subprocess.run([*TAINTPORT, "apply", "--version", "bookworm-6.1", "--variant",
                             "patched", "--results", str(RESULTS / "bookworm-6.1"),
                             "--cache", str(tmp_path / "cache")],
                            capture_output=True, text=True, timeout=60)
    assert switch.returncode == 2 and "--mail too" in switch.stderr, switch.stderr
    assert not (tmp_path / "cache").exists(), "refused before any work"


def test_a_run_where_the_bug_did_not_show_as_expected_backs_nothing(tmp_path):
    """The same bookworm run, its cells' verdicts turned to unexpected: no boot
    there showed the bug as the expectations say it, so no line claims one."""
    results = tmp_path / "results"
    shutil.copytree(RESULTS / "bookworm-6.1", results)
    doc = json.loads((results / "matrix.json").read_text())
    for cell in doc["cells"]:
        cell["status"] = "unexpected" if cell["status"] == "known-bug" else cell["status"]
    doc["exit_code"] = 1  # as the reader checks: a kernel came out wrong
    (results / "matrix.json").write_text(json.dumps(doc))
    proc = export(branch_tree(tmp_path / "tree", "6.1"), tmp_path / "mails", "--mail",
                  "--results", str(results))
    assert proc.returncode == 2 and "no cell of a tree as shipped shows a known bug" in \
        proc.stderr, proc.stderr


def test_a_name_that_is_not_ascii_is_encoded_as_rfc_2047_says(tmp_path):
    """Upstream's author with a name beyond ASCII: the header is RFC 2047
    encoded (ASCII on the wire) and git mailinfo reads the name back."""
    up = LIVEPATCH.info.upstream
    author = replace(LIVEPATCH, info=replace(LIVEPATCH.info, upstream=replace(
        up, author="Jöhn Dœ-Ünïcode <jd@example.org>")))
    family = tuple(author if f.name == LIVEPATCH.name else f for f in fixes.FIXES)
    tree = branch_tree(tmp_path / "tree", "6.1")
    texts, none = carry.mails(tree, engine.generate(tree, family), None)
    assert none == {}
    (text,) = texts.values()
    head = text.split("\n\n", 1)[0]
    assert head.isascii() and "From: =?utf-8?" in head
    mail = tmp_path / "mail.patch"
    mail.write_text(text)
    info, _, _ = mailinfo(mail)
    assert (info["Author"], info["Email"]) == ("Jöhn Dœ-Ünïcode", "jd@example.org")
