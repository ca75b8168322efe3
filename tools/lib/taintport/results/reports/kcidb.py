# SPDX-License-Identifier: GPL-2.0
"""A run in KernelCI's KCIDB shape: checkouts -> builds -> tests (I/O schema v4.3).

One checkout per version (the Debian source package plus its quilt series),
one build per version x variant, one test per check of a cell plus one per
cell for its verdict. The test statuses defined here are the vocabulary every
report shares: FAIL is the kernel being wrong, ERROR and MISS the run being
wrong (see docs/report-schema.md). A known bug of a kernel as shipped is an
`issue` (one per version and missing fix) whose `incidents` link each test
that shows it; those tests are FAIL, as KCIDB reads an issue's occurrence.

Every URL is absolute, as the schema's `format: uri` demands: a file of the
results folder (a log, a copy of a quilt patch the run applied) is linked
where the folder is published (`--artifacts-url BASE`, or the variable a
generated CI pipeline sets to its job's artifacts), else as a file:// URL of
the folder itself.
"""
import datetime
import enum
import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence
from urllib.parse import quote, urlsplit

from taintport.errors import InputError
from taintport.judge.verdict import Check
from taintport.judge.verdict import Status as Verdict
from taintport.results.cells import Cell, Matrix, Run, word
from taintport.results.reports import knownbug

ORIGIN = "taintport"
SCHEMA_VERSION = {"major": 4, "minor": 3}
EXCERPT_MAX = 16384  # the schema's maxLength for log_excerpt
KcidbObject = dict[str, Any]  # an object of the KCIDB schema, as written to matrix.json
# kcidb-io's origin_pattern: what a KCIDB instance accepts as a submitter's name
ORIGIN_NAME = re.compile(r"[a-z0-9_]+")
# where the results folder is published; the generated pipelines set it
ARTIFACTS_ENV = "TAINTPORT_ARTIFACTS_URL"
# RFC 3986's characters (unreserved, reserved, percent); nothing else in a base
URI_CHARACTERS = re.compile(r"[A-Za-z0-9._~:/?#\[\]@!$&'()*+,;=%-]+")
# <version>/patches/<group>/<name>.patch: the quilt patches a run applied,
# copied into its results folder with the reports (render.write_patches)
PATCHES = "patches"


@dataclass(frozen=True)
class Artifacts:
    """Where a results folder is published: a file of it is base + its path."""
    base: str

    def url(self, path: str) -> str:
        # a base ending in "#" takes the path as its fragment (a page that lists
        # the artifact, where no URL reaches a file inside it: GitHub's run page)
        joiner = "" if self.base.endswith(("/", "#")) else "/"
        return self.base + joiner + quote(path, safe="/")


def artifacts(out: Path | str, given: str | None = None) -> Artifacts:
    """--artifacts-url BASE, else $TAINTPORT_ARTIFACTS_URL, else the folder's file:// URL."""
    source, base = ("--artifacts-url", given) if given else \
        (f"${ARTIFACTS_ENV}", os.environ.get(ARTIFACTS_ENV, ""))
    if not base:
        return Artifacts(Path(out).resolve().as_uri())
    parts = urlsplit(base) if URI_CHARACTERS.fullmatch(base) else None
    if parts is None or parts.scheme not in ("https", "http", "file") or \
            (parts.scheme != "file" and not parts.netloc):
        raise InputError(f"{source}: {base!r} is not an absolute http(s):// or file:// URL "
                         "(where the results folder is published)")
    if "@" in parts.netloc:
        # every URL of every report would publish them: refused, and not repeated here
        shown = parts._replace(netloc="***@" + parts.netloc.rpartition("@")[2]).geturl()
        raise InputError(f"{source}: {shown!r} holds a user name or password: the URLs made "
                         "from it are published in matrix.json and every report; give the "
                         "base without them")
    return Artifacts(base)


def origin_name(value: str, where: str = "--origin") -> str:
    if not ORIGIN_NAME.fullmatch(value):
        raise InputError(f"{where}: {value!r} is not a KCIDB origin (lower case letters, "
                         "digits and '_', as the KCIDB instance named it)")
    return value


def patch_path(version: str, name: str) -> str:
    """Where a results folder keeps its copy of a patch the run applied."""
    return f"{version}/{PATCHES}/{name}"


