# SPDX-License-Identifier: GPL-2.0
"""End to end on bookworm's 6.1: fetch, four variants built and booted, judged,
and Debian's own binary of the tree (shipped) booted beside them.

These build a real kernel (about 4 minutes cold on 2 cores, seconds warm)
and boot it under QEMU. They share the user's taintport cache, where the
Debian binary's packages are downloaded once like the source package.
"""
import json
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from consumer_checks import junit_problems, kcidb_problems
from test_ktap import as_captured
from taintport.cache import Cache
from taintport.judge import ktap, verdict
from taintport.layer import fixes
from taintport.tree import versions
from taintport.tree.variants import named

REPO = Path(__file__).resolve().parents[2]
TAINTPORT = [sys.executable, str(REPO / "tools" / "taintport")]
VERSION = "bookworm-6.1"

pytestmark = [pytest.mark.e2e, pytest.mark.users_cache]


def matrix(out, *extra):
    # --rerun: this test must boot, not reuse a stored cell
    proc = subprocess.run([*TAINTPORT, "matrix", "--rerun", "--versions", VERSION, "--out", str(out),
                           *extra], capture_output=True, text=True)
    print(proc.stdout)
    print(proc.stderr, file=sys.stderr)
    doc = json.loads((out / "matrix.json").read_text())
    return proc, {c["variant"]: c for c in doc["cells"]}, doc


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """One matrix run of the five variants, shared by the tests that read it."""
    out = tmp_path_factory.mktemp("e2e") / "run"
    proc, cells, doc = matrix(out)
    return out, proc, cells


def test_four_variants_as_expected(run):
    out, proc, cells = run
    assert proc.returncode == 0, [c["errors"] for c in cells.values()]
    assert set(cells) == {"upstream", "shipped", "reverted", "backported", "patched"}
    cells = {v: c for v, c in cells.items() if v != "shipped"}  # test_debian_binary
    # bookworm's 6.1 as Debian ships it lacks e7bb66f79a7b: a known bug, seen as one
    assert cells["upstream"]["status"] == "known-bug"
    assert cells["upstream"]["fixes"] == {"unsigned": "present", "test": "present",
                                        "livepatch": "missing"}
    assert all(cells[v]["status"] == "as-expected" for v in ("reverted", "backported", "patched"))
    assert cells["reverted"]["fixes"] == {"unsigned": "reconstructed", "test": "reconstructed",
                                        "livepatch": "missing"}
    assert cells["backported"]["fixes"] == {"unsigned": "carried", "test": "carried",
                                          "livepatch": "carried"}
    assert cells["patched"]["fixes"] == {"unsigned": "present", "test": "present",
                                       "livepatch": "carried"}
    observed = {v: {c["name"]: c["observed"] for c in cell["checks"]} for v, cell in cells.items()}
    # the negative control reproduced both bugs; the layer fixed both
    assert observed["reverted"]["unsigned.events_present"] == "not ok"
    assert observed["reverted"]["unsigned.module_not_tainted_F"] == "not ok"
    assert observed["reverted"]["unsigned.log_no_bad_taint"] == "not ok"
    for variant in ("upstream", "reverted"):
        assert observed[variant]["livepatch.module_tainted_K"] == "ok"
        assert observed[variant]["livepatch.events_present"] == "not ok"
        assert observed[variant]["livepatch.log_no_bad_taint"] == "not ok"
    for variant in ("backported", "patched"):
        assert observed[variant]["unsigned.event_fires"] == "ok"
        assert observed[variant]["unsigned.module_tainted_E"] == "ok"
        assert observed[variant]["livepatch.events_present"] == "ok"
        assert observed[variant]["livepatch.event_fires"] == "ok"
        assert observed[variant]["livepatch.patch_applies"] == "ok"
    # signature enforcement holds in every variant, with or without a fix
    for variant, tests in observed.items():
        enforced = {k: v for k, v in tests.items() if k.startswith("enforced.")}
        assert len(enforced) == 18 and set(enforced.values()) == {"ok"}, variant
    assert observed["backported"]["backported_sources_identical_to_patched"] == "ok"
    # patched = upstream + the exported layer: byte-identical to backported,
    # so its cell is backported's build and boot, and says so
    assert cells["patched"]["reused_from"] == "backported"
    assert observed["patched"]["patched_sources_identical_to_backported"] == "ok"
    assert "boot" not in cells["patched"]["timings"]
    for cell in cells.values():
        assert cell["accelerator"] in ("kvm", "tcg")
        assert (out / cell["logs"]["console"]).exists()
        assert (out / cell["logs"]["build"]).exists()
    for variant in ("upstream", "reverted", "backported"):
        assert cells[variant]["timings"]["boot"] > 0
    assert "known bug as shipped: livepatch fix missing" in proc.stdout
    summary_md = (out / "summary.md").read_text()
    pinned = versions.select([VERSION])[0]
    assert f"bookworm-6.1 upstream (as shipped in {pinned.upload}): livepatch module " \
        "tainted K" in summary_md
    assert f"livepatch module tainted K, its trace events missing: the users of bookworm " \
        f"({pinned.upload})" in summary_md
    images = {v: c["inputs"]["bzimage_sha256"] for v, c in cells.items()}
    assert images["reverted"] != images["upstream"] != images["backported"]
    assert images["patched"] == images["backported"]


