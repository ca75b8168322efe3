# SPDX-License-Identifier: GPL-2.0
"""The shipped variant without a boot: its descriptor table, its declared
skips, its agreement with upstream, its inputs and what the reports say.
The boot of Debian's real binary is in test_e2e.py and the captured
consoles in test_ktap.py."""
import io
import lzma
import re
from dataclasses import replace
from pathlib import Path

import pytest

from taintport.errors import InputError, RunError
from taintport.judge import verdict
from taintport.judge.ktap import parse
from taintport.judge.verdict import Check, Status
from taintport.kernel import binary
from taintport.layer import fixes
from taintport.results import folder, report, schema
from taintport.results.cells import Cell, Inputs, Matrix
from taintport.results.reports import summary
from taintport.run import sources, store
from taintport.tree import series, variants, versions
from taintport.tree.archive import images, pins
from taintport.tree.variants import named

AGREES = named("shipped").check(variants.Kind.AGREES)


def binary_inputs(version):
    shipped = named("shipped")
    return sources.of(shipped).inputs(version, series.load(version.name), shipped)

REPO = Path(__file__).resolve().parents[2]
DESCRIPTOR = REPO / "versions" / "bookworm-6.1.toml"
SHIPPED = versions.load(DESCRIPTOR).shipped


def descriptor(tmp_path, old, new):
    """bookworm-6.1.toml with one edit, in a folder of its own."""
    text = DESCRIPTOR.read_text()
    assert old in text, old
    path = tmp_path / "bookworm-6.1.toml"
    path.write_text(text.replace(old, new, 1))
    return path


def test_every_version_pins_its_binary_like_its_source():
    for version in versions.all_versions():
        shipped = version.shipped
        assert shipped is not None, version.name
        # the image (on 7.x the package holding vmlinuz) first, then what
        # the test modules build against
        kinds = [re.sub(r"-[0-9].*|-amd64$", "", p.package) for p in shipped.packages]
        assert kinds[0] in ("linux-image", "linux-binary"), version.name
        assert {"linux-headers", "linux-kbuild"} <= set(kinds), version.name
        assert all(p.version == version.version for p in shipped.packages), \
            f"{version.name}: a binary pin that is not the source's says so in a comment"
        assert shipped.module_name == "ts_kmp"


@pytest.mark.parametrize("old, new, complaint", [
    (f'release = "{SHIPPED.release}"', 'release = "../../etc"', "release"),
    ('signed_module = "kernel/lib/ts_kmp.ko"', 'signed_module = "/lib/ts_kmp.ko"',
     "signed_module"),
    ('make = []', 'make = ["CC=$(shell id)"]', "make[0]"),
    ('append = "console=ttyS0 panic=-1"', 'append = "console=ttyS0 \\"x"', "append"),
    ('memory = 1024', 'memory = "1024"', "memory"),
    ('timeout = 300', 'timeout = 5', "timeout"),
    ('package = "linux-kbuild-6.1"', 'package = "linux-kbuild-6.1/../x"', "packages[3] package"),
    (f'size = {SHIPPED.packages[0].size}', f'sizes = {SHIPPED.packages[0].size}',
     "packages[0]: must have exactly"),
    ('memory = 1024', 'memory = 1024\nsecure_boot = true', "unknown field(s) secure_boot"),
])
def test_a_bad_shipped_table_names_the_field(tmp_path, old, new, complaint):
    with pytest.raises(InputError, match=re.escape(complaint)):
        versions.load(descriptor(tmp_path, old, new))


def test_a_version_without_a_binary_has_no_shipped_cell(tmp_path):
    text = DESCRIPTOR.read_text()
    path = tmp_path / "bookworm-6.1.toml"
    path.write_text(text[:text.index("\n# The distribution's own binary")] + "\n")
    version = versions.load(path)
    assert version.shipped is None
    with pytest.raises(InputError, match="no \\[shipped\\] table"):
        binary_inputs(version)


