# SPDX-License-Identifier: GPL-2.0
"""The man page and the bash completion come from the parser itself: every
verb and every option it has, and nothing committed that could go stale."""
import argparse
import os
import re
import subprocess
import sys

from taintport import REPO
from taintport.cli import manual, parser

TAINTPORT = [sys.executable, str(REPO / "tools" / "taintport")]


def verbs_and_options():
    """{verb: [its option strings]} as the parser has them."""
    top = parser()
    sub = next(a for a in top._actions if isinstance(a, argparse._SubParsersAction))
    return {name: [s for action in p._actions for s in action.option_strings
                   if s.startswith("--") and s != "--help"]
            for name, p in sub.choices.items()}


def test_the_man_page_has_every_verb_and_option():
    page = manual.man_page()
    assert page.startswith('.TH taintport "1"')
    for verb, opts in verbs_and_options().items():
        assert f".SH OPTIONS 'taintport {verb}'" in page, verb
        section = page.split(f".SH OPTIONS 'taintport {verb}'")[1].split(".SH ")[0]
        for option in opts:
            assert option.replace("-", "\\-") in section, (verb, option)


def complete(tmp_path, line):
    """What bash's completion hook gets back for the line, cursor at its end."""
    answer = tmp_path / "completions"
    env = dict(os.environ, _ARGCOMPLETE="1", COMP_LINE=line, COMP_POINT=str(len(line)),
               _ARGCOMPLETE_STDOUT_FILENAME=str(answer), _ARGCOMPLETE_IFS="\n",
               TAINTPORT_CACHE=str(tmp_path / "cache"))
    subprocess.run(TAINTPORT, env=env, timeout=60, check=True, capture_output=True)
    return [word.strip() for word in answer.read_text().split("\n")]


def test_completion_asks_the_parser(tmp_path):
    assert set(complete(tmp_path, "taintport ")) >= set(verbs_and_options())
    assert {"--rerun", "--resume"} <= set(complete(tmp_path, "taintport matrix --re"))
    assert "--upload-cost" in complete(tmp_path, "taintport bench --up")
    assert not (tmp_path / "cache").exists()


def test_the_completion_hook_names_taintport():
    assert "complete " in manual.bash_completion() and " taintport" in \
        manual.bash_completion()


def test_neither_is_committed():
    tracked = subprocess.run(["git", "-C", str(REPO), "ls-files"], capture_output=True,
                             text=True, check=True).stdout.split()
    assert not [p for p in tracked if p.endswith((".1", ".bash")) or
                "bash-completion" in p], "generated from the parser by make man completion"


def test_every_option_is_documented():
    """Each option the parser has is named in the README or under docs/."""
    text = (REPO / "README.md").read_text() + "".join(
        p.read_text() for p in sorted((REPO / "docs").glob("*.md")))
    missing = sorted({(verb, option) for verb, opts in verbs_and_options().items()
                      for option in opts
                      if not re.search(rf"(?<![\w-]){re.escape(option)}(?![\w-])", text)})
    assert not missing, f"documented nowhere: {missing}"


def test_the_readme_leads_with_first_contact():
    """What it does, where a maintainer's patch is and the quick start (the
    two set-up commands, what they need) in the README's first 40 lines."""
    readme = (REPO / "README.md").read_text()
    head = "\n".join(readme.splitlines()[:40])
    for fact in ("quilt/<version>/patched/", "    make matrix", "    make check", "133 MB",
                 "1.5 GB", "22-26 minutes", "KVM is optional", "## Quick start"):
        assert fact in head, fact
    assert re.findall(r"^    make \w+", readme, re.M) == ["    make matrix", "    make check"]
    assert (REPO / "LICENSE").read_text().lstrip().startswith("GNU GENERAL PUBLIC LICENSE")
    assert "## [Unreleased]" in (REPO / "CHANGELOG.md").read_text()
