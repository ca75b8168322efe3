"""Fetch stage: a pinned linux-source .deb through a private apt configuration.

The host's apt setup is never read or changed: every apt call gets its own
sources file, lists, archive cache and an empty dpkg status under
<cache>/apt/<suite>/. A version names the suites its release's users take
the kernel from; the newest upload among them is what it pins (`versions
--repin`, `versions --outdated`). The .deb is checked against the pinned
size and SHA256 (the ones the suite's Packages index publishes) before
anything is extracted.

A tree is kept per kernel series (<cache>/trees/<version>/<package>/), so
that the next upload of the series keeps its build folder: the new upload is
extracted beside the old tree, every file whose bytes did not change takes
the old file's time (make rebuilds only what the upload changed), and the
new tree replaces the old by a rename. Downloads and extractions go to
scratch folders that are locked while their run lives; whatever an
interrupted or killed run left is removed by the next fetch, and the
programs of a killed run's extraction die with it.
"""
import errno
import hashlib
import os
import re
import shutil
import stat
import subprocess
import tempfile
import threading
import time
import urllib.parse
from dataclasses import dataclass, replace
from pathlib import Path
from typing import IO, Iterable, Sequence

from taintport import debversion, names
from taintport.cache import Cache, held, scratch, sweep
from taintport.digest import sha256_of
from taintport.errors import InputError, RunError
from taintport.process import STOPPING, kill_group, orphan_proof, reap, require, run, spawn
from taintport.tree.versions import Pin, Source, Version

KEYRING = "/usr/share/keyrings/debian-archive-keyring.gpg"
# in a tree: which upload it was extracted from ("package version sha256")
UPLOAD = ".taintport-upload"
# in a tree: one SHA256 over what its kernel configuration is made from (every
# Kconfig file, the configs/*.config fragments tinyconfig merges,
# scripts/kconfig/): the build dir's .config is made again only when it changes
KCONFIG = ".taintport-kconfig"
DOWNLOADING = ".download-"
EXTRACTING_PREFIX = ".extract-"
# roughly what an extracted linux-source takes, for the out-of-space message
TREE_BYTES = 1_500_000_000


class NotServed(RunError):
    """An index lists a .deb its archive does not serve (404): the archive's
    state, not a kernel's, and not something a rerun of ours would change."""


@dataclass(frozen=True)
class Published:
    """One package version as a suite's index lists it now."""
    package: str
    version: str
    sha256: str
    size: int
    suite: str

    @property
    def pin(self) -> Pin:
        return Pin(self.package, self.version, self.sha256, self.size)

    def pinning(self, version: Version) -> Version:
        """version with its pin moved to this upload (the descriptor is not touched)."""
        return replace(version, package=self.package, suite=self.suite, version=self.version,
                       sha256=self.sha256, size=self.size)


@dataclass(frozen=True)
class Fetched:
    deb: Path
    tree: Path
    sha256: str
    reused: bool


@dataclass(frozen=True)
class Standing:
    """A version's pin against what its suites serve now."""
    version: Version
    newest: Published | None  # None: none of its suites serves the package any more

    @property
    def current(self) -> bool:
        return self.newest is not None and self.newest.version == self.version.version \
            and self.newest.sha256 == self.version.sha256


def redacted(url: str) -> str:
    """An archive URL as apt itself prints it: without user name and password
    (a mirror's credentials stay in the descriptor and the private sources.list)."""
    parts = urllib.parse.urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return parts._replace(netloc=parts.netloc.rpartition("@")[2]).geturl()


def stanzas(text: str) -> list[dict[str, str]]:
    """The fields of each stanza of apt-cache show's output (continuation lines dropped)."""
    return [dict(line.split(": ", 1) for line in block.splitlines()
                 if ": " in line and not line.startswith(" "))
            for block in text.split("\n\n") if block.strip()]