def test_inputs_name_every_pin_and_move_with_any_of_them():
    version = versions.select(["bookworm-6.1"])[0]
    mine = binary_inputs(version)
    assert (mine.package, mine.deb_sha256) == (version.shipped.packages[0].package,
                                               version.shipped.packages[0].sha256)
    # every pinned binary, and the source package its selftests come from
    assert len(mine.binaries) == len(version.shipped.packages) + 1
    assert mine.binaries[f"{version.package}={version.version}"] == version.sha256
    key = store.cell_key(named("shipped"), mine, {}, 180)
    for changed in (replace(version, shipped=replace(version.shipped, memory=2048)),
                    replace(version, shipped=replace(version.shipped,
                                                     packages=version.shipped.packages[:-1])),
                    replace(version, sha256="0" * 64)):
        other = binary_inputs(changed)
        assert store.cell_key(named("shipped"), other, {}, 180) != key
    # a built variant's inputs (and so every stored cell's key) are as before
    assert "binaries" not in schema.write_inputs(Inputs(package="p", package_version="1"))


EXPECTED = {"signed.loads": True, "signed.module_tainted_O": True,
            "livepatch.events_present": False}


def agent_console(skipped=(), observed_o=True):
    lines = ["KTAP version 1", "1..2", "    KTAP version 1", "    # Subtest: signed", "    1..2",
             "    ok 1 loads"]
    if "signed.module_tainted_O" in skipped:
        lines.append("    ok 2 module_tainted_O # SKIP the distribution's signed module is "
                     "in-tree: no O")
    else:
        lines.append(f"    {'ok' if observed_o else 'not ok'} 2 module_tainted_O")
    lines += ["ok 1 signed", "    KTAP version 1", "    # Subtest: livepatch", "    1..1",
              "    not ok 1 events_present", "not ok 2 livepatch",
              "# taintport-agent: end status=0"]
    return parse("\n".join(lines) + "\n")


def test_a_declared_skip_is_what_the_variant_can_see():
    skips = frozenset({"signed.module_tainted_O"})
    j = verdict.judge(agent_console(skipped=skips), EXPECTED, known_bug=True, skips=skips)
    assert j.status is Status.KNOWN_BUG, j.errors
    skipped = [c for c in j.checks if c.name == "signed.module_tainted_O"]
    assert skipped[0].declared_skip and skipped[0].matches and skipped[0].observed is None


def test_an_undeclared_skip_is_still_an_error():
    j = verdict.judge(agent_console(skipped={"signed.module_tainted_O"}), EXPECTED)
    assert j.status is Status.ERROR
    assert "could not observe: signed.module_tainted_O" in j.errors[0]


def test_a_declared_skip_that_was_observed_is_an_error():
    skips = frozenset({"signed.module_tainted_O"})
    j = verdict.judge(agent_console(), EXPECTED, skips=skips)
    assert j.status is Status.ERROR
    assert "declared unobservable" in j.errors[0] and "signed.module_tainted_O" in j.errors[0]


def test_variants_skips_must_name_tests(tmp_path):
    text = variants.TABLE.read_text().replace('"livepatch.module_not_tainted_E",',
                                              '"livepatch.module_not_tainted_X",')
    path = tmp_path / "variants.toml"
    path.write_text(text)
    with pytest.raises(InputError, match=r"\[variants.shipped\] skips test\(s\) that .*"
                                         r"the guest data .* does not have: "
                                         r"livepatch.module_not_tainted_X"):
        verdict.load(fixes.NAMES, table_path=path)


def cell(variant, observed, status=Status.KNOWN_BUG):
    made = Cell.new("bookworm-6.1", named(variant), {})
    made.status = status
    made.checks = [Check(name=n, expected=EXPECTED[n], observed=o) for n, o in observed.items()]
    return made