def test_the_run_passes_the_consumers_checkers(run):
    """The real run's matrix.json KCIDB view against KernelCI's schema (its
    URLs the results folder's own file:// URLs, each leading to a file) and
    its junit.xml against junit-10.xsd."""
    out, proc, cells = run
    view = json.loads((out / "matrix.json").read_text())["kcidb"]
    assert kcidb_problems(view) == []
    logs = [obj["log_url"] for kind in ("builds", "tests") for obj in view[kind]
            if "log_url" in obj]
    patches = [f["url"] for f in view["checkouts"][0]["patchset_files"]]
    prefix = out.resolve().as_uri() + "/"
    for url in logs + patches:
        assert url.startswith(prefix) and (out / url[len(prefix):]).is_file(), url
    assert junit_problems(out / "junit.xml") == []
    # 6.1 as Debian ships it lacks livepatch: one issue, its tests FAIL and
    # linked to it; in junit.xml not passed, yet no failure (exit 0)
    issue, = view["issues"]
    assert issue["id"] == f"taintport:{VERSION}:livepatch"
    assert issue["report_url"].endswith(f"?id={fixes.BY_NAME['livepatch'].commit}")
    failing = {t["id"] for t in view["tests"] if t["status"] == "FAIL"}
    assert failing == {i["test_id"] for i in view["incidents"]}
    assert {f"taintport:{VERSION}:{v}:livepatch.events_present"
            for v in ("upstream", "shipped")} <= failing
    root = ET.parse(out / "junit.xml").getroot()
    known = [s for s in root.iter("skipped") if s.get("type") == "known-bug"]
    assert len(known) == len(view["incidents"]) and root.get("failures") == "0"
    assert proc.returncode == 0


