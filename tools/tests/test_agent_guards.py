# SPDX-License-Identifier: GPL-2.0
"""The agent's guards, each on its own: with every other guard satisfied, one
that fails must refuse (exit 3) before any module is opened.

`make agent-check` (test-matrix/agent/refusal-test.sh) runs the agent on the
host as it is, where the first guard (no token on the command line) refuses.
Here each later guard is reached too: the agent, built from the same source
(for this host's release, or for another), runs chrooted in a folder that
holds exactly the files the guards look at (/proc/cmdline, /taintport/token,
/etc/initrd-release). A case never satisfies every guard, and strace fails
every syscall that could load a module or touch the host, as refusal-test.sh
does, so a broken guard fails the test without doing anything.
"""
import os
import platform
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from taintport.tree import versions

REPO = Path(__file__).resolve().parents[2]
AGENT_SRC = REPO / "test-matrix" / "agent"
# what the agent must never do to the host's kernel: each test runs it under strace
# with these failed (EPERM) before they reach it, in a chroot
DANGEROUS = "init_module,finit_module,delete_module,reboot,ioperm,iopl,syslog,mount"
LOADS = re.compile(rf"(^|[^_a-z])({'|'.join(DANGEROUS.split(','))})\(", re.M)
OTHER_RELEASE = "0.0.0-taintport-not-this-kernel"
# the shipped variant's agent is built for Debian's own release string
DEBIAN_RELEASE = versions.select(["bookworm-6.1"])[0].shipped.release
TOKEN = "0123456789abcdef"

pytestmark = pytest.mark.skipif(
    not all(shutil.which(tool) for tool in ("gcc", "strace", "chroot", "unshare")),
    reason="needs gcc, strace, chroot and unshare (tools/install-deps)")


def build(out, release):
    """The agent as the harness builds it (its Makefile: the checks generated
    from the guest data, then the static build)."""
    subprocess.run(["make", "-s", "-C", str(AGENT_SRC), f"OUT={out}", f"KRELEASE={release}"],
                   check=True, capture_output=True)
    return out / "taintport-agent"


@pytest.fixture(scope="module")
def agents(tmp_path_factory):
    """{release: agent}: one built for this host's kernel, one for another,
    one for the release of a Debian binary the shipped variant boots."""
    root = tmp_path_factory.mktemp("agents")
    return {"host": build(root / "host", platform.release()),
            "other": build(root / "other", OTHER_RELEASE),
            "debian": build(root / "debian", DEBIAN_RELEASE)}


def guest_root(folder, agent, cmdline=None, token=None, initrd=True):
    """A folder holding the files the guards read, and the agent."""
    shutil.copy2(agent, folder / "taintport-agent")
    files = {"proc/cmdline": cmdline, "taintport/token": token,
             "etc/initrd-release": "NAME=dracut\n" if initrd else None}
    for rel, text in files.items():
        if text is not None:
            (folder / rel).parent.mkdir(parents=True, exist_ok=True)
            (folder / rel).write_text(text)
    return folder


def refusal(root, tmp_path):
    """Run the agent chrooted in root under strace: (exit code, stderr, strace)."""
    trace = tmp_path / "strace"
    # root may chroot; anyone else gets a user namespace where it is root
    chroot = ["chroot"] if os.geteuid() == 0 else ["unshare", "--map-root-user", "chroot"]
    proc = subprocess.run(["strace", "-f", "-qq", "-o", str(trace),
                           "-e", f"trace={DANGEROUS},open,openat",
                           "-e", f"inject={DANGEROUS}:error=EPERM",
                           *chroot, str(root), "/taintport-agent"],
                          capture_output=True, text=True, timeout=60)
    calls = trace.read_text()
    print(proc.stderr, calls)
    return proc.returncode, proc.stderr, calls


CASES = {
    "no command line": (dict(), "host", "cannot read /proc/cmdline"),
    "no token on the command line": (
        dict(cmdline="console=ttyS0 panic=-1\n", token=TOKEN), "host",
        "no taintport.token= on the kernel command line"),
    "no token file": (
        dict(cmdline=f"console=ttyS0 taintport.token={TOKEN}\n"), "host",
        "cannot read /taintport/token: No such file or directory"),
    "token file differs": (
        dict(cmdline=f"console=ttyS0 taintport.token={TOKEN}\n", token="fedcba9876543210\n"),
        "host", "taintport.token= does not match /taintport/token"),
    "another kernel release": (
        dict(cmdline=f"console=ttyS0 taintport.token={TOKEN}\n", token=f"{TOKEN}\n"),
        "other", f"kernel is {platform.release()}, agent is built for {OTHER_RELEASE}"),
    # the shipped variant's command line, on a host that is not that binary
    "a Debian binary's release": (
        dict(cmdline=f"console=ttyS0 taintport.token={TOKEN} taintport.signed=ts_kmp\n",
             token=f"{TOKEN}\n"),
        "debian", f"kernel is {platform.release()}, agent is built for {DEBIAN_RELEASE}"),
    "not in an initramfs": (
        dict(cmdline=f"console=ttyS0 taintport.token={TOKEN}\n", token=f"{TOKEN}\n",
             initrd=False), "host", "not in an initramfs (no /etc/initrd-release)"),
}


@pytest.mark.parametrize("case", CASES)
def test_each_guard_refuses_on_its_own(agents, tmp_path, case):
    files, release, reason = CASES[case]
    if release == "debian" and platform.release() == DEBIAN_RELEASE:
        pytest.skip(f"this host runs {DEBIAN_RELEASE}: the token and initramfs cases hold")
    root = tmp_path / "root"
    root.mkdir()
    code, stderr, calls = refusal(guest_root(root, agents[release], **files), tmp_path)
    assert code == 3
    assert stderr == f"taintport-agent: refusing to run: {reason}\n"
    assert not LOADS.search(calls), "a dangerous syscall was made"
    assert '.ko"' not in calls, "a module was opened"