def test_shipped_and_upstream_disagreeing_is_unexpected_and_says_where():
    upstream = cell("upstream", {"signed.loads": True, "livepatch.events_present": False})
    shipped = cell("shipped", {"signed.loads": True, "livepatch.events_present": True})
    judged = verdict.Judgement(Status.KNOWN_BUG, list(shipped.checks))
    agree = verdict.agreement(AGREES, judged.checks, upstream)
    after = verdict.with_check(judged, agree)
    assert after.status is Status.UNEXPECTED
    assert agree.name == "shipped_agrees_with_upstream" and agree.observed is False
    assert agree.diagnostics == ("host: livepatch.events_present: shipped ok, upstream not ok",)
    shipped.status, shipped.checks = after.status, after.checks
    line, = report.binaries([upstream, shipped])
    assert "DISAGREES with our build of its source on 1 test(s): livepatch.events_present" \
        in line


def test_agreement_leaves_out_what_either_could_not_observe():
    upstream = cell("upstream", {"signed.loads": True, "signed.module_tainted_O": True})
    shipped = cell("shipped", {"signed.loads": True, "signed.module_tainted_O": None})
    agree = verdict.agreement(AGREES, shipped.checks, upstream)
    assert agree.observed is True
    assert agree.diagnostics == ("host: the 1 tests both observed came out the same",)


def test_a_shipped_cell_reads_back_and_reports_whose_binary_it_was(tmp_path):
    version = versions.select(["bookworm-6.1"])[0]
    shipped = cell("shipped", {"signed.loads": True})
    shipped.checks.append(Check(name="signed.module_tainted_O", expected=True, observed=None,
                                directive="SKIP", declared_skip=True))
    shipped.inputs = binary_inputs(version)
    shipped.inputs.bzimage_sha256 = "a" * 64
    shipped.kernel_version = "#1 SMP PREEMPT_DYNAMIC Debian 6.1.176-1 (2026-07-02)"
    shipped.checks.append(Check(name="shipped_agrees_with_upstream", expected=True,
                                observed=True, diagnostics=("host: the 1 tests both "
                                                            "observed came out the same",)))
    folder.write_cell(tmp_path, shipped)
    back = folder.read_cell(tmp_path / "bookworm-6.1" / "shipped" / "cell.json")
    assert schema.write_cell(back) == schema.write_cell(shipped)
    text = summary.render(Matrix(cells=[back]))
    assert "## The distribution's binaries against our builds" in text
    image = version.shipped.packages[0]
    assert f"{image.package} {image.version}" in text and "Debian 6.1.176-1" in text
    assert "agrees with our build of its source (the 1 tests both observed" in text
    assert "1 checks" not in text and "(1 skipped by design)" in text


def test_a_results_file_with_a_bad_binary_pin_is_refused(tmp_path):
    version = versions.select(["bookworm-6.1"])[0]
    shipped = cell("shipped", {"signed.loads": True})
    shipped.inputs = binary_inputs(version)
    shipped.inputs.binaries = {"../../x=1": "0" * 64}
    folder.write_cell(tmp_path, shipped)
    with pytest.raises(InputError, match="binaries"):
        folder.read_cell(tmp_path / "bookworm-6.1" / "shipped" / "cell.json")


def headers_tree(top, release, makefile):
    headers = top / "usr" / "src" / f"linux-headers-{release}"
    headers.mkdir(parents=True)
    (headers / "Makefile").write_text(makefile)
    return headers


def test_the_headers_makefile_points_at_the_extracted_copy(tmp_path):
    shipped = versions.select(["bookworm-6.1"])[0].shipped
    top = tmp_path / "root"
    headers = headers_tree(top, shipped.release,
                           "include /usr/src/linux-headers-6.1.0-50-common/Makefile\n")
    for _ in range(2):  # again on the rewritten one: the original is kept
        assert binary.headers_dir(top, shipped) == headers
    assert (headers / "Makefile").read_text() == \
        f"include {top}/usr/src/linux-headers-6.1.0-50-common/Makefile\n"


