"""A run in KernelCI's KCIDB shape: checkouts -> builds -> tests (I/O schema v4.3).

One checkout per version (the Debian source package plus its quilt series),
one build per version x variant, one test per check of a cell plus one per
cell for its verdict. The test statuses defined here are the vocabulary every
report shares: FAIL is the kernel being wrong, ERROR and MISS the run being
wrong (see docs/report-schema.md).
"""
import enum
import hashlib

from .verdict import Status as Verdict

ORIGIN = "taintport"
SCHEMA_VERSION = {"major": 4, "minor": 3}
EXCERPT_MAX = 16384  # the schema's maxLength for log_excerpt


class Status(str, enum.Enum):
    """KCIDB test statuses we produce, in KCIDB's priority order."""
    FAIL = "FAIL"
    ERROR = "ERROR"
    MISS = "MISS"
    PASS = "PASS"
    SKIP = "SKIP"


def check_status(cell, check):
    if check.get("directive") == "SKIP":
        return Status.SKIP
    if check["observed"] == "missing":
        return Status.MISS
    if cell["status"] == Verdict.ERROR.value:
        return Status.ERROR  # the run broke: what it did observe is not trusted
    return Status.PASS if check["matches"] else Status.FAIL


def cell_status(cell):
    # a known bug of the shipped tree is what its expectations say: the
    # test passed; misc.fixes and the cell's status say which fix is missing
    return {Verdict.AS_EXPECTED.value: Status.PASS, Verdict.KNOWN_BUG.value: Status.PASS,
            Verdict.UNEXPECTED.value: Status.FAIL}.get(cell["status"], Status.ERROR)


def by_version(cells):
    """{version: [its cells]}, in the order of the run."""
    versions = {}
    for cell in cells:
        versions.setdefault(cell["version"], []).append(cell)
    return versions


def runs(doc):
    """The runs (started, tools, accelerator) a matrix document holds.

    A merged document (`taintport report merge`) keeps one entry per source
    run under "runs"; a single run keeps them at the top level.
    """
    return doc.get("runs") or [doc]


def run_of(doc, cell):
    key = f"{cell['version']}/{cell['variant']}"
    return next((run for run in doc.get("runs", ()) if key in run["cells"]), doc)


def evidence(cell, check):
    """What the agent printed about a check.

    The agent prints one block of diagnostics before a group of results (the
    kernel log before the three log_* results, for example), so a check with
    none of its own shares the block of the check before it in its subtest.
    """
    mode = check["name"].partition(".")[0]
    shown = []
    for other in cell["checks"]:
        if other["name"].partition(".")[0] != mode:
            continue
        shown = other["diagnostics"] or shown
        if other is check:
            return shown
    return check["diagnostics"]


def check_path(name):
    """unsigned.events_present -> taintport.unsigned.events_present"""
    return f"{ORIGIN}.{name}"


def patchset_hash(digests):
    """KCIDB: sha256 over the newline-terminated sha256 of each patch, in order."""
    if not digests:
        return ""
    return hashlib.sha256("".join(d + "\n" for d in digests).encode()).hexdigest()


def resources(version, patches):
    # a resource name may not hold a directory: reverted/0001-x.patch -> reverted-0001-x.patch
    return [{"name": p.replace("/", "-"), "url": f"quilt/{version}/{p}"} for p in patches]


def compact(obj):
    """KCIDB allows no null property: leave out what is unknown."""
    return {k: v for k, v in obj.items() if v is not None}


def built(cell):
    return "build" in cell["timings"]


def checkout(version, cells, run):
    series = max((c["inputs"].get("series", {}) for c in cells), key=len)
    inputs = next((c["inputs"] for c in cells if c["inputs"]), {})
    return compact({
        "id": f"{ORIGIN}:{version}", "origin": ORIGIN, "tree_name": version,
        "comment": (f"{inputs['package']} {inputs['package_version']}"
                    if inputs else None),
        "patchset_files": resources(version, series) if inputs else None,
        "patchset_hash": patchset_hash(list(series.values())) if inputs else None,
        "start_time": run.get("started"),
        "valid": all(built(c) for c in cells),
        "misc": compact({"package": inputs.get("package"),
                         "package_version": inputs.get("package_version"),
                         "deb_sha256": inputs.get("deb_sha256"),
                         "patches": series}),
    })