def published_from(fields: dict[str, str], suite: str, where: str) -> Published | None:
    """A stanza as a Published, every field checked: the index is input too
    (its version and name become a .deb's path in the cache)."""
    if not {"Package", "Version", "SHA256"} <= set(fields):
        return None
    names.package(fields["Package"], f"{where}: Package")
    names.deb_version(fields["Version"], f"{where}: {fields['Package']} Version")
    names.check(names.SHA256, fields["SHA256"], f"{where}: {fields['Package']} SHA256",
                "64 lower-case hex digits")
    size = fields.get("Size", "")
    if not size.isdigit():
        raise InputError(f"{where}: {fields['Package']} {fields['Version']} has no size")
    return Published(fields["Package"], fields["Version"], fields["SHA256"], int(size), suite)


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
        sources.write_text(line)

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
            proc = run(cmd, stage="fetch", env={"LC_ALL": "C"}, check=False)
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
                   stage="fetch", check=False, env={"LC_ALL": "C"})
        return stanzas(proc.stdout)

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
                   env={"LC_ALL": "C"})
        return sorted(proc.stdout.split())

    def download(self, pin: Pin, dest: Path, log: Path) -> None:
        cmd = orphan_proof(["apt-get", *self.options(), "-q", "download",
                            f"{pin.package}={pin.version}"])
        proc = run(cmd, stage="fetch", cwd=dest, env={"LC_ALL": "C"}, check=False)
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


class Indexes:
    """The private apt indexes of the suites one command reads, each updated
    once (a suite two versions share is read once)."""

    def __init__(self, cache: Cache, log: Path) -> None:
        self.root = cache.apt()
        self.log = log
        self.lock = threading.Lock()
        self.updated: dict[Source, PrivateApt] = {}

    def apt(self, source: Source) -> PrivateApt:
        with self.lock:
            if source not in self.updated:
                apt = PrivateApt(self.root, source)
                apt.update(self.log)
                self.updated[source] = apt
            return self.updated[source]

    def published(self, sources: Iterable[Source], package: str) -> list[Published]:
        """Every version of package the suites list, oldest first."""
        found = [p for source in sources for p in self.apt(source).published(package).values()]
        return sorted(found, key=lambda p: debversion.key(p.version))

    def newest(self, sources: Iterable[Source], package: str) -> Published | None:
        """The newest upload of package among the suites (newest wins)."""
        found = self.published(sources, package)
        return found[-1] if found else None


def note(log: Path, text: str) -> None:
    """Append to a fetch log. On a full disk the log cannot grow: the error
    that ends the fetch says what happened, not a failed log write."""
    try:
        log.parent.mkdir(parents=True, exist_ok=True)
        with open(log, "a") as out:
            out.write(text)
    except OSError:
        pass


def disk_error(err: OSError, what: str, where: Path) -> RunError:
    """An OSError of the fetch stage as a message naming the folder and the cause."""
    if err.errno == errno.ENOSPC:
        return out_of_space(what, where)
    return RunError("fetch", f"{what} in {where} failed: {err.strerror or err}"
                    + (f" ({err.filename})" if err.filename else ""))


def nearly_full(where: Path) -> bool:
    """Whether the file system of where has less than a few MB left (the
    half-extracted tree is still there when this is asked)."""
    try:
        usage = os.statvfs(where)
    except OSError:
        return False
    return usage.f_bavail * usage.f_frsize < 8 << 20


def out_of_space(what: str, where: Path) -> RunError:
    try:
        free = f"{shutil.disk_usage(where).free / 1e6:.0f} MB free"
    except OSError:
        free = "free space unknown"
    return RunError("fetch", f"no space left on device while {what} in {where} ({free}; a "
                    f"kernel tree takes about {TREE_BYTES / 1e9:.1f} GB): free some space or "
                    "move the cache (--cache DIR or TAINTPORT_CACHE); nothing half-written "
                    "was kept")


