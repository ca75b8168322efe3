"""Fetch stage: a pinned linux-source .deb through a private apt configuration.

The host's apt setup is never read or changed: every apt call gets its own
sources file, lists, archive cache and an empty dpkg status under
<cache>/apt/<suite>/. The .deb is checked against the pinned SHA256 (which
is the one the suite's Packages index publishes) before anything is
extracted, and extraction goes to a temporary folder renamed into place, so
an interrupted run never leaves a tree that looks complete.
"""
import os
import re
import shutil
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from taintport.cache import held
from taintport.digest import sha256_of
from taintport.errors import InputError, RunError
from taintport.process import STOPPING, appending, reap, require, run, spawn

KEYRING = "/usr/share/keyrings/debian-archive-keyring.gpg"


@dataclass(frozen=True)
class Published:
    version: str
    sha256: str
    size: int


@dataclass(frozen=True)
class Fetched:
    deb: Path
    tree: Path
    sha256: str
    reused: bool


class PrivateApt:
    """apt-get/apt-cache pointed at folders of our own, for one suite."""

    def __init__(self, root, version):
        self.root = Path(root) / version.suite
        self.version = version

    def options(self):
        r = self.root
        opts = {
            "Dir::Etc::sourcelist": r / "sources.list",
            "Dir::Etc::sourceparts": r / "sources.list.d",
            "Dir::Etc::preferences": r / "preferences",
            "Dir::Etc::preferencesparts": r / "preferences.d",
            "Dir::State": r / "state",
            "Dir::State::status": r / "state" / "status",
            "Dir::Cache": r / "cache",
            "APT::Get::List-Cleanup": "false",
        }
        if os.geteuid() == 0:
            # the _apt sandbox user cannot write into root's private cache folders
            opts["APT::Sandbox::User"] = "root"
        args = []
        for key, value in opts.items():
            args += ["-o", f"{key}={value}"]
        return args

    def setup(self):
        r = self.root
        for sub in ("sources.list.d", "preferences.d", "state/lists/partial",
                    "cache/archives/partial"):
            (r / sub).mkdir(parents=True, exist_ok=True)
        (r / "state" / "status").touch()
        (r / "preferences").touch()
        v = self.version
        # A file: archive is the user's own mirror on this machine: no signature.
        trust = "trusted=yes" if v.archive.startswith("file:") else f"signed-by={KEYRING}"
        (r / "sources.list").write_text(
            f"deb [{trust}] {v.archive} {v.suite} {v.component}\n")

    def update(self, log):
        require("apt-get", "apt")
        if not self.version.archive.startswith("file:") and not Path(KEYRING).exists():
            raise RunError("fetch", f"{KEYRING} is missing; install debian-archive-keyring")
        # two runs updating one suite's lists at once make apt fail on its own
        # lock ("Could not get lock"): the second waits for the first instead
        self.root.mkdir(parents=True, exist_ok=True)
        with held(self.root / "update.lock", f"the {self.version.suite} apt index in {self.root}"):
            self.setup()
            cmd = ["apt-get", *self.options(), "-q", "update"]
            proc = run(cmd, stage="fetch", env={"LC_ALL": "C"}, check=False)
        output = proc.stdout + proc.stderr
        with appending(log) as out:
            out.write(f"$ {' '.join(cmd)}\n{output}")
        # apt-get update exits 0 when an archive is unreachable (only a warning):
        # without an index for our suite nothing below could be trusted.
        lists = self.root / "state" / "lists"
        failed = [line for line in output.splitlines() if line.startswith(("W:", "E:"))
                  and ("Failed to fetch" in line or "failed to download" in line)]
        if proc.returncode or failed or not list(lists.glob(f"*_dists_{self.version.suite}_*Packages*")):
            raise RunError("fetch", f"apt could not fetch the {self.version.suite} index from "
                           f"{self.version.archive}: apt-get -q update exited {proc.returncode} "
                           f"(private config under {self.root})",
                           "\n".join(failed or output.splitlines()[-5:]))

    def published(self):
        """{version: Published} of the package as the suite's index lists it now."""
        proc = run(["apt-cache", *self.options(), "show", self.version.package],
                   stage="fetch", check=False, env={"LC_ALL": "C"})
        found = {}
        for stanza in proc.stdout.split("\n\n"):
            fields = dict(line.split(": ", 1) for line in stanza.splitlines()
                          if ": " in line and not line.startswith(" "))
            if "Version" in fields and "SHA256" in fields:
                found[fields["Version"]] = Published(fields["Version"], fields["SHA256"],
                                                     int(fields.get("Size", 0)))
        return found

    def candidate(self):
        """The version apt would pick now: the newest the suite offers."""
        proc = run(["apt-cache", *self.options(), "policy", self.version.package],
                   stage="fetch", env={"LC_ALL": "C"})
        for line in proc.stdout.splitlines():
            if line.strip().startswith("Candidate:"):
                value = line.split(":", 1)[1].strip()
                return None if value == "(none)" else value
        return None

    def download(self, dest, log):
        v = self.version
        run(["apt-get", *self.options(), "-q", "download", f"{v.package}={v.version}"],
            stage="fetch", cwd=dest, log=log, env={"LC_ALL": "C"})


