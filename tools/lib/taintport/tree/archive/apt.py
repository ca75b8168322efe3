# SPDX-License-Identifier: GPL-2.0
"""apt-get and apt-cache pointed at a private state of our own, for one suite.

Every apt call gets its own sources file, lists, archive cache and an empty
dpkg status under <cache>/apt/<suite>/: the host's apt setup is never
changed. Its settings apply (a proxy, a snapshot mirror's Check-Valid-Until),
its hooks never run: /etc/apt/apt.conf.d's "APT::Update::Post-Invoke"
(docker's removes /var/cache/apt's files, appstream's refreshes its catalog)
ran after every private `apt-get update`. APT_CONFIG, the file apt reads
before all others (apt.conf(5)), names as the main configuration, read after
the parts folder, a file of ours that includes the host's and then clears
every hook. The sources file may hold a mirror's password: it is written
readable by its owner alone (0600), as apt's own auth.conf is.
"""
import os
import re
import shutil
import urllib.parse
from pathlib import Path
from typing import Sequence

from taintport.atomic import replace_file
from taintport.cache import held
from taintport.errors import RunError
from taintport.process import orphan_proof, require, run
from taintport.tree.archive.published import Published, published_from, stanzas
from taintport.tree.versions import Pin, Source

KEYRING = "/usr/share/keyrings/debian-archive-keyring.gpg"
# the sources file names the archive, whose URL may carry a password
SOURCES_MODE = 0o600
# the main configuration apt would read after /etc/apt/apt.conf.d
HOST_CONFIG = "/etc/apt/apt.conf"
# what apt would run of the host's configuration around our calls
HOOKS = ("APT::Update::Pre-Invoke", "APT::Update::Post-Invoke",
         "APT::Update::Post-Invoke-Success", "DPkg::Pre-Invoke", "DPkg::Post-Invoke",
         "DPkg::Pre-Install-Pkgs")


class NotServed(RunError):
    """An index lists a .deb its archive does not serve (404): the archive's
    state, not a kernel's, and not something a rerun of ours would change."""


def redacted(url: str) -> str:
    """An archive URL as apt itself prints it: without user name and password
    (a mirror's credentials stay in the descriptor and the private sources.list)."""
    parts = urllib.parse.urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return parts._replace(netloc=parts.netloc.rpartition("@")[2]).geturl()


def note(log: Path, text: str) -> None:
    """Append to a fetch log. On a full disk the log cannot grow: the error
    that ends the fetch says what happened, not a failed log write."""
    try:
        log.parent.mkdir(parents=True, exist_ok=True)
        with open(log, "a") as out:
            out.write(text)
    except OSError:
        pass