def pin_sources(version: Version) -> list[Source]:
    """Where a pinned .deb may be fetched: the pin's suite first, then the others."""
    return [version.source()] + [s for s in version.sources() if s.suite != version.suite]


def fetch_deb(cache: Cache, version: Version, log: Path, pin: Pin | None = None,
              indexes: Indexes | None = None) -> tuple[Path, bool]:
    """The verified .deb in <cache>/debs, downloading it only when absent.

    pin: one of the version's binary pins (binary.py); by default the source's."""
    pin = pin or Pin(version.package, version.version, version.sha256, version.size)
    debs = cache.debs()
    try:
        debs.mkdir(parents=True, exist_ok=True)
        sweep(debs, DOWNLOADING)  # what killed downloads left
        target = debs / pin.deb_name
        if target.exists():
            if target.stat().st_size == pin.size and sha256_of(target) == pin.sha256:
                return target, True
            target.unlink()  # a poisoned cache entry is dropped, never trusted
        return download(version, pin, target, log, indexes or Indexes(cache, log)), False
    except OSError as err:
        raise disk_error(err, f"downloading {pin.deb_name}", debs) from None


def download(version: Version, pin: Pin, target: Path, log: Path, indexes: Indexes) -> Path:
    """The pinned .deb from the first of the version's suites that lists it,
    checked against the pin before and after, into target."""
    offers: dict[str, Published] = {}
    apt = None
    for source in pin_sources(version):
        here = indexes.apt(source)
        offers = here.published(pin.package)
        if pin.version in offers:
            apt = here
            break
    if apt is None:
        have = indexes.published(version.sources(), pin.package)
        now = ", ".join(f"{p.version} ({p.suite})" for p in have) or "none"
        raise InputError(
            f"{version.path}: {', '.join(version.suites)} no longer offers {pin.package} "
            f"{pin.version}; it has now: {now}. "
            f"Run 'taintport versions --repin {version.name}' to move the pin on purpose.")
    listed = offers[pin.version]
    if listed.sha256 != pin.sha256:
        raise InputError(
            f"{version.path}: pinned sha256 {pin.sha256} differs from the one "
            f"{listed.suite}'s index publishes for {pin.package} {pin.version}: {listed.sha256}")
    if listed.size != pin.size:
        raise InputError(
            f"{version.path}: pinned size {pin.size} of {pin.package} {pin.version} differs "
            f"from the {listed.size} bytes {listed.suite}'s index publishes; nothing was "
            "downloaded")
    with scratch(target.parent, DOWNLOADING) as tmp:
        apt.download(pin, tmp, log)
        got = list(tmp.glob("*.deb"))
        if len(got) != 1:
            raise RunError("fetch", f"apt-get download left {len(got)} .deb files in {tmp}")
        size = got[0].stat().st_size
        if size != pin.size:
            raise InputError(f"{got[0].name}: {size} bytes, not the pinned {pin.size} "
                             f"({version.path}); nothing was extracted")
        digest = sha256_of(got[0])
        if digest != pin.sha256:
            raise InputError(f"{got[0].name}: sha256 {digest} does not match the pinned "
                             f"{pin.sha256} ({version.path}); nothing was extracted")
        os.replace(got[0], target)
    return target


# One extraction at a time in this process: each writes ~1.3 GB, and two at
# once on one disk took 23.8 s where one after the other took 2 x 9.1 s.
EXTRACTING = threading.Lock()


def upload_of(version: Version) -> str:
    return f"{version.package} {version.version} {version.sha256}\n"


def extracted(tree: Path) -> str | None:
    """Which upload tree holds, from its UPLOAD file; None when there is no tree."""
    try:
        return (tree / UPLOAD).read_text()
    except (FileNotFoundError, NotADirectoryError):
        return None


