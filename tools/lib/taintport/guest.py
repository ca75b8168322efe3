# SPDX-License-Identifier: GPL-2.0
"""What the in-guest test checks: test-matrix/guest.toml and test-matrix/fixes/*.toml.

One file per fix says what the guest checks for it (its test module, how it
is loaded, the taint letter it must get, the events that must exist, the
log line a refusal prints, its kconfig needs, its expected failures), and
guest.toml the checks no fix owns (the allow-list's oldest entries, the
forced load, signature enforcement). The agent's checks are generated from
these at build time (test-matrix/agent/gen-checks.py) and the judge reads
the same values, so a fix adds data, never code: nothing here names one.

A test's name says what it asserts, in words the agent and the judge
share: `module_tainted_O`, `events_refused`, `log_no_bad_taint`. parse_test
reads that grammar into a typed Test; a name outside it is an input error.
"""
import enum
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from taintport import REPO
from taintport.errors import InputError

TEST_MATRIX = REPO / "test-matrix"
GUEST = TEST_MATRIX / "guest.toml"
FIXES = TEST_MATRIX / "fixes"
VERSIONS = REPO / "versions"

FIX_NAME = re.compile(r"^[a-z][a-z0-9-]*$")
# a module name is also its trace system and a C identifier's part
MODULE_NAME = re.compile(r"^[a-z][a-z0-9_]{0,15}$")
MODULE_FILE = re.compile(r"^[a-z][a-z0-9_-]*\.ko$")
LETTER = re.compile(r"^[A-Z]$")
LOG_KEY = re.compile(r"^[a-z][a-z0-9_]*$")
RELEASE = re.compile(r"^v(\d+)\.(\d+)$")


class Kind(str, enum.Enum):
    """What a test looks at (test-matrix/README.md has one row for each)."""
    LOADS = "loads"
    MODULE_TAINT = "module_taint"      # /sys/module/<m>/taint has the letter
    KERNEL_TAINT = "kernel_taint"      # /proc/sys/kernel/tainted has the bit
    PATCH_ENABLED = "patch_enabled"
    PATCH_APPLIES = "patch_applies"
    EVENTS = "events"                  # events/<m>/ exists in tracefs
    EVENT_FIRES = "event_fires"        # the module's event reaches the trace
    MODULE_LOAD = "module_load"        # the module:module_load line shows the letter
    LOG = "log"                        # the load's kernel log has the line
    UNLOADS = "unloads"
    SIG_ENFORCE = "sig_enforce"        # sig_enforce turned on
    REFUSED = "refused"                # the load failed with EKEYREJECTED
    NOT_LOADED = "not_loaded"
    NO_EVENTS = "no_events"
    NO_NEW_TAINT = "no_new_taint"
    LOG_REJECTED = "log_rejected"


# name -> (kind, want) for the names that take no argument
PLAIN = {
    "loads": (Kind.LOADS, True), "unloads": (Kind.UNLOADS, True),
    "patch_enabled": (Kind.PATCH_ENABLED, True), "patch_applies": (Kind.PATCH_APPLIES, True),
    "events_present": (Kind.EVENTS, True), "events_refused": (Kind.EVENTS, False),
    "event_fires": (Kind.EVENT_FIRES, True), "event_silent": (Kind.EVENT_FIRES, False),
}
REFUSAL = {
    "refused": Kind.REFUSED, "not_loaded": Kind.NOT_LOADED, "no_events": Kind.NO_EVENTS,
    "no_new_taint": Kind.NO_NEW_TAINT, "log_rejected": Kind.LOG_REJECTED,
}
# module_load before module: the longer prefix first
LETTERED = (("module_load", Kind.MODULE_LOAD), ("module", Kind.MODULE_TAINT),
            ("kernel", Kind.KERNEL_TAINT))


class Distribution(str, enum.Enum):
    """How a subtest loads on the distribution's own binary, which cannot
    take a module signed with our key."""
    AS_IS = "as-is"          # the same file (an unsigned load)
    STAND_IN = "stand-in"    # a module the distribution signed takes its place
    # not "unsigned": that is a fix's name, which no code names
    UNSIGNED = "unsigned-ko"  # <module>.ko, unsigned: the unsigned letter is its own


@dataclass(frozen=True)
class Taint:
    letter: str
    bit: int
    name: str           # the kernel's TAINT_* name, for the reader
    cmdline: str = ""   # a kernel parameter that says the tree's letter for it


@dataclass(frozen=True)
class Module:
    name: str           # also its trace system
    event: str
    fire: str           # "parameter": write the value to its fire parameter; "read": read patches
    field: str          # the event's integer field that shows the firing
    patches: str = ""   # a livepatch: the file whose function it replaces
    marker: str = ""    # what reading that file shows while patched
    sysfs: str = ""     # where the livepatch core shows the patch