def test_debian_binary_boots_beside_our_build(run):
    """shipped: Debian's own linux-image of the pinned version, booted with
    our initramfs, modules built against its headers: the unsigned fix
    works, the livepatch events are missing (a known bug of Debian's
    binary), and every test both observed agrees with our build."""
    out, proc, cells = run
    cell = cells["shipped"]
    pinned = versions.select([VERSION])[0].shipped
    assert cell["status"] == "known-bug", cell["errors"]
    assert cell["fixes"] == {"unsigned": "present", "test": "present", "livepatch": "missing"}
    image = pinned.packages[0]
    assert (cell["inputs"]["package"], cell["inputs"]["package_version"],
            cell["inputs"]["deb_sha256"]) == (image.package, image.version, image.sha256)
    tree = versions.select([VERSION])[0]
    assert cell["inputs"]["binaries"] == {**{f"{p.package}={p.version}": p.sha256
                                             for p in pinned.packages},
                                          f"{tree.package}={tree.version}": tree.sha256}
    assert cell["kernel_release"] == pinned.release
    # Debian's build, not ours: its own uname -v ("... Debian 6.1.176-1 (...)")
    assert f"Debian {image.version}" in cell["kernel_version"]
    assert cell["inputs"]["bzimage_sha256"] != cells["upstream"]["inputs"]["bzimage_sha256"]
    checks = {c["name"]: c for c in cell["checks"]}
    skipped = {n for n, c in checks.items() if c.get("directive") == "SKIP"}
    # the agent's tests the variant cannot observe, and the sample's signed
    # load (no key here to sign it with)
    assert {n for n in skipped if not n.startswith(("selftests.", "sample."))} == \
        named("shipped").skips
    assert "sample.trace_events.signed_events_present" in skipped
    assert all(checks[n]["declared_skip"] and checks[n]["matches"] for n in skipped)
    # the kernel's own selftests ran on Debian's binary, against its headers
    ran = [n for n in checks if n.startswith("selftests.livepatch.test-")]
    assert len(ran) == 6 and all(checks[n]["matches"] for n in ran)
    assert checks["sample.trace_events.unsigned_events_present"]["observed"] == "ok"
    for name in ("unsigned.module_tainted_E", "unsigned.events_present", "unsigned.event_fires",
                 "signed.loads", "signed.module_not_tainted_E", "enforced.signed_loads",
                 "enforced.unsigned_refused", "livepatch.patch_applies"):
        assert checks[name]["observed"] == "ok", name
    for name in ("livepatch.events_present", "livepatch.log_no_bad_taint"):
        assert checks[name]["observed"] == "not ok", name
    agree = checks["shipped_agrees_with_upstream"]
    assert agree["observed"] == "ok", agree["diagnostics"]
    summary_md = (out / "summary.md").read_text()
    assert f"{VERSION}: {image.package} {image.version}" in summary_md
    assert "agrees with our build of its source" in summary_md
    assert f"{VERSION} shipped (the distribution's binary, {image.package}" in summary_md


def kunit_parse(console, scratch):
    """The fetched tree's own tools/testing/kunit/kunit.py parse, run by the
    system Python: its exit status, its summary line and each test case's
    status as "<subtest>.<test>" -> PASS / FAIL / SKIP / ERROR."""
    tree = Cache().tree(versions.select([VERSION])[0])
    kunit = tree / "tools" / "testing" / "kunit" / "kunit.py"
    out = scratch / (console.parent.name + "-" + console.stem + ".kunit.json")
    # --json takes an optional FILE, so it must follow the input file
    proc = subprocess.run(["/usr/bin/python3", str(kunit), "parse", str(console),
                           f"--json={out}"], capture_output=True, text=True, timeout=120)
    top = json.loads(out.read_text())
    cases = {f"{group['name']}.{case['name']}": case["status"]
             for group in top["sub_groups"] for case in group["test_cases"]}
    summary = [line for line in proc.stdout.splitlines() if "Testing complete." in line]
    return proc, cases, summary