def test_headers_without_an_absolute_include_are_refused(tmp_path):
    shipped = versions.select(["bookworm-6.1"])[0].shipped
    headers_tree(tmp_path, shipped.release, "include ../common/Makefile\n")
    with pytest.raises(RunError, match="packaging changed"):
        binary.headers_dir(tmp_path, shipped)


def module_tree(top, shipped, suffix, data):
    path = top / "usr" / "lib" / "modules" / shipped.release / (shipped.signed_module + suffix)
    path.parent.mkdir(parents=True)
    path.write_bytes(lzma.compress(data, format=lzma.FORMAT_XZ) if suffix == ".xz" else data)


def test_a_compressed_signed_module_reaches_the_guest_decompressed(tmp_path):
    shipped = versions.select(["sid-7.2"])[0].shipped
    signed = b"\x7fELF module" + b"\0" * 40 + binary.SIGNATURE_MAGIC
    module_tree(tmp_path / "root", shipped, ".xz", signed)
    out = tmp_path / "out"
    out.mkdir()
    got = binary.signed_module(tmp_path / "root", shipped, out)
    assert got == out / "ts_kmp.ko" and got.read_bytes() == signed


def test_an_unsigned_stand_in_is_refused(tmp_path):
    shipped = versions.select(["bookworm-6.1"])[0].shipped
    module_tree(tmp_path / "root", shipped, "", b"\x7fELF module, no signature")
    (tmp_path / "out").mkdir()
    with pytest.raises(RunError, match="not signed"):
        binary.signed_module(tmp_path / "root", shipped, tmp_path / "out")


def test_repin_follows_the_kernel_packages_a_release_depends_on():
    """sid's linux-headers-<release> as its index has it: the common part
    pinned (=), kbuild unversioned (the binary's own version then), the
    compiler and linux-base left out."""
    fields = {"Depends": "gcc-16-for-host, linux-base (>= 4.12~), linux-base-7.2.13+deb14-amd64 "
                         "(= 7.2.13-1), linux-headers-7.2.13+deb14-common (= 7.2.13-1), "
                         "linux-kbuild-7.2.13+deb14"}
    assert images.depends(fields, "7.2.13-1") == [
        ("linux-headers-7.2.13+deb14-common", "7.2.13-1"),
        ("linux-kbuild-7.2.13+deb14", "7.2.13-1")]


def test_repin_rewrites_the_pins_and_says_when_they_are_the_nearest(tmp_path):
    path = tmp_path / "bookworm-6.1.toml"
    path.write_text(DESCRIPTOR.read_text())
    version = versions.load(path)
    abi = version.shipped.release.removesuffix("-amd64")
    newer = [versions.Pin(p.package.replace(abi, "6.1.0-99"), "6.1.999-1", "1" * 64, 7)
             for p in version.shipped.packages]
    said = pins.rewrite(version, version, pins.ShippedPins("6.1.999-1", tuple(newer)))
    assert said == ("6.1.0-99-amd64: 4 of 4 binary pins moved "
                    f"(binaries 6.1.999-1, not the source's {version.version})")
    moved = versions.load(path)
    assert moved.shipped.release == "6.1.0-99-amd64"
    assert moved.release == "bookworm", "the descriptor's own release is left alone"
    assert list(moved.shipped.packages) == newer
    assert "the suites' binaries 6.1.999-1: the nearest, pinned on purpose" in path.read_text()
    # back to the source's own version: the note goes, nothing else moves
    assert pins.rewrite(moved, moved, pins.ShippedPins(version.version,
                                                      version.shipped.packages)) == \
        f"{version.shipped.release}: 4 of 4 binary pins moved"
    assert path.read_text() == DESCRIPTOR.read_text()