@dataclass(frozen=True)
class Test:
    name: str           # as printed: "module_tainted_O", "signed_unloads"
    kind: Kind
    want: bool          # what a kernel with every fix of the family shows
    letter: str = ""    # MODULE_TAINT, KERNEL_TAINT, MODULE_LOAD
    log: str = ""       # LOG: the key of [logs]
    load: str = ""      # enforced: the subtest whose load the test repeats ("" for a subtest's own)


@dataclass(frozen=True)
class Subtest:
    name: str
    module: str
    file: str
    force: bool
    distribution: Distribution
    tests: tuple[Test, ...]
    fix: str            # the file it comes from: a fix's name, "" for guest.toml


@dataclass(frozen=True)
class Fix:
    name: str
    since: tuple[int, int]            # the upstream release that has it: the subtests' order
    xfail: frozenset[str]             # "<subtest>.<test>" a tree without the fix fails
    absent: frozenset[str]            # ... a kernel without its taint at all fails
    not_applicable: Mapping[str, str]  # version -> why the fix has no meaning there
    kconfig: str                      # a fragment of kconfigs/ its test needs, or ""
    taints: frozenset[str]            # the kernel names of its [taint] table: TAINT_TEST


@dataclass(frozen=True)
class Guest:
    taints: Mapping[str, Taint]
    logs: Mapping[str, str]
    modules: Mapping[str, Module]
    subtests: tuple[Subtest, ...]     # in the agent's order, enforced last
    fixes: Mapping[str, Fix]          # in upstream order

    @property
    def tests(self) -> tuple[str, ...]:
        """Every test, "<subtest>.<test>", in the order the agent prints them."""
        return tuple(f"{s.name}.{t.name}" for s in self.subtests for t in s.tests)

    def subtest(self, name: str) -> Subtest:
        return next(s for s in self.subtests if s.name == name)


def _table(data: Mapping[str, Any], key: str, where: str) -> dict[str, Any]:
    value = data.get(key, {})
    if not isinstance(value, dict):
        raise InputError(f"{where}: [{key}] must be a table")
    return value


def _string(data: Mapping[str, Any], key: str, where: str, pattern: re.Pattern[str] | None = None,
            default: str | None = None) -> str:
    value = data.get(key, default)
    if not isinstance(value, str) or (pattern and not pattern.match(value)):
        raise InputError(f"{where}: {key} must be a string"
                         + (f" matching {pattern.pattern}" if pattern else ""))
    return value


def _known(data: Mapping[str, Any], keys: set[str], where: str) -> None:
    unknown = sorted(set(data) - keys)
    if unknown:
        raise InputError(f"{where}: unknown key(s) {', '.join(unknown)}")