def extract(deb: Path, version: Version, tree: Path, log: Path, nice: int = 0,
            build_dir: Path | None = None) -> bool:
    """Bring tree to the pinned upload; True when it already was.

    The tree appears whole or not at all. A tree of another upload of the
    series is replaced, every unchanged file keeping its time, so that
    build_dir (the series' build folder) rebuilds only what changed; without
    an old tree to compare with, build_dir is removed (its objects could be
    newer than a changed source). nice: the niceness of the extracting
    processes (a tree fetched ahead yields to the boots cells wait on)."""
    wanted = upload_of(version)
    if extracted(tree) == wanted:
        return True
    with EXTRACTING:
        if extracted(tree) == wanted:
            return True
        try:
            _extract(deb, version, tree, log, nice, build_dir)
        except OSError as err:
            raise disk_error(err, f"extracting {version.tarball} from {deb.name}",
                             tree.parent) from None
        return False


def _extract(deb: Path, version: Version, tree: Path, log: Path, nice: int,
             build_dir: Path | None) -> None:
    require("dpkg-deb", "dpkg")
    require("xz", "xz-utils")
    require("setpriv", "util-linux")
    parent = tree.parent
    parent.mkdir(parents=True, exist_ok=True)
    sweep(parent, EXTRACTING_PREFIX)
    with scratch(parent, EXTRACTING_PREFIX) as tmp:
        unpack(deb, version, tmp, log, nice)
        src = tmp / version.source_dir
        if not (src / "Makefile").is_file():
            raise RunError("fetch", f"{deb.name}: {version.tarball} has no "
                           f"{version.source_dir}/Makefile")
        (src / UPLOAD).write_text(upload_of(version))
        (src / KCONFIG).write_text(kconfig_digest(src) + "\n")
        if tree.is_dir():
            start = time.monotonic()
            before = (extracted(tree) or "an unknown upload").split(" ")
            kept, files = carry_times(tree, src)
            note(log, f"{kept} of {files} files unchanged since {' '.join(before[:2])}: "
                      "they keep their times, so the build folder rebuilds only the rest "
                      f"({time.monotonic() - start:.1f} s)\n")
            retire(tree)
        elif build_dir is not None and build_dir.exists():
            # no tree to compare with (removed, or a run killed between the two
            # renames): the build folder's objects may be newer than changed sources
            shutil.rmtree(build_dir)
            note(log, f"no earlier tree of {version.name} to compare with: {build_dir} "
                      "removed, the next build is cold\n")
        os.rename(src, tree)


def untar(deb: Path, tarball: str, dest: Path, members: Sequence[str] = (),
          nice: int = 0) -> tuple[tuple[int, ...], str]:
    """dpkg-deb | tar -xO tarball | xz -dc | tar -x into dest (only members,
    when named): each stage's exit code, and what they said on stderr.

    No shell: the cache path is any folder name. Every stage dies with the
    thread waiting for it (orphan_proof) and is ended if this one is
    interrupted. Debian's source tarballs are xz in many blocks, so xz
    decompresses them on every core (8.9 s -> 5.0 s for 7.3 on two)."""
    said = StderrTail()
    stages: list[subprocess.Popen[bytes]] = []
    try:
        upstream: IO[bytes] | None = None
        for cmd in (["dpkg-deb", "--fsys-tarfile", str(deb)],
                    ["tar", "-xO", f"./{tarball}"],
                    ["xz", "-dc", "-T0"],
                    ["tar", "-x", "--no-same-owner", "-C", str(dest), "--", *members]):
            last = len(stages) == 3
            proc = spawn(orphan_proof(cmd), nice=nice, stdin=upstream, stderr=said.fd,
                         stdout=None if last else subprocess.PIPE)
            if upstream is not None:
                upstream.close()
            upstream = proc.stdout
            stages.append(proc)
        said.started()
        codes = tuple(proc.wait() for proc in stages)
    except BaseException:
        # SIGTERM (KeyboardInterrupt) or an error: no stage may go on writing
        # into a folder that is about to be removed
        for proc in stages:
            kill_group(proc)
        raise
    finally:
        said.started()
        for proc in stages:
            reap(proc)
    return codes, said.text()