class Status(str, enum.Enum):
    """KCIDB test statuses we produce, in KCIDB's priority order. A check the
    agent skipped (# SKIP: it could not observe the fact) is SKIP; verdict
    makes its cell an error."""
    FAIL = "FAIL"
    ERROR = "ERROR"
    MISS = "MISS"
    PASS = "PASS"
    SKIP = "SKIP"


def check_status(cell: Cell, check: Check) -> Status:
    if check.directive == "SKIP":
        return Status.SKIP  # the agent said it could not observe the fact
    if check.observed is None:
        return Status.MISS
    if cell.status is Verdict.ERROR:
        return Status.ERROR  # the run broke: what it did observe is not trusted
    return Status.PASS if check.matches else Status.FAIL


def cell_status(cell: Cell) -> Status:
    """The status of a cell's verdict test: a known bug of the tree as shipped
    is FAIL (the kernel users run is wrong), linked to its issues."""
    return {Verdict.AS_EXPECTED: Status.PASS, Verdict.KNOWN_BUG: Status.FAIL,
            Verdict.UNEXPECTED: Status.FAIL}.get(cell.status, Status.ERROR)


def reported_status(cell: Cell, check: Check) -> Status:
    """A check's test in the KCIDB view: FAIL where it shows a known bug."""
    return Status.FAIL if knownbug.fixes_shown(cell, check) else check_status(cell, check)


def by_version(cells: Sequence[Cell]) -> dict[str, list[Cell]]:
    """{version: [its cells]}, in the order of the run."""
    versions: dict[str, list[Cell]] = {}
    for cell in cells:
        versions.setdefault(cell.version, []).append(cell)
    return versions


def evidence(cell: Cell, check: Check) -> tuple[str, ...]:
    """What the agent printed about a check.

    The agent prints one block of diagnostics before a group of results (the
    kernel log before the three log_* results, for example), so a check with
    none of its own shares the block of the check before it in its subtest.
    """
    # a host check is a group of its own
    mode = check.subtest or check.name
    shown: tuple[str, ...] = ()
    for other in cell.checks:
        if (other.subtest or other.name) != mode:
            continue
        shown = other.diagnostics or shown
        if other is check:
            return shown
    return check.diagnostics


def check_path(name: str) -> str:
    """unsigned.events_present -> taintport.unsigned.events_present"""
    return f"{ORIGIN}.{name}"


def patchset_hash(digests: list[str]) -> str:
    """KCIDB: sha256 over the newline-terminated sha256 of each patch, in order."""
    if not digests:
        return ""
    return hashlib.sha256("".join(d + "\n" for d in digests).encode()).hexdigest()


def resources(version: str, patches: dict[str, str], where: Artifacts) -> list[dict[str, str]]:
    # a resource name may not hold a directory: reverted/0001-x.patch -> reverted-0001-x.patch
    return [{"name": p.replace("/", "-"), "url": where.url(patch_path(version, p))}
            for p in patches]


def compact(obj: KcidbObject) -> KcidbObject:
    """KCIDB allows no null property: leave out what is unknown."""
    return {k: v for k, v in obj.items() if v is not None}


def built(cell: Cell) -> bool:
    return cell.timings.build is not None


def checkout(version: str, cells: list[Cell], run: Run | Matrix, where: Artifacts,
             origin: str) -> KcidbObject:
    empty: dict[str, str] = {}
    series = max((c.inputs.series for c in cells if c.inputs), key=len, default=empty)
    # the source package is the checkout; a distribution binary's inputs name its image
    inputs = next((c.inputs for c in cells if c.inputs and c.variant.from_tree),
                  next((c.inputs for c in cells if c.inputs), None))
    return compact({
        "id": f"{origin}:{version}", "origin": origin, "tree_name": version,
        "comment": f"{inputs.package} {inputs.package_version}" if inputs else None,
        "patchset_files": resources(version, series, where) if inputs else None,
        "patchset_hash": patchset_hash(list(series.values())) if inputs else None,
        "start_time": run.started,
        # the checkout is the source tree fetched and patched: a cell that took
        # another's build (patched) still had its tree; the binary needs none
        "valid": all(c.timings.apply is not None for c in cells if c.variant.from_tree),
        "misc": compact({"package": inputs.package if inputs else None,
                         "package_version": inputs.package_version if inputs else None,
                         "deb_sha256": inputs.deb_sha256 or None if inputs else None,
                         "patches": series}),
    })