def fetch_deb(cache, version, log, deb_name=None):
    """The verified .deb in <cache>/debs, downloading it only when absent.

    version: the descriptor, or a copy of it whose package, version, sha256
    and size are one of its binary pins (binary.py), named deb_name."""
    debs = cache.debs()
    debs.mkdir(parents=True, exist_ok=True)
    target = debs / (deb_name or version.deb_name)
    if target.exists():
        if sha256_of(target) == version.sha256:
            return target, True
        target.unlink()  # a poisoned cache entry is dropped, never trusted

    apt = PrivateApt(cache.apt(), version)
    apt.update(log)
    published = apt.published()
    if version.version not in published:
        now = ", ".join(sorted(published)) or "none"
        raise InputError(
            f"{version.path}: {version.suite} no longer offers {version.package} "
            f"{version.version}; it has now: {now}. "
            f"Run 'taintport versions --repin {version.name}' to move the pin on purpose.")
    if published[version.version].sha256 != version.sha256:
        raise InputError(
            f"{version.path}: pinned sha256 {version.sha256} differs from the one "
            f"{version.suite}'s index publishes for {version.version}: "
            f"{published[version.version].sha256}")

    with tempfile.TemporaryDirectory(dir=debs, prefix=".download-") as tmp:
        apt.download(tmp, log)
        got = list(Path(tmp).glob("*.deb"))
        if len(got) != 1:
            raise RunError("fetch", f"apt-get download left {len(got)} .deb files in {tmp}")
        digest = sha256_of(got[0])
        if digest != version.sha256:
            raise InputError(f"{got[0].name}: sha256 {digest} does not match the pinned "
                             f"{version.sha256} ({version.path}); nothing was extracted")
        os.replace(got[0], target)
    return target, False


# One extraction at a time in this process: each writes ~1.3 GB, and two at
# once on one disk took 23.8 s where one after the other took 2 x 9.1 s.
EXTRACTING = threading.Lock()


def extract(deb, version, tree, log, nice=0):
    """Unpack the source tarball of deb so that tree appears whole or not at all.

    nice: the niceness of the extracting processes (a tree fetched ahead
    yields to the boots that cells are waiting on)."""
    if tree.is_dir():
        return True
    with EXTRACTING:
        if tree.is_dir():
            return True
        return _extract(deb, version, tree, log, nice)


def _extract(deb, version, tree, log, nice=0):
    require("dpkg-deb", "dpkg")
    require("xz", "xz-utils")
    parent = tree.parent
    parent.mkdir(parents=True, exist_ok=True)
    for stale in parent.glob(".extract-*"):
        shutil.rmtree(stale, ignore_errors=True)  # left by an interrupted run
    tmp = Path(tempfile.mkdtemp(dir=parent, prefix=".extract-"))
    start = time.monotonic()
    try:
        with appending(log) as out:
            out.write(f"$ dpkg-deb --fsys-tarfile {deb} | tar -xO ./{version.tarball} "
                      f"| xz -d -T0 | tar -x -C {tmp}\n")
            out.flush()
            # Debian's source tarballs are xz in many blocks, so xz can
            # decompress them on every core (8.9 s -> 5.0 s for 7.3 on two).
            # Each stage is spawned, so an interrupted run ends them all.
            stages: list[subprocess.Popen] = []
            upstream = None
            for cmd in (["dpkg-deb", "--fsys-tarfile", str(deb)],
                        ["tar", "-xO", f"./{version.tarball}"],
                        ["xz", "-d", "-T0"],
                        ["tar", "-x", "-C", str(tmp)]):
                last = len(stages) == 3
                proc = spawn(cmd, nice=nice, stdin=upstream, stderr=out,
                             stdout=None if last else subprocess.PIPE)
                if upstream is not None:
                    upstream.close()
                upstream = proc.stdout
                stages.append(proc)
            codes = tuple(proc.wait() for proc in reversed(stages))[::-1]
            for proc in stages:
                reap(proc)
            out.write(f"extracted in {time.monotonic() - start:.1f} s "
                      f"(exit codes {codes})\n")
        if STOPPING.is_set():
            raise RunError("fetch", "interrupted")
        if any(codes):
            raise RunError("fetch", f"extracting {version.tarball} from {deb.name} failed "
                           f"(exit codes {codes}); see {log}")
        src = tmp / version.source_dir
        if not (src / "Makefile").is_file():
            raise RunError("fetch", f"{deb.name}: {version.tarball} has no "
                           f"{version.source_dir}/Makefile")
        os.replace(src, tree)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return False


def fetch(cache, version, log, nice=0):
    deb, deb_reused = fetch_deb(cache, version, log)
    tree = cache.tree(version)
    tree_reused = extract(deb, version, tree, log, nice)
    return Fetched(deb=deb, tree=tree, sha256=version.sha256, reused=deb_reused and tree_reused)


def repin(cache, version, log):
    """Move a descriptor's pin to the suite's newest version, on purpose.

    Rewrites version, sha256 and size in the TOML file and returns
    (old, new); the quilt series may then need a refresh, which the next
    matrix run shows (patches are applied with --fuzz=0).
    """
    apt = PrivateApt(cache.apt(), version)
    apt.update(log)
    newest = apt.candidate()
    published = apt.published()
    if newest is None or newest not in published:
        raise InputError(f"{version.suite} offers no {version.package} at all now")
    new = published[newest]
    text = version.path.read_text()
    for key, value in (("version", f'"{new.version}"'), ("sha256", f'"{new.sha256}"'),
                       ("size", str(new.size))):
        text, count = re.subn(rf"^{key} = .*$", f"{key} = {value}", text, count=1, flags=re.M)
        if count != 1:
            raise InputError(f"{version.path}: no '{key} =' line to rewrite")
    version.path.write_text(text)
    return version.version, new.version