def retire(folder: Path) -> None:
    """Remove a replaced tree off the caller's path: renamed at once to a
    scratch name, deleted by a thread of its own (1.4 GB in 80000 files took
    two minutes on a busy disk, and the build waits for no such thing). The
    thread is not a daemon, so the run waits for it before it exits; a run
    killed first leaves the folder to the next fetch's sweep, by its name."""
    retired = Path(tempfile.mkdtemp(dir=folder.parent, prefix=EXTRACTING_PREFIX + "old-"))
    os.rename(folder, retired / folder.name)
    threading.Thread(target=shutil.rmtree, args=(retired,), kwargs={"ignore_errors": True},
                     name=f"retire-{folder.parent.name}").start()


def unpack(deb: Path, version: Version, dest: Path, log: Path, nice: int) -> None:
    """The whole source tree of deb into dest."""
    start = time.monotonic()
    note(log, f"$ dpkg-deb --fsys-tarfile {deb} | tar -xO ./{version.tarball} "
              f"| xz -dc -T0 | tar -x -C {dest}\n")
    codes, errors = untar(deb, version.tarball, dest, nice=nice)
    note(log, f"{errors}extracted in {time.monotonic() - start:.1f} s (exit codes {codes})\n")
    if STOPPING.is_set():
        raise RunError("fetch", "interrupted")
    if any(codes):
        # tar says "No space left on device", or only "Wrote only 9728 of 10240
        # bytes" when the disk filled in the middle of a block
        if "No space left on device" in errors or nearly_full(dest):
            raise out_of_space(f"extracting {version.tarball} from {deb.name}", dest.parent)
        raise RunError("fetch", f"extracting {version.tarball} from {deb.name} failed "
                       f"(exit codes {codes}); see {log}", errors.strip()[-2000:])


class StderrTail:
    """One pipe for the stderr of every stage, read by a thread: the log may
    be on the disk that just filled up, and tar's "No space left" must still
    be seen."""
    KEPT = 1 << 16

    def __init__(self) -> None:
        self._read, self.fd = os.pipe()  # stages write into fd
        self.chunks: list[bytes] = []
        self.reader = threading.Thread(target=self._drain, daemon=True,
                                       name="extract-stderr")
        self.reader.start()
        self._open = True

    def _drain(self) -> None:
        with os.fdopen(self._read, "rb") as pipe:
            for block in iter(lambda: pipe.read1(4096), b""):
                self.chunks.append(block)
                while sum(map(len, self.chunks)) > self.KEPT and len(self.chunks) > 1:
                    self.chunks.pop(0)

    def started(self) -> None:
        """Every stage has its copy of the write end: ours goes (EOF when they end)."""
        if self._open:
            os.close(self.fd)
            self._open = False

    def text(self) -> str:
        self.started()
        self.reader.join(timeout=10)
        return b"".join(self.chunks).decode(errors="replace")


def kconfig_digest(tree: Path) -> str:
    """One SHA256 over the files a kernel configuration is made from."""
    digest = hashlib.sha256()
    for folder, dirs, entries in os.walk(tree):
        dirs.sort()
        rel = Path(folder).relative_to(tree)
        for entry in sorted(entries):
            if entry.startswith("Kconfig") or rel.parts[:2] == ("scripts", "kconfig") or \
                    (rel.name == "configs" and entry.endswith(".config")):
                digest.update(str(rel / entry).encode() + b"\0" +
                              (Path(folder) / entry).read_bytes())
    return digest.hexdigest()