def assert_kunit_agrees(console, version, name, scratch, captured=False):
    """The kernel's own parser finds no parse error, and exactly the expected
    failures of the fixes the variant's tree lacks (none: all passed). A
    console captured before the agent gained a subtest (captured) is judged
    on the subtests it has, as test_ktap judges it."""
    variant = named(name)
    expectations = verdict.load(fixes.NAMES)
    if captured:
        expectations = as_captured(expectations, ktap.parse(console.read_text()))
    ships = versions.select([version])[0].ships
    kunit, cases, summary = kunit_parse(console, scratch)
    where = f"{version} {variant}"
    assert set(cases) == set(expectations.tests), (where, kunit.stdout)
    assert "ERROR" not in cases.values(), where
    # SKIP only where the variant declares a test unobservable by design
    assert {n for n, status in cases.items() if status == "SKIP"} == variant.skips, where
    assert "[ERROR]" not in kunit.stdout, (where, kunit.stdout)
    failed = {name for name, status in cases.items() if status == "FAIL"}
    want = expectations.failures(expectations.states(variant, ships, version))
    assert failed == want, (where, sorted(failed ^ want))
    assert len(summary) == 1, (where, kunit.stdout)
    if not want:
        # "Ran 79 tests: passed: 79", or "passed: 70, skipped: 9" on a shipped cell
        passed = len(cases) - len(variant.skips)
        assert f"passed: {passed}" in summary[0] and "failed" not in summary[0], where
    else:
        assert f"failed: {len(want)}" in summary[0], (where, summary)


def test_kunit_tool_reads_every_console_as_taintport_does(run, tmp_path):
    """KTAP means what KTAP consumers think it means, on every cell the
    end-to-end run booted: all passed on backported, exactly the expected
    failures elsewhere (6.1 as shipped lacks the livepatch fix; the reverted
    tree lacks both)."""
    out, proc, cells = run
    for variant, cell in cells.items():
        assert_kunit_agrees(out / cell["logs"]["console"], VERSION, variant, tmp_path)


def test_kunit_tool_reads_the_selftests_ktap_of_every_built_cell(run, tmp_path):
    """The selftests stage's KTAP (issue 37) means to kunit.py what it means to
    taintport: every booted cell (Debian's binary too, its modules built
    against its headers) ran the livepatch selftests and the sample, and
    kunit.py fails exactly the tests the cell observed not ok."""
    out, proc, cells = run
    booted = {v: c for v, c in cells.items() if "reused_from" not in c}
    assert set(booted) == {"upstream", "shipped", "reverted", "backported"}
    for variant, cell in booted.items():
        ktap_txt = out / VERSION / variant / "selftests-ktap.txt"
        kunit, cases, summary = kunit_parse(ktap_txt, tmp_path)
        assert "[ERROR]" not in kunit.stdout and "ERROR" not in cases.values(), kunit.stdout
        mine = {c["name"]: c for c in cell["checks"]
                if c["name"].startswith(("selftests.livepatch.", "sample.trace_events."))}
        assert set(cases) == set(mine), (variant, sorted(set(cases) ^ set(mine)))
        assert {n for n, status in cases.items() if status == "FAIL"} == \
            {n for n, c in mine.items() if c["observed"] == "not ok"}, variant
        assert cell["timings"]["selftests"] > 0


def test_kunit_tool_reads_the_captured_consoles_of_every_kernel(tmp_path):
    """The real boots of make matrix on every kernel
    (tools/tests/data/consoles): an upstream cell of a kernel that ships
    every fix (6.12, 7.2, 7.3) parses as all passed, and a shipped one as
    all passed but the tests it declares unobservable."""
    captured = Path(__file__).parent / "data" / "consoles"
    logs = sorted(p for p in captured.glob("*/*.log") if "-" not in p.stem)
    assert len(logs) == 4 * len(versions.all_versions())  # upstream, shipped, reverted, backported
    for log in logs:
        assert_kunit_agrees(log, log.parent.name, log.stem, tmp_path, captured=True)


def test_patched_built_for_real_is_the_backported_image(run, tmp_path):
    """Reproducible builds (pinned timestamp, user, host, build number): the
    patched sources are byte-identical to backported, and so is the image
    when it is really rebuilt from them (what makes reusing the cell sound).
    The backported image is the one the run above built and booted."""
    _, _, built = run
    proc, cells, doc = matrix(tmp_path / "run", "--variants", "patched", "--build-identical")
    assert proc.returncode == 0, [c["errors"] for c in cells.values()]
    assert "reused_from" not in cells["patched"] and cells["patched"]["timings"]["boot"] > 0
    assert cells["patched"]["status"] == "as-expected"
    assert cells["patched"]["inputs"]["bzimage_sha256"] == \
        built["backported"]["inputs"]["bzimage_sha256"]