def _names(value: object, where: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise InputError(f"{where} must be a list of test names")
    dup = sorted({v for v in value if value.count(v) > 1})
    if dup:
        raise InputError(f"{where} names {', '.join(dup)} twice")
    return value


def parse_test(name: str, where: str, prefixes: Mapping[str, str] = {}) -> Test:
    """A test's name read as what it asserts; prefixes (enforced only) maps
    a name's first word to the subtest whose load it repeats."""
    load, rest = "", name
    head, _, tail = name.partition("_")
    if head in prefixes:
        load, rest = prefixes[head], tail
        if rest in REFUSAL:
            return Test(name, REFUSAL[rest], True, load=load)
    elif prefixes and name == "sig_enforce_enabled":
        return Test(name, Kind.SIG_ENFORCE, True)
    if rest in PLAIN:
        kind, want = PLAIN[rest]
        return Test(name, kind, want, load=load)
    for word, kind in LETTERED:
        m = re.fullmatch(rf"{word}_(not_)?tainted_([A-Z])", rest)
        if m:
            return Test(name, kind, not m.group(1), letter=m.group(2), load=load)
    m = re.fullmatch(r"log_(no_)?([a-z][a-z0-9_]*)", rest)
    if m and not load:
        return Test(name, Kind.LOG, not m.group(1), log=m.group(2))
    raise InputError(f"{where}: test {name!r} says nothing the agent can check "
                     "(test-matrix/README.md lists the names it understands)")


def _taints(data: Mapping[str, Any], where: str) -> dict[str, Taint]:
    out = {}
    for letter, row in data.items():
        at = f"{where} {letter}"
        if not LETTER.match(letter) or not isinstance(row, dict):
            raise InputError(f"{at}: a taint is a capital letter and a table")
        _known(row, {"bit", "name", "cmdline"}, at)
        bit = row.get("bit")
        if not isinstance(bit, int) or isinstance(bit, bool) or not 0 <= bit < 32:
            raise InputError(f"{at}: bit must be a number 0..31")
        out[letter] = Taint(letter, bit, _string(row, "name", at),
                            _string(row, "cmdline", at, default=""))
    return out


def _modules(data: Mapping[str, Any], where: str) -> dict[str, Module]:
    out = {}
    for name, row in data.items():
        at = f"{where} [modules.{name}]"
        if not MODULE_NAME.match(name) or not isinstance(row, dict):
            raise InputError(f"{at}: a module is named {MODULE_NAME.pattern} and a table")
        _known(row, {"event", "fire", "field", "patches", "marker", "sysfs"}, at)
        fire = _string(row, "fire", at)
        if fire not in ("parameter", "read"):
            raise InputError(f"{at}: fire must be \"parameter\" or \"read\"")
        module = Module(name, _string(row, "event", at, MODULE_NAME), fire,
                        _string(row, "field", at, LOG_KEY),
                        _string(row, "patches", at, default=""),
                        _string(row, "marker", at, default=""),
                        _string(row, "sysfs", at, default=""))
        if len({fire == "read", bool(module.patches), bool(module.marker),
                bool(module.sysfs)}) != 1:
            raise InputError(f"{at}: a livepatch has patches, marker, sysfs and "
                             "fire = \"read\"; another module none of them")
        out[name] = module
    return out


def _subtests(rows: object, fix: str, where: str) -> list[Subtest]:
    if not isinstance(rows, list):
        raise InputError(f"{where}: [[subtests]] must be an array of tables")
    out = []
    for row in rows:
        if not isinstance(row, dict):
            raise InputError(f"{where}: [[subtests]] must be an array of tables")
        name = _string(row, "name", f"{where} [[subtests]]", LOG_KEY)
        at = f"{where} [[subtests]] {name}"
        _known(row, {"name", "module", "file", "force", "distribution", "tests"}, at)
        force = row.get("force", False)
        if not isinstance(force, bool):
            raise InputError(f"{at}: force must be true or false")
        try:
            distribution = Distribution(row.get("distribution", "as-is"))
        except ValueError:
            raise InputError(f"{at}: distribution must be one of "
                             f"{', '.join(d.value for d in Distribution)}") from None
        tests = tuple(parse_test(t, at, {}) for t in _names(row.get("tests"), f"{at}: tests"))
        out.append(Subtest(name, _string(row, "module", at, MODULE_NAME),
                           _string(row, "file", at, MODULE_FILE), force, distribution,
                           tests, fix))
    return out


def _enforced(data: object, subtests: list[Subtest], where: str) -> Subtest:
    at = f"{where} [enforced]"
    if not isinstance(data, dict):
        raise InputError(f"{at} missing: the tests of signature enforcement")
    _known(data, {"loads", "tests"}, at)
    loads = _table(data, "loads", at)
    by_name = {s.name: s for s in subtests}
    for prefix, name in loads.items():
        if name not in by_name or by_name[name].fix == "" or not LOG_KEY.match(prefix):
            raise InputError(f"{at} loads: {prefix} = {name!r} is not a fix's subtest")
    tests = tuple(parse_test(t, at, loads) for t in _names(data.get("tests"), f"{at}: tests"))
    if not tests or tests[0].kind is not Kind.SIG_ENFORCE:
        raise InputError(f"{at}: tests must start with sig_enforce_enabled")
    signed = by_name[loads[tests[-1].load]] if tests[-1].load in loads.values() else None
    if signed is None:
        raise InputError(f"{at}: tests must end with a load's tests")
    return Subtest("enforced", signed.module, signed.file, False, signed.distribution,
                   tests, "")


def _read(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(Path(path).read_text())
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as err:
        raise InputError(f"{path}: cannot read: {err}") from None


def _xfail(data: Mapping[str, Any], key: str, where: str) -> frozenset[str]:
    value = data.get(key, [])
    return frozenset(_names(value, f"{where} [xfail] {key}"))


def _fix(name: str, data: dict[str, Any], path: Path) -> tuple[Fix, dict[str, Any]]:
    where = str(path)
    _known(data, {"since", "taint", "logs", "modules", "kconfig", "subtests", "xfail",
                  "not_applicable"}, where)
    m = RELEASE.match(_string(data, "since", where))
    if not m:
        raise InputError(f"{where}: since must be an upstream release, \"v6.0\"")
    xfail = _table(data, "xfail", where)
    _known(xfail, {"bug", "absent"}, f"{where} [xfail]")
    if not xfail.get("bug"):
        raise InputError(f"{where}: [xfail] bug missing or empty: the test would not catch "
                         "the fix's bug")
    kconfig = _table(data, "kconfig", where)
    _known(kconfig, {"fragment"}, f"{where} [kconfig]")
    fragment = _string(kconfig, "fragment", f"{where} [kconfig]", default="")
    if fragment and not (REPO / "kconfigs" / fragment).is_file():
        raise InputError(f"{where}: [kconfig] fragment kconfigs/{fragment} does not exist")
    not_applicable = _table(data, "not_applicable", where)
    if not all(isinstance(v, str) and v for v in not_applicable.values()):
        raise InputError(f"{where}: [not_applicable] maps a version to why")
    unknown = sorted(v for v in not_applicable if not (VERSIONS / f"{v}.toml").is_file())
    if unknown:
        raise InputError(f"{where}: [not_applicable] names no version of {VERSIONS}: "
                         f"{', '.join(unknown)}")
    absent = _xfail(xfail, "absent", where)
    if not_applicable and not absent:
        raise InputError(f"{where}: [xfail] absent missing: what a version of "
                         "[not_applicable] fails")
    taints = frozenset(t.name for t in _taints(_table(data, "taint", where), where).values())
    return Fix(name, (int(m.group(1)), int(m.group(2))), _xfail(xfail, "bug", where), absent,
               dict(not_applicable), fragment, taints), data


def _merge(into: dict[str, Any], more: Mapping[str, Any], what: str, where: str) -> None:
    twice = sorted(set(into) & set(more))
    if twice:
        raise InputError(f"{where}: {what} {', '.join(twice)} defined twice")
    into.update(more)


def load(guest: Path = GUEST, fixes: Path = FIXES) -> Guest:
    """guest.toml and every fixes/<fix>.toml, checked: each test's name is one
    the agent understands, about a letter, a log line, a module and an event
    that are defined, and each expected failure is a test."""
    base = _read(guest)
    _known(base, {"taints", "logs", "modules", "subtests", "enforced"}, str(guest))
    taints = _taints(_table(base, "taints", str(guest)), str(guest))
    logs = dict(_table(base, "logs", str(guest)))
    modules = _modules(_table(base, "modules", str(guest)), str(guest))
    found = []
    for path in sorted(Path(fixes).glob("*.toml")):
        if not FIX_NAME.match(path.stem):
            raise InputError(f"{path}: a fix's name is {FIX_NAME.pattern}")
        found.append(_fix(path.stem, _read(path), path))
    found.sort(key=lambda pair: pair[0].since)
    subtests: list[Subtest] = []
    for fix, data in found:
        where = str(Path(fixes) / f"{fix.name}.toml")
        _merge(taints, _taints(_table(data, "taint", where), where), "taint", where)
        _merge(logs, _table(data, "logs", where), "log", where)
        _merge(modules, _modules(_table(data, "modules", where), where), "module", where)
        subtests += _subtests(data.get("subtests", []), fix.name, where)
    subtests += _subtests(base.get("subtests", []), "", str(guest))
    subtests.append(_enforced(base.get("enforced"), subtests, str(guest)))
    result = Guest(taints, logs, modules, tuple(subtests), {f.name: f for f, _ in found})
    _check(result, str(fixes))
    return result


def _check(guest: Guest, where: str) -> None:
    names = [s.name for s in guest.subtests]
    if len(names) != len(set(names)):
        raise InputError(f"{where}: a subtest name is used twice: {', '.join(names)}")
    if sum(1 for t in guest.taints.values() if t.cmdline) > 1:
        raise InputError(f"{where}: one taint only may be named on the command line")
    for log, line in guest.logs.items():
        if not LOG_KEY.match(log) or not isinstance(line, str) or not line:
            raise InputError(f"{where}: [logs] {log} must be a line the kernel logs")
    for sub in guest.subtests:
        module = guest.modules.get(sub.module)
        if module is None:
            raise InputError(f"{where}: subtest {sub.name} loads unknown module {sub.module}")
        for test in sub.tests:
            at = f"{where}: {sub.name}.{test.name}"
            if test.letter and test.letter not in guest.taints:
                raise InputError(f"{at}: no taint has the letter {test.letter}")
            if test.log and test.log not in guest.logs:
                raise InputError(f"{at}: [logs] has no {test.log}")
            if test.kind in (Kind.PATCH_ENABLED, Kind.PATCH_APPLIES) and not module.patches:
                raise InputError(f"{at}: {sub.module} is not a livepatch")
    tests = set(guest.tests)
    for fix in guest.fixes.values():
        strange = sorted((fix.xfail | fix.absent) - tests)
        if strange:
            raise InputError(f"{where}/{fix.name}.toml: [xfail] names test(s) no subtest "
                             f"has: {', '.join(strange)}")
