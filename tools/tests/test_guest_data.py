# SPDX-License-Identifier: GPL-2.0
"""The guest data (test-matrix/guest.toml, test-matrix/fixes/<fix>.toml) and
the agent generated from it.

A fix is data: what the guest checks for it lives in its file, the agent's
checks are generated from that file at build time, and no Python of the
library nor C of the agent names a fix, its test module or its taint
(test_fix_names.py checks that). The agent is run through, unchanged, in a
chroot where its guards hold and strace fails every syscall that could load
a module or touch the host: it prints exactly the tests the data lists, in
the order the judge reads them.
"""
import os
import platform
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from taintport.errors import InputError
from taintport import guest
from taintport.judge import ktap
from taintport.layer import fixes
from taintport.tree import variants
from test_agent_guards import DANGEROUS  # never reach this kernel: strace fails them

REPO = Path(__file__).resolve().parents[2]
AGENT_SRC = REPO / "test-matrix" / "agent"
LIBRARY = REPO / "tools" / "lib" / "taintport"
TOKEN = "0123456789abcdef"


def copy_data(tmp_path):
    """A copy of the repository's guest data to spoil: (guest.toml, fixes/)."""
    shutil.copy2(guest.GUEST, tmp_path / "guest.toml")
    shutil.copytree(guest.FIXES, tmp_path / "fixes")
    return tmp_path / "guest.toml", tmp_path / "fixes"


def test_the_data_lists_the_tests_the_judge_and_the_reports_know():
    data = guest.load()
    subtests = [s.name for s in data.subtests]
    assert subtests[:3] == ["signed", "unsigned", "forced"]
    assert subtests[-1] == "enforced"
    assert len(data.tests) == len(set(data.tests))
    # the judge reads the same list, and every fix of the layer has a file
    assert verdict_tests() == data.tests
    assert set(fixes.NAMES) <= set(data.fixes)


def verdict_tests():
    from taintport.judge import verdict
    return verdict.load(fixes.NAMES).tests


@pytest.mark.parametrize("fix", fixes.NAMES)
def test_a_fixs_taint_in_the_guest_data_is_the_one_its_record_names(tmp_path, fix):
    """fixes/<fix>.toml's [taint] must name semantic-patches/<fix>/fix.toml's
    taint: another taint (a bit and letter the guest would check for
    nothing the layer adds) is refused by the run's loader, naming both."""
    from taintport import family
    from taintport.judge import verdict
    guest_toml, fixes_dir = copy_data(tmp_path)
    taint = next(info.taint for info in family.FAMILY if info.name == fix)
    path = fixes_dir / f"{fix}.toml"
    text = path.read_text()
    assert f'name = "{taint}"' in text
    verdict.load(fixes.NAMES, guest.load(guest_toml, fixes_dir))
    path.write_text(text.replace(f'name = "{taint}"', 'name = "TAINT_OTHER"'))
    with pytest.raises(InputError, match=re.escape(f"must name {taint}, the taint of ")) \
            as err:
        verdict.load(fixes.NAMES, guest.load(guest_toml, fixes_dir))
    assert f"{fix}/fix.toml" in str(err.value) and "TAINT_OTHER" in str(err.value)


SPOILED = {
    "a name the agent cannot read": ("fixes/livepatch.toml", '"patch_applies"',
                                     '"patch_works"', "says nothing the agent can check"),
    "a letter no taint has": ("fixes/livepatch.toml", '"kernel_tainted_K"',
                              '"kernel_tainted_Q"', "no taint has the letter Q"),
    "a log line nobody defined": ("fixes/livepatch.toml", '"log_livepatch_taint"',
                                  '"log_livepatch_tainted"', "has no livepatch_tainted"),
    "an expected failure that is no test": ("fixes/livepatch.toml",
                                            '"livepatch.event_fires",', '"livepatch.x",',
                                            "names test(s) no subtest has"),
    "a test twice": ("fixes/livepatch.toml", '"loads",\n', '"loads", "loads",\n',
                     "names loads twice"),
    "an unknown way to fire": ("fixes/livepatch.toml", 'fire = "read"', 'fire = "poke"',
                               'fire must be'),
    "a module nobody defined": ("fixes/livepatch.toml", 'module = "tlp"',
                                'module = "nope"', "loads unknown module nope"),
    "a fragment that does not exist": ("fixes/livepatch.toml", '"livepatch.config"',
                                       '"gone.config"', "kconfigs/gone.config does not exist"),
    "no bug to catch": ("fixes/livepatch.toml", "[xfail]\nbug", "[xfail]\nbugs",
                        "unknown key"),
    "enforcement repeating no fix's load": ("guest.toml", 'signed = "signed"',
                                            'signed = "nothing"', "is not a fix's subtest"),
    "a letter defined twice": ("guest.toml", 'O = { bit = 12',
                               'E = { bit = 13, name = "X" }\nO = { bit = 12',
                               "taint E defined twice"),
    "not TOML": ("guest.toml", "[logs]", "[logs", "cannot read"),
}