def test_boot_judges_a_cell_as_the_matrix_does(run, tmp_path):
    """`taintport boot` runs the matrix's own stage chain: on the backported
    cell of the run above, the same checks, status, byte-identical host
    check, kernel, files and dracut image name."""
    out, _, cells = run
    booted = subprocess.run([*TAINTPORT, "boot", "--version", VERSION, "--variant", "backported",
                             "--out", str(tmp_path / "boot")], capture_output=True, text=True)
    print(booted.stdout)
    print(booted.stderr, file=sys.stderr)
    assert booted.returncode == 0
    folders = {"matrix": out / VERSION / "backported",
               "boot": tmp_path / "boot" / VERSION / "backported"}
    mine = json.loads((folders["boot"] / "cell.json").read_text())
    theirs = cells["backported"]

    def checks(cell):
        return [(c["name"], c["expected"], c["observed"], c["matches"]) for c in cell["checks"]]

    assert mine["status"] == theirs["status"] == "as-expected"
    assert checks(mine) == checks(theirs)
    assert ("backported_sources_identical_to_patched", "ok", "ok", True) in checks(mine)
    for key in ("sources_sha256", "bzimage_sha256", "series", "ships"):
        assert mine["inputs"][key] == theirs["inputs"][key], key
    assert mine["kernel_release"] == theirs["kernel_release"]
    assert mine["fixes"] == theirs["fixes"]
    for name in ("cell.json", "console.log", "ktap.txt", "build.log"):
        assert all((folder / name).is_file() for folder in folders.values()), name
    # one dracut image for every kernel, in the cache, whichever verb made it
    # (in the run, the first cell, upstream, made it: its log names it)
    images = {verb: set(re.findall(r"\S*/initramfs/\.?agent-base\.img",
                                   "".join(log.read_text() for log in
                                           (folder.parent / "upstream" / "build.log",
                                            folder / "build.log") if log.is_file())))
              for verb, folder in folders.items()}
    assert len(images["boot"]) == 1 and images["boot"] == images["matrix"]
    assert "backported: as-expected" in booted.stdout


def test_mutation_without_backport_patch_is_unexpected(tmp_path):
    """With the layer's patches dropped, the backported cell must fail; the
    kernel it leaves is not booted under the layer's name. Last of the file:
    it leaves backported's kernel built without the layer."""
    quilt = tmp_path / "quilt"
    shutil.copytree(REPO / "quilt", quilt)
    series = quilt / VERSION / "series"
    kept = [line for line in series.read_text().splitlines()
            if not line.startswith("backported/")]
    assert len(kept) < len(series.read_text().splitlines()), "no backported patch to drop"
    series.write_text("\n".join(kept) + "\n")
    proc, cells, doc = matrix(tmp_path / "run", "--variants", "backported",
                              "--quilt-dir", str(quilt))
    assert proc.returncode == 1
    assert cells["backported"]["status"] == "unexpected"
    wrong = {c["name"] for c in cells["backported"]["checks"] if not c["matches"]}
    assert {"unsigned.events_present", "livepatch.events_present",
            "backported_sources_identical_to_patched"} <= wrong
    booted = subprocess.run([*TAINTPORT, "boot", "--version", VERSION, "--variant", "backported",
                             "--out", str(tmp_path / "boot")], capture_output=True, text=True)
    assert booted.returncode == 2
    assert "series changed since" in booted.stdout
    assert not (tmp_path / "boot" / VERSION / "backported" / "console.log").exists()
