# SPDX-License-Identifier: GPL-2.0
"""Kernel config stage: tinyconfig + fragments, then check nothing was dropped.

Like kunit_tool's validate_config: olddefconfig silently drops an option whose
dependencies are not met, and a kernel built without it is a wrong kernel.
"""
import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from taintport import REPO
from taintport.errors import InputError, RunError
from taintport import guest
from taintport.process import NICE_LEVEL, run
from taintport.tree import versions
from taintport.tree.fetch import KCONFIG, UPLOAD

KCONFIG_DIR = REPO / "kconfigs"
# the kernel's own tests around the change, on every kernel: the selftests
# stage's modules and the trace-event sample (kernel/selftests.py)
STAGE_FRAGMENTS = ("selftests.config",)
LINE = re.compile(r"^(CONFIG_[A-Za-z0-9_]+)=(.*)$")
UNSET = re.compile(r"^# (CONFIG_[A-Za-z0-9_]+) is not set$")


@dataclass(frozen=True)
class Option:
    name: str
    value: str  # "n" for "is not set"
    where: str  # fragment:line


def parse(path: Path) -> list[Option]:
    options = []
    for number, line in enumerate(Path(path).read_text().splitlines(), 1):
        line = line.strip()
        where = f"{path}:{number}"
        m = LINE.match(line)
        if m:
            options.append(Option(m.group(1), m.group(2), where))
            continue
        m = UNSET.match(line)
        if m:
            options.append(Option(m.group(1), "n", where))
            continue
        if line and not line.startswith("#"):
            raise InputError(f"{where}: not a Kconfig line: {line!r}")
    return options


def fragments(version_name: str, directory: Path = KCONFIG_DIR,
              versions_dir: Path = versions.VERSIONS_DIR,
              needs: Iterable[str] | None = None) -> list[Path]:
    """base.config, the fragments the fixes' tests need, then <version>.config
    when a version needs more.

    needs: the fragments test-matrix/fixes/<fix>.toml name ([kconfig]
    fragment) and the stages' (STAGE_FRAGMENTS), on every kernel; by default
    the repository's. A fragment
    that is neither base, a version's (versions/<name>.toml) nor needed is
    an error: nothing would say why it is merged. Sorted, so the merge order
    and the cell keys do not depend on the file system; the version's own
    fragment comes last so that it can override a feature's option.
    """
    directory = Path(directory)
    base = directory / "base.config"
    if not base.is_file():
        raise InputError(f"{base}: Kconfig fragment missing")
    wanted = sorted(set(needs if needs is not None else
                        [*(f.kconfig for f in guest.load().fixes.values() if f.kconfig),
                         *STAGE_FRAGMENTS]))
    features = [directory / name for name in wanted]
    for frag in features:
        if not frag.is_file():
            raise InputError(f"{frag}: Kconfig fragment missing (a fix's test or a stage needs it)")
    for frag in sorted(directory.glob("*.config")):
        if frag != base and frag not in features and \
                not (Path(versions_dir) / f"{frag.stem}.toml").exists():
            raise InputError(f"{frag}: no fix needs it (test-matrix/fixes/<fix>.toml "
                             "[kconfig] fragment) and no version is named so")
    extra = directory / f"{version_name}.config"
    return [base, *features, *([extra] if extra.is_file() else [])]


def merged(frags: list[Path]) -> list[Option]:
    """The options as merge_config.sh leaves them: a later fragment's value wins."""
    options: dict[str, Option] = {}
    for frag in frags:
        for opt in parse(frag):
            options.pop(opt.name, None)
            options[opt.name] = opt
    return list(options.values())


def read_config(path: Path) -> dict[str, str]:
    values = {}
    for line in Path(path).read_text().splitlines():
        m = LINE.match(line)
        if m:
            values[m.group(1)] = m.group(2)
        m = UNSET.match(line)
        if m:
            values[m.group(1)] = "n"
    return values


def why_missing(tree: Path, name: str) -> str:
    """The option's Kconfig entry (depends on / its absence), to say why it fell out."""
    symbol = name[len("CONFIG_"):]
    for kconfig in sorted(Path(tree).rglob("Kconfig*")):
        try:
            text = kconfig.read_text(errors="replace")
        except OSError:
            continue
        m = re.search(rf"^(?:menu)?config {symbol}\n((?:[ \t].*\n|\n)*)", text, re.M)
        if m:
            deps = [d.strip() for d in m.group(1).splitlines()
                    if d.strip().startswith("depends on")]
            rel = kconfig.relative_to(tree)
            return (f"defined in {rel}; " + "; ".join(deps)) if deps else \
                f"defined in {rel} with no 'depends on'; it may lack a prompt or be selected only"
    return "no such option in this tree's Kconfig files"


def validate(tree: Path, config_path: Path, options: list[Option]) -> None:
    """Every requested option present with its value, or an error naming each miss."""
    have = read_config(config_path)
    wrong = []
    for opt in options:
        got = have.get(opt.name, "n")
        if got != opt.value:
            wrong.append(f"  {opt.name}={opt.value} ({opt.where}) became "
                         f"{'unset' if got == 'n' else got}: {why_missing(tree, opt.name)}")
    if wrong:
        raise InputError(f"{config_path}: olddefconfig dropped requested options:\n"
                         + "\n".join(wrong))


def inputs_digest(frags: list[Path], tree: Path | None = None) -> str:
    """What a .config is made from: the fragments, and the tree's Kconfig
    files (fetch.py's digest of them, or where a tree has none, its upload):
    the build dir outlives an upload of its series."""
    digest = hashlib.sha256()
    for frag in frags:
        digest.update(frag.name.encode() + b"\0" + frag.read_bytes())
    for name in (KCONFIG, UPLOAD):
        made_of = Path(tree) / name if tree is not None else None
        if made_of is not None and made_of.is_file():
            digest.update(name.encode() + b"\0" + made_of.read_bytes())
            break
    return digest.hexdigest()


def configure(tree: Path, build_dir: Path, frags: list[Path], log: Path,
              make_args: list[str]) -> bool:
    """Write build_dir/.config unless it already came from the same fragments
    and the same Kconfig files. A new upload whose Kconfig changed is
    configured again as a cold build would be (it could otherwise keep a
    config no cold build has); one whose Kconfig did not keeps its config."""
    build_dir = Path(build_dir)
    build_dir.mkdir(parents=True, exist_ok=True)
    stamp = build_dir / ".taintport-config"
    digest = inputs_digest(frags, tree)
    config = build_dir / ".config"
    options = merged(frags)
    if config.exists() and stamp.exists() and stamp.read_text().strip() == digest:
        validate(tree, config, options)
        return False
    run(["make", *make_args, "tinyconfig"], stage="kconfig", cwd=tree, log=log,
        nice=NICE_LEVEL)
    run(["scripts/kconfig/merge_config.sh", "-m", "-O", build_dir, config, *frags],
        stage="kconfig", cwd=tree, log=log, env={"ARCH": "x86_64"},
        nice=NICE_LEVEL)
    run(["make", *make_args, "olddefconfig"], stage="kconfig", cwd=tree, log=log,
        nice=NICE_LEVEL)
    if not config.exists():
        raise RunError("kconfig", f"{config} was not written", "")
    validate(tree, config, options)
    stamp.write_text(digest + "\n")
    return True