def config_name(inputs):
    fragments = [f.removesuffix(".config") for f in inputs.get("fragments", {})]
    return "+".join(["tinyconfig"] + fragments)


def build(cell, run):
    version, variant, inputs = cell["version"], cell["variant"], cell["inputs"]
    return compact({
        "id": f"{ORIGIN}:{version}:{variant}", "origin": ORIGIN,
        "checkout_id": f"{ORIGIN}:{version}",
        "comment": f"{version} {variant}",
        "architecture": "x86_64",
        "compiler": run.get("tools", {}).get("gcc"),
        "config_name": config_name(inputs),
        "input_files": resources(version, inputs.get("series", {})),
        "log_url": cell["logs"]["build"],
        "duration": cell["timings"].get("build"),
        # a build that never started (fetch or apply broke) is unknown, not invalid
        "valid": cell["kernel_release"] is not None if built(cell) else None,
        "misc": compact({"variant": variant, "kernel_release": cell["kernel_release"],
                         "bzimage_sha256": inputs.get("bzimage_sha256"),
                         "fragments": inputs.get("fragments"),
                         "timings": cell["timings"], "reused": cell.get("reused")}),
    })


def environment(cell, run):
    accel = cell["accelerator"]
    return {"comment": f"QEMU x86_64 ({accel or 'no boot'})",
            "misc": compact({"accelerator": accel,
                             "qemu": run.get("tools", {}).get("qemu")})}


def verdict_test(cell, run):
    version, variant = cell["version"], cell["variant"]
    excerpt = "\n".join(cell["errors"] + cell.get("panic", []))
    return compact({
        "id": f"{ORIGIN}:{version}:{variant}", "origin": ORIGIN,
        "build_id": f"{ORIGIN}:{version}:{variant}",
        "path": ORIGIN, "status": cell_status(cell).value,
        "comment": f"{version} {variant}: {cell['status']}",
        "log_url": cell["logs"]["console"] if "boot" in cell["timings"] else None,
        "log_excerpt": excerpt[-EXCERPT_MAX:] or None,
        "duration": cell["timings"].get("boot"),
        "environment": environment(cell, run),
        "misc": compact({"status": cell["status"], "errors": cell["errors"],
                         "fixes": cell.get("fixes"), "reused_from": cell.get("reused_from"),
                         "accelerator": cell["accelerator"],
                         "kernel_release": cell["kernel_release"],
                         "qemu_exit_code": cell["qemu_exit_code"],
                         "reused": cell.get("reused"), "resumed": cell.get("resumed")}),
    })


def check_test(cell, check, run):
    version, variant, name = cell["version"], cell["variant"], check["name"]
    return compact({
        "id": f"{ORIGIN}:{version}:{variant}:{name}", "origin": ORIGIN,
        "build_id": f"{ORIGIN}:{version}:{variant}",
        "path": check_path(name), "status": check_status(cell, check).value,
        "comment": f"{name}: expected {check['expected']}, observed {check['observed']}",
        "log_url": cell["logs"]["console"],
        "log_excerpt": "\n".join(evidence(cell, check))[-EXCERPT_MAX:] or None,
        "environment": environment(cell, run),
        "misc": compact({"expected": check["expected"], "observed": check["observed"],
                         "accelerator": cell["accelerator"]}),
    })


def report(doc):
    """The KCIDB view of a matrix document, as stored under its "kcidb" key."""
    out = {"version": dict(SCHEMA_VERSION), "checkouts": [], "builds": [], "tests": []}
    for version, cells in by_version(doc["cells"]).items():
        out["checkouts"].append(checkout(version, cells, run_of(doc, cells[0])))
        for cell in cells:
            run = run_of(doc, cell)
            out["builds"].append(build(cell, run))
            out["tests"].append(verdict_test(cell, run))
            out["tests"] += [check_test(cell, check, run) for check in cell["checks"]]
    return out