def config_name(cell: Cell) -> str:
    inputs = cell.inputs
    if not cell.variant.from_tree:
        # the distribution's build, with the distribution's configuration
        return f"distribution:{inputs.package}" if inputs else "distribution"
    fragments = [f.removesuffix(".config") for f in (inputs.fragments if inputs else {})]
    return "+".join(["tinyconfig"] + fragments)


def build(cell: Cell, run: Run | Matrix, where: Artifacts, origin: str) -> KcidbObject:
    version, variant, inputs = cell.version, cell.variant, cell.inputs
    return compact({
        "id": id_of(origin, cell), "origin": origin,
        "checkout_id": f"{origin}:{version}",
        "comment": f"{version} {variant}",
        "architecture": "x86_64",
        "compiler": run.tools.get("gcc"),
        "config_name": config_name(cell),
        "input_files": resources(version, inputs.series if inputs else {}, where),
        "log_url": where.url(cell.logs.build),
        "duration": cell.timings.build,
        # a build that never started (fetch or apply broke) is unknown, not invalid
        "valid": cell.kernel_release is not None if built(cell) else None,
        "misc": compact({"variant": variant.name, "kernel_release": cell.kernel_release,
                         "kernel_version": cell.kernel_version,
                         "bzimage_sha256": inputs.bzimage_sha256 if inputs else None,
                         "binaries": inputs.binaries or None if inputs else None,
                         "fragments": inputs.fragments if inputs else None,
                         "timings": cell.timings.by_stage(),
                         "reused": cell.reused or None}),
    })


def environment(cell: Cell, run: Run | Matrix) -> KcidbObject:
    accel = cell.accelerator
    return {"comment": f"QEMU x86_64 ({accel or 'no boot'})",
            "misc": compact({"accelerator": accel, "qemu": run.tools.get("qemu")})}


def verdict_test(cell: Cell, run: Run | Matrix, where: Artifacts, origin: str) -> KcidbObject:
    version, variant = cell.version, cell.variant
    excerpt = "\n".join(cell.errors + cell.panic)
    return compact({
        "id": id_of(origin, cell), "origin": origin,
        "build_id": id_of(origin, cell),
        "path": ORIGIN, "status": cell_status(cell).value,
        "comment": f"{version} {variant}: " + (
            knownbug.message(cell.missing_fixes()) if cell.status is Verdict.KNOWN_BUG
            else cell.status.value),
        "log_url": where.url(cell.logs.console) if cell.timings.boot is not None else None,
        "log_excerpt": excerpt[-EXCERPT_MAX:] or None,
        "duration": cell.timings.boot,
        "environment": environment(cell, run),
        "misc": compact({"status": cell.status.value, "errors": cell.errors,
                         "fixes": {fix: state.value for fix, state in cell.fixes.items()}
                         or None,
                         "reused_from": cell.reused_from.name if cell.reused_from else None,
                         "accelerator": cell.accelerator,
                         "kernel_release": cell.kernel_release,
                         "qemu_exit_code": cell.qemu_exit_code,
                         "reused": cell.reused or None, "resumed": cell.resumed or None}),
    })


def check_test(cell: Cell, check: Check, run: Run | Matrix, where: Artifacts,
               origin: str) -> KcidbObject:
    name = check.name
    expected, observed = word(check.expected), word(check.observed)
    shown = knownbug.fixes_shown(cell, check)
    return compact({
        "id": id_of(origin, cell, check), "origin": origin,
        "build_id": id_of(origin, cell),
        "path": check_path(name), "status": reported_status(cell, check).value,
        "comment": f"{name}: " + (knownbug.message(shown) if shown
                                  else f"expected {expected}, observed {observed}"),
        "log_url": where.url(cell.logs.console),
        "log_excerpt": "\n".join(evidence(cell, check))[-EXCERPT_MAX:] or None,
        "environment": environment(cell, run),
        "misc": compact({"expected": expected, "observed": observed,
                         "accelerator": cell.accelerator}),
    })