def carry_times(old: Path, new: Path) -> tuple[int, int]:
    """Give each regular file of new the time of old's file at the same path
    when their bytes are the same, and now otherwise; (kept, files).

    old is what the series' build folder was last built from (or newer,
    where a variant switch touched it since), so make then rebuilds exactly
    what the upload changed. An extracted file has the tarball's time, older
    than any object of the build folder: left as it is, a changed source
    would not be rebuilt."""
    now = time.time()
    kept = files = 0
    for folder, _, entries in os.walk(new):
        rel_folder = Path(folder).relative_to(new)
        for entry in entries:
            path = Path(folder) / entry
            if not stat.S_ISREG(os.lstat(path).st_mode):
                continue
            files += 1
            before = old / rel_folder / entry
            try:
                was = os.lstat(before)
            except (FileNotFoundError, NotADirectoryError):
                os.utime(path, (now, now))
                continue
            if stat.S_ISREG(was.st_mode) and was.st_size == os.lstat(path).st_size \
                    and same_bytes(before, path):
                os.utime(path, ns=(was.st_atime_ns, was.st_mtime_ns))
                kept += 1
            else:
                os.utime(path, (now, now))
    return kept, files


def same_bytes(a: Path, b: Path) -> bool:
    with open(a, "rb") as left, open(b, "rb") as right:
        while True:
            block = left.read(1 << 20)
            if block != right.read(1 << 20):
                return False
            if not block:
                return True


def retire_old_layout(cache: Cache, version: Version, log: Path) -> None:
    """Trees and build folders keyed by the upload (the layout before a series
    kept its build folder: trees/<name>/<upload>/, build/<name>/<upload>/)
    are never used again: removed, under the version's lock, once."""
    for top in (cache.root / "trees" / version.name, cache.root / "build" / version.name):
        if not top.is_dir():
            continue
        for old in top.iterdir():
            if old.is_dir() and not old.is_symlink() and old.name[:1].isdigit() \
                    and names.DEB_VERSION.fullmatch(old.name):
                shutil.rmtree(old, ignore_errors=True)
                note(log, f"{old}: the cache layout before series kept their build "
                          "folder; removed\n")


def fetch(cache: Cache, version: Version, log: Path, nice: int = 0) -> Fetched:
    """The pinned tree in the cache: downloaded, checked, extracted (the
    caller holds the version's lock)."""
    deb, deb_reused = fetch_deb(cache, version, log)
    tree = cache.tree(version)
    try:
        retire_old_layout(cache, version, log)
        # what a killed extraction left, whether or not the tree is there now
        sweep(tree.parent, EXTRACTING_PREFIX)
    except OSError as err:
        raise disk_error(err, "cleaning up the cache", cache.root) from None
    tree_reused = extract(deb, version, tree, log, nice, cache.build(version))
    return Fetched(deb=deb, tree=tree, sha256=version.sha256, reused=deb_reused and tree_reused)


def standing(indexes: Indexes, version: Version) -> Standing:
    return Standing(version, indexes.newest(version.sources(), version.package))


def repin(cache: Cache, version: Version, log: Path) -> tuple[str, str]:
    """Move a descriptor's pin to the newest upload its suites serve, on purpose.

    Rewrites suite, version, sha256 and size in the TOML file and returns
    (old, new) as "suite version"; the quilt series may then need a refresh,
    which the next matrix run shows (patches are applied with --fuzz=0).
    """
    new = standing(Indexes(cache, log), version).newest
    if new is None:
        raise InputError(f"{', '.join(version.suites)} offer no {version.package} at all now")
    text = version.path.read_text()
    for key, value in (("suite", f'"{new.suite}"'), ("version", f'"{new.version}"'),
                       ("sha256", f'"{new.sha256}"'), ("size", str(new.size))):
        text, count = re.subn(rf"^{key} = .*$", f"{key} = {value}", text, count=1, flags=re.M)
        if count != 1:
            raise InputError(f"{version.path}: no '{key} =' line to rewrite")
    version.path.write_text(text)
    return version.upload, f"{new.suite} {new.version}"