def test_agreement_is_made_again_against_whichever_peer_is_published(tmp_path):
    """A stored shipped cell is compared with this run's upstream, not the
    one it was stored beside: a disagreement that is gone clears, and a
    cell with no sound peer carries no agreement check."""
    from taintport.cache import Cache
    from taintport.run.progress import Progress
    from taintport.run.stages import Chain
    from taintport.judge.verdict import FixState

    chain = Chain(Cache(tmp_path / "cache"), tmp_path / "out", verdict.load(fixes.NAMES),
                  Progress(0, stream=io.StringIO()), jobs=1, timeout=10)
    shipped = cell("shipped", {"signed.loads": True, "livepatch.events_present": False})
    shipped.fixes = {"unsigned": FixState.PRESENT, "livepatch": FixState.MISSING}
    other = cell("upstream", {"signed.loads": True, "livepatch.events_present": True})
    same = cell("upstream", {"signed.loads": True, "livepatch.events_present": False})
    chain.agree(shipped, other)
    assert shipped.status is Status.UNEXPECTED
    assert [c.name for c in shipped.failing] == ["shipped_agrees_with_upstream"]
    chain.agree(shipped, same)
    assert shipped.status is Status.KNOWN_BUG and not shipped.failing
    assert shipped.checks[0].name == "shipped_agrees_with_upstream"
    broken = cell("upstream", {}, status=Status.ERROR)
    chain.agree(shipped, broken)
    assert shipped.status is Status.KNOWN_BUG
    assert "shipped_agrees_with_upstream" not in [c.name for c in shipped.checks]


def tiny_deb(work, name, files):
    """A .deb holding files {path: bytes}, as dpkg-deb builds one."""
    import subprocess
    root = work / f"pkg-{name}"
    for rel, data in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
    (root / "DEBIAN").mkdir()
    (root / "DEBIAN" / "control").write_text(
        f"Package: {name}\nVersion: 1\nArchitecture: amd64\n"
        "Maintainer: test <t@localhost>\nDescription: test\n")
    deb = work / f"{name}_1_amd64.deb"
    subprocess.run(["dpkg-deb", "--build", str(root), str(deb)], check=True,
                   capture_output=True)
    return deb


def test_extraction_keeps_of_the_modules_only_the_signed_one(tmp_path):
    shipped = versions.select(["bookworm-6.1"])[0].shipped
    modules = f"lib/modules/{shipped.release}"
    debs = [tiny_deb(tmp_path, "linux-image-test", {
                f"boot/vmlinuz-{shipped.release}": b"kernel",
                f"{modules}/{shipped.signed_module}": b"signed",
                f"{modules}/kernel/drivers/net/dummy.ko": b"other",
                f"{modules}/modules.order": b"order"}),
            tiny_deb(tmp_path, "linux-headers-test", {
                f"usr/src/linux-headers-{shipped.release}/Makefile": b"include /usr/src/x\n"})]
    target = tmp_path / "root"
    binary.extract(debs, target, shipped, tmp_path / "log")
    kept = sorted(str(p.relative_to(target)) for p in target.rglob("*") if p.is_file())
    assert kept == [f"boot/vmlinuz-{shipped.release}", f"{modules}/{shipped.signed_module}",
                    f"{modules}/modules.order",
                    f"usr/src/linux-headers-{shipped.release}/Makefile"]
    assert not list(tmp_path.glob(".extract-*")), "no half-made folder left"


def test_the_binary_alone_fetches_the_tree_its_selftests_come_from(tmp_path, monkeypatch):
    """A run whose only cell left is the distribution's binary still needs
    the version's source tree (its selftests' scripts and sources)."""
    from taintport.run import matrix
    from taintport.tree import fetch
    from test_resume import keyed
    out, runner, pinned = keyed(tmp_path)
    (out / pinned.name / "shipped" / "cell.json").unlink()
    asked = []

    def no_archive(cache, version, log, nice=0):
        asked.append(version.name)
        raise RunError("fetch", "no archive here")

    monkeypatch.setattr(fetch, "fetch", no_archive)
    assert isinstance(runner, matrix.Runner) and runner.needs_work(pinned, [named("shipped")])
    runner.run([pinned], [named("shipped")])
    assert asked == [pinned.name]
    cell = runner.folder.published(pinned.name, named("shipped"))
    assert cell is not None and "no archive here" in cell.errors[0]
