"""The matrix: versions x variants, each cell built, booted and judged.

Per version: fetch once, then walk the variants in series order (upstream,
reverted, backported) on the same tree and build dir, so only the first
variant pays for a full kernel build.
"""
import hashlib
import platform
import secrets
import shutil
import subprocess
import time
from pathlib import Path

from . import REPO, boot, build, fetch, initramfs, kconfig, ktap, report, series, verdict
from .errors import InputError, TaintportError

DEFAULT_TIMEOUT = 180


def digest(path):
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def tree_digest(folder):
    h = hashlib.sha256()
    for f in sorted(p for p in Path(folder).rglob("*") if p.is_file()):
        h.update(str(f.relative_to(folder)).encode() + b"\0" + f.read_bytes())
    return h.hexdigest()


def tool_versions():
    def first_line(cmd):
        try:
            out = subprocess.run(cmd, capture_output=True, text=True, timeout=20)
            return (out.stdout or out.stderr).strip().splitlines()[0]
        except (OSError, IndexError, subprocess.TimeoutExpired):
            return "missing"
    return {"gcc": first_line(["gcc", "--version"]),
            "qemu": first_line([boot.QEMU, "--version"]),
            "dracut": first_line(["dracut", "--version"]),
            "quilt": first_line(["quilt", "--version"]),
            "spatch": first_line(["spatch", "--version"]),
            "python": platform.python_version()}


def inputs(version, quilt_series, variant):
    patches = {p: digest(quilt_series.directory / p) for p in quilt_series.for_variant(variant)}
    return {"package": version.package, "package_version": version.version,
            "deb_sha256": version.sha256,
            "series": patches,
            "fragments": {f.name: digest(f) for f in kconfig.fragments(version.name)},
            "expectations_sha256": digest(verdict.EXPECTATIONS),
            "test_matrix_sha256": tree_digest(REPO / "test-matrix")}


class Runner:
    def __init__(self, cache, out, *, quilt_dir=series.QUILT_DIR, jobs=None,
                 timeout=DEFAULT_TIMEOUT, accel=None, log=print):
        self.cache = cache
        self.out = Path(out)
        self.quilt_dir = Path(quilt_dir)
        self.jobs = jobs or build.default_jobs()
        self.timeout = timeout
        self.accel = accel  # boot.Accel, decided by the first probe
        self.expectations = verdict.load()
        self.cells = []
        self.log = log
        self.meta = {"started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                     "tools": tool_versions()}

    def publish(self, cell):
        self.cells.append(cell)
        report.write_cell(self.out, cell)
        meta = dict(self.meta)
        if self.accel:
            meta["accelerator"] = {"name": self.accel.name, "reason": self.accel.reason}
        report.write_matrix(self.out, meta, self.cells)

    def run(self, versions, variants):
        for variant in variants:
            series.check_variant(variant)
            verdict.for_variant(self.expectations, variant)
        ordered = [v for v in series.VARIANTS if v in variants]
        for version in versions:
            with self.cache.locked(version.name):
                self.run_version(version, ordered)
        return report.exit_code(self.cells)

    def cell_base(self, version, variant):
        return {"version": version.name, "variant": variant, "status": "error",
                "errors": [], "checks": [], "timings": {}, "accelerator": None,
                "kernel_release": None, "inputs": {}, "qemu_exit_code": None,
                "logs": {"build": f"{version.name}/{variant}/build.log",
                         "console": f"{version.name}/{variant}/console.log"}}

    def run_version(self, version, variants):
        vdir = self.out / version.name
        vdir.mkdir(parents=True, exist_ok=True)
        start = time.monotonic()
        try:
            self.log(f"[{version.name}] fetch {version.package} {version.version}")
            fetched = fetch.fetch(self.cache, version, vdir / "fetch.log")
            quilt_series = series.load(version.name, self.quilt_dir)
        except TaintportError as err:
            for variant in variants:
                cell = self.cell_base(version, variant)
                cell["errors"] = [str(err)]
                self.publish(cell)
            self.log(f"[{version.name}] error: {err}")
            return
        fetch_seconds = time.monotonic() - start
        for variant in variants:
            cell = self.cell_base(version, variant)
            cell["timings"]["fetch"] = round(fetch_seconds, 2)
            try:
                cell["inputs"] = inputs(version, quilt_series, variant)
                self.run_cell(version, fetched.tree, quilt_series, variant, cell)
            except TaintportError as err:
                cell["status"] = "error"
                cell["errors"].append(str(err))
            self.publish(cell)
            self.log(f"[{version.name}] {variant}: {cell['status']}"
                     + (f" ({cell['errors'][0].splitlines()[0]})" if cell["errors"] else ""))

    def timed(self, cell, stage, func, *args):
        self.log(f"[{cell['version']}] {cell['variant']}: {stage}")
        start = time.monotonic()
        try:
            return func(*args)
        finally:
            cell["timings"][stage] = round(time.monotonic() - start, 2)

    def run_cell(self, version, tree, quilt_series, variant, cell):
        cdir = self.out / version.name / variant
        cdir.mkdir(parents=True, exist_ok=True)
        build_log = cdir / "build.log"
        touched = self.timed(cell, "apply", series.switch, tree, quilt_series, variant,
                             build_log)
        if variant == "backported":
            differ = series.differs_from_upstream(tree, touched)
            if differ:
                raise InputError("reverted + layer is not byte-identical to upstream in: "
                                 + ", ".join(differ))
        artifacts = self.timed(cell, "build", build.build_variant, tree,
                               self.cache.build(version), version.name,
                               self.cache.artifacts(version, variant), build_log,
                               self.jobs, self.cache.root)
        cell["kernel_release"] = artifacts.release
        cell["inputs"]["bzimage_sha256"] = digest(artifacts.bzimage)
        token = secrets.token_hex(8)
        image = self.timed(cell, "initramfs", initramfs.build, artifacts, token,
                           self.cache.root, artifacts.directory / "initramfs.img", build_log)
        if self.accel is None:
            self.accel = self.timed(cell, "kvm_probe", boot.probe, artifacts.bzimage,
                                    artifacts.directory)
            self.log(f"accelerator: {self.accel.name} ({self.accel.reason})")
        cell["accelerator"] = self.accel.name
        append = f"console=ttyS0 panic=-1 taintport.token={token}"
        booted = self.timed(cell, "boot", boot.boot, artifacts.bzimage, image,
                            cdir / "console.log", append, self.accel.name, self.timeout)
        cell["qemu_exit_code"] = booted.exit_code
        text = booted.console.read_text(errors="replace") if booted.console.exists() else ""
        parsed = ktap.parse(text)
        (cdir / "ktap.txt").write_text("\n".join(parsed.lines) + "\n")
        if booted.timed_out:
            parsed.errors.insert(0, f"guest killed at the {self.timeout}s timeout")
        judgement = verdict.judge(parsed, verdict.for_variant(self.expectations, variant))
        cell["status"] = judgement.status.value
        cell["errors"] += judgement.errors
        cell["checks"] = [c.as_dict() for c in judgement.checks]
        if parsed.panic:
            cell["panic"] = parsed.panic


def default_out():
    return REPO / "results" / time.strftime("%Y%m%dT%H%M%S")


def remove_if_empty(path):
    path = Path(path)
    if path.exists() and not any(path.iterdir()):
        shutil.rmtree(path)