class PrivateApt:
    """apt-get/apt-cache pointed at folders of our own, for one suite."""

    def __init__(self, root: Path, source: Source) -> None:
        self.root = Path(root) / source.suite
        self.source = source

    @property
    def shown(self) -> str:
        """The suite and archive as messages name them (no credentials)."""
        return f"{self.source.suite} ({redacted(self.source.archive)})"

    def options(self) -> list[str]:
        r = self.root
        opts: dict[str, object] = {
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

    def environment(self) -> dict[str, str]:
        """What every apt call runs with: the C locale (its messages are
        parsed) and the configuration setup() wrote: the host's settings
        without its hooks. (Indexes.apt updates, so sets up, before any call.)"""
        return {"LC_ALL": "C", "APT_CONFIG": str(self.root / "apt.conf")}

    def setup(self) -> None:
        r = self.root
        for sub in ("sources.list.d", "preferences.d", "state/lists/partial",
                    "cache/archives/partial"):
            (r / sub).mkdir(parents=True, exist_ok=True)
        (r / "state" / "status").touch()
        (r / "preferences").touch()
        s = self.source
        # A file: archive is the user's own mirror on this machine: no signature.
        trust = "trusted=yes" if s.archive.startswith("file:") else f"signed-by={KEYRING}"
        line = f"deb [{trust}] {s.archive} {s.suite} {s.component}\n"
        sources = r / "sources.list"
        if sources.exists() and sources.read_text() != line:
            # another archive served this suite before: its index must not mix with this one's
            shutil.rmtree(r / "state" / "lists")
            (r / "state" / "lists" / "partial").mkdir(parents=True)
        # written anew every time: a file of an older run (0644) gets the mode too
        replace_file(sources, line.encode(), SOURCES_MODE)
        last = r / "apt.conf.last"
        replace_file(r / "apt.conf", f'Dir::Etc::main "{last}";\n'.encode())
        include = f'#include "{HOST_CONFIG}";\n' if Path(HOST_CONFIG).is_file() else ""
        replace_file(last, (include + "".join(f"#clear {hook};\n" for hook in HOOKS)).encode())

    def update(self, log: Path) -> None:
        require("apt-get", "apt")
        if not self.source.archive.startswith("file:") and not Path(KEYRING).exists():
            raise RunError("fetch", f"{KEYRING} is missing; install debian-archive-keyring")
        # two runs updating one suite's lists at once make apt fail on its own
        # lock ("Could not get lock"): the second waits for the first instead
        self.root.mkdir(parents=True, exist_ok=True)
        with held(self.root / "update.lock", f"the {self.source.suite} apt index in {self.root}"):
            self.setup()
            cmd = ["apt-get", *self.options(), "-q", "update"]
            proc = run(cmd, stage="fetch", env=self.environment(), check=False)
        output = proc.stdout + proc.stderr
        note(log, f"$ {' '.join(cmd)}\n{output}")
        # apt-get update exits 0 when an archive is unreachable (only a warning):
        # without the suite's Release nothing below could be trusted. (A suite
        # with no package at all, as -updates often is, has a Release and no
        # Packages file in the lists.)
        lists = self.root / "state" / "lists"
        failed = [line for line in output.splitlines() if line.startswith(("W:", "E:"))
                  and ("Failed to fetch" in line or "failed to download" in line)]
        if proc.returncode or failed or \
                not list(lists.glob(f"*_dists_{self.source.suite}_*Release")):
            raise RunError("fetch", f"apt could not fetch the {self.source.suite} index from "
                           f"{redacted(self.source.archive)}: apt-get -q update exited "
                           f"{proc.returncode} (private config under {self.root})",
                           "\n".join(failed or output.splitlines()[-5:]))

    def show(self, packages: Sequence[str]) -> list[dict[str, str]]:
        """Every stanza the suite's index has of these packages."""
        if not packages:
            return []
        proc = run(["apt-cache", *self.options(), "show", *packages],
                   stage="fetch", check=False, env=self.environment())
        return [dict(stanza) for stanza in stanzas(proc.stdout)]

    def published(self, package: str) -> dict[str, Published]:
        """{version: Published} of the package as the suite's index lists it now."""
        found = {}
        for fields in self.show([package]):
            item = published_from(fields, self.source.suite, f"{self.source.suite} index")
            if item is not None and item.package == package:
                found[item.version] = item
        return found

    def pkgnames(self, prefix: str) -> list[str]:
        """The names of the suite's packages that start with prefix."""
        proc = run(["apt-cache", *self.options(), "pkgnames", prefix], stage="fetch",
                   env=self.environment())
        return sorted(proc.stdout.split())

    def download(self, pin: Pin, dest: Path, log: Path) -> None:
        cmd = orphan_proof(["apt-get", *self.options(), "-q", "download",
                            f"{pin.package}={pin.version}"])
        proc = run(cmd, stage="fetch", cwd=dest, env=self.environment(), check=False)
        output = proc.stdout + proc.stderr
        note(log, f"$ {' '.join(cmd)}\n{output}")
        if not proc.returncode:
            return
        failed = [line for line in output.splitlines() if "Failed to fetch" in line]
        # http(s): "404  Not Found"; a file: archive: "File not found"
        if any(re.search(r"\s404\s|File not found", line) for line in failed):
            raise NotServed(
                "fetch", f"{self.source.suite}'s index lists {pin.package} {pin.version}, "
                f"but {redacted(self.source.archive)} does not serve it (404 Not Found): "
                "the archive is not in step with its index; try again later, or pin an "
                "upload it serves", "\n".join(failed))
        raise RunError("fetch", f"apt-get download of {pin.package} {pin.version} from "
                       f"{self.shown} exited {proc.returncode}",
                       "\n".join(output.splitlines()[-5:]))