@pytest.mark.parametrize("case", SPOILED)
def test_spoiled_data_is_an_error_naming_the_file(tmp_path, case):
    rel, old, new, message = SPOILED[case]
    guest_toml, fixes_dir = copy_data(tmp_path)
    path = tmp_path / rel
    text = path.read_text()
    assert old in text, case
    path.write_text(text.replace(old, new, 1))
    with pytest.raises(InputError, match=re.escape(message)) as err:
        guest.load(guest_toml, fixes_dir)
    assert str(tmp_path) in str(err.value)


def test_the_gen_checks_script_refuses_spoiled_data_with_exit_2(tmp_path):
    """What make prints when a fix's file is wrong: the file, no traceback."""
    spoiled = tmp_path / "repo"
    shutil.copytree(REPO / "test-matrix", spoiled / "test-matrix",
                    ignore=shutil.ignore_patterns("out"))
    shutil.copytree(LIBRARY, spoiled / "tools" / "lib" / "taintport",
                    ignore=shutil.ignore_patterns("__pycache__"))
    for folder in ("kconfigs", "versions"):
        shutil.copytree(REPO / folder, spoiled / folder)
    fix = spoiled / "test-matrix" / "fixes" / "livepatch.toml"
    fix.write_text(fix.read_text().replace('"patch_applies"', '"patch_works"'))
    proc = subprocess.run(["/usr/bin/python3",
                           str(spoiled / "test-matrix" / "agent" / "gen-checks.py"),
                           str(tmp_path / "checks.c")], capture_output=True, text=True)
    assert proc.returncode == 2
    assert "livepatch.toml" in proc.stderr and "patch_works" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "checks.c").exists()


needs_tools = pytest.mark.skipif(
    not all(shutil.which(tool) for tool in ("make", "gcc", "strace", "chroot", "unshare")),
    reason="needs make, gcc, strace, chroot and unshare (tools/install-deps)")


@pytest.fixture(scope="module")
def agent(tmp_path_factory):
    out = tmp_path_factory.mktemp("agent")
    subprocess.run(["make", "-s", "-C", str(AGENT_SRC), f"OUT={out}",
                    f"KRELEASE={platform.release()}"], check=True, capture_output=True)
    return out / "taintport-agent"


def run_through(agent, tmp_path, cmdline):
    """The agent in a chroot where every guard holds but nothing can load:
    (its KTAP parsed, the syscalls strace saw)."""
    root = tmp_path / "root"
    for rel, text in {"proc/cmdline": cmdline, "taintport/token": f"{TOKEN}\n",
                      "etc/initrd-release": "NAME=dracut\n"}.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    shutil.copy2(agent, root / "taintport-agent")
    trace = tmp_path / "strace"
    chroot = ["chroot"] if os.geteuid() == 0 else ["unshare", "--map-root-user", "chroot"]
    proc = subprocess.run(["strace", "-f", "-qq", "-o", str(trace), "-e", f"trace={DANGEROUS}",
                           "-e", f"inject={DANGEROUS}:error=EPERM",
                           *chroot, str(root), "/taintport-agent"],
                          capture_output=True, text=True, timeout=120)
    return ktap.parse(proc.stdout), trace.read_text()


@needs_tools
def test_the_agent_prints_the_data_s_tests_in_order(agent, tmp_path):
    parsed, calls = run_through(agent, tmp_path, f"console=ttyS0 taintport.token={TOKEN}\n")
    data = guest.load()
    assert list(parsed.results) == list(data.tests)
    assert list(parsed.subtests) == [s.name for s in data.subtests]
    assert parsed.end_status == 1, "nothing could load: an agent error"
    # every load was tried and failed (EPERM from strace, ENOENT first here)
    assert all(not parsed.results[f"{s.name}.loads"].ok
               for s in data.subtests if s.name != "enforced")
    assert "= 0" not in "".join(line for line in calls.splitlines()
                                if "finit_module(" in line)


@needs_tools
def test_on_the_distribution_s_binary_the_declared_skips_say_why(agent, tmp_path):
    """taintport.signed=: a stand-in in-tree module takes the signed loads, and
    a module loaded unsigned in place of a signed one cannot show the
    unsigned letter; the reasons are the agent's, whatever else fails."""
    parsed, _ = run_through(agent, tmp_path,
                            f"console=ttyS0 taintport.token={TOKEN} taintport.signed=ts_kmp\n")
    shipped = variants.named("shipped")
    for name in shipped.skips:
        result = parsed.results[name]
        assert result.skipped, name
        assert result.reason.startswith(("the distribution's", "tlp cannot carry")) or \
            "cannot carry the distribution's signature" in result.reason, (name, result.reason)
    assert parsed.results["signed.module_tainted_O"].reason == \
        "the distribution's signed module is in-tree: no O"