def id_of(origin: str, cell: Cell, check: Check | None = None) -> str:
    """The id of a cell's build and verdict test, or of one of its checks' tests."""
    return f"{origin}:{cell.version}:{cell.variant}" + (f":{check.name}" if check else "")


def issue_id(origin: str, version: str, fix: str) -> str:
    """One issue per kernel (version) and fix it lacks as shipped."""
    return f"{origin}:{version}:{fix}"


def issue_version(doc: Matrix, cells: Sequence[Cell]) -> int:
    """An issue's modification version: KCIDB triages with the highest, so it
    is the start of the newest run that showed the bug, in seconds since the
    epoch (a later submission wins); 0 when no run says when it started."""
    seconds = []
    for cell in cells:
        started = doc.run_of(cell).started
        try:
            when = datetime.datetime.fromisoformat((started or "").replace("Z", "+00:00"))
        except ValueError:
            continue  # a hand-edited start: the version is only an order
        if when.tzinfo is None:
            when = when.replace(tzinfo=datetime.timezone.utc)
        seconds.append(max(0, int(when.timestamp())))
    return max(seconds, default=0)


def issue(bug: knownbug.KnownBug, version: int, origin: str) -> KcidbObject:
    """A fix a kernel lacks as shipped: the bug of its code (culprit), the
    upstream commit that fixes it (report_url), who runs it (comment, misc)."""
    info = bug.info
    return compact({
        "id": issue_id(origin, bug.version, bug.fix), "version": version, "origin": origin,
        "report_url": bug.commit_url,
        "report_subject": info.upstream.subject if info else None,
        "culprit": {"code": True, "tool": False, "harness": False},
        "build_valid": True, "test_status": Status.FAIL.value,
        "comment": bug.describe(),
        "misc": compact({"version": bug.version, "fix": bug.fix,
                         "upstream_commit": info.upstream.commit if info else None,
                         "upstream_release": info.upstream.release if info else None,
                         "uploads": bug.uploads or None, "users": bug.users or None,
                         "cells": [c.variant.name for c in bug.cells]}),
    })


def incidents(cell: Cell, issue_versions: dict[str, int], origin: str) -> list[KcidbObject]:
    """One incident per test of a known-bug cell and fix it shows missing:
    the verdict test, and each check that is an expected failure of the fix."""
    if cell.status is not Verdict.KNOWN_BUG:
        return []
    version = cell.version
    shown = [(id_of(origin, cell), cell.missing_fixes())]
    shown += [(id_of(origin, cell, check), list(fixes))
              for check in cell.checks if (fixes := knownbug.fixes_shown(cell, check))]
    return [{"id": f"{test}:{fix}", "origin": origin,
             "issue_id": issue_id(origin, version, fix),
             "issue_version": issue_versions[issue_id(origin, version, fix)],
             "test_id": test, "present": True,
             "comment": knownbug.message([fix])}
            for test, fixes in shown for fix in fixes]


def report(doc: Matrix, where: Artifacts, origin: str = ORIGIN) -> KcidbObject:
    """The KCIDB view of a matrix document, as stored under its "kcidb" key
    and printed by `report kcidb` (what kcidb-submit reads); its URLs lead
    to the results folder where `where` publishes it."""
    checkouts, builds, tests = [], [], []
    for version, cells in by_version(doc.cells).items():
        checkouts.append(checkout(version, cells, doc.run_of(cells[0]), where, origin))
        for cell in cells:
            run = doc.run_of(cell)
            builds.append(build(cell, run, where, origin))
            tests.append(verdict_test(cell, run, where, origin))
            tests += [check_test(cell, check, run, where, origin) for check in cell.checks]
    view: KcidbObject = {"version": dict(SCHEMA_VERSION), "checkouts": checkouts,
                         "builds": builds, "tests": tests}
    bugs = knownbug.known_bugs(doc.cells)
    if bugs:
        issue_versions = {issue_id(origin, bug.version, bug.fix): issue_version(doc, bug.cells)
                          for bug in bugs}
        view["issues"] = [issue(bug, issue_versions[issue_id(origin, bug.version, bug.fix)],
                                origin) for bug in bugs]
        view["incidents"] = [i for cell in doc.cells
                             for i in incidents(cell, issue_versions, origin)]
    return view
