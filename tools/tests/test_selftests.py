# SPDX-License-Identifier: GPL-2.0
"""The selftests stage (issue 37): the kernel's own livepatch selftests and
the trace-event sample, run after the agent and judged against the same
kernel's upstream cell, from the consoles in data/selftests/ (fabricated in
the runner's format, README there) through the real stage, parser and
verdict; only QEMU and dracut are faked."""
import io
import os
import shutil
import subprocess
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import SimpleNamespace

import pytest

from taintport import REPO
from taintport.cache import Cache
from taintport.errors import RunError
from taintport.judge import ktap, selftests as judge, verdict
from taintport.judge.verdict import Status
from taintport.kernel import boot, initramfs, selftests as payload
from taintport.kernel.boot import Accel
from taintport.kernel.build import Artifacts
from taintport.layer import fixes
from taintport.run import selftests, sources
from taintport.run.progress import Progress
from taintport.run.stages import BootProfile, Built, Chain
from taintport.tree import versions
from taintport.tree.variants import named

CONSOLES = Path(__file__).parent / "data" / "selftests"
RUNNER = REPO / "test-matrix" / "dracut" / "51taintport-selftests" / "taintport-selftests.sh"
# bookworm's 6.1: ships the unsigned fix, lacks the livepatch fix
SHIPS = ("unsigned",)
BOOKWORM = versions.select(["bookworm-6.1"])[0]


@pytest.fixture
def chain(tmp_path):
    return Chain(Cache(tmp_path / "cache"), tmp_path / "out", verdict.load(fixes.NAMES),
                 Progress(0, stream=io.StringIO()), jobs=1, timeout=10, accel=Accel("tcg", "test"))


def built(tmp_path, variant):
    """A cell's artifacts with a selftests payload as build_payload lays it
    out; the distribution's binary with its own boot profile (sources.py)."""
    folder = tmp_path / "artifacts" / variant
    livepatch = folder / "selftests" / "livepatch"
    (livepatch / "test_modules").mkdir(parents=True)
    (livepatch / "test-state.sh").write_text("#!/bin/bash\n")
    (livepatch / "test_modules" / "test_klp_state.ko").write_bytes(b"\x7fELF signed")
    (folder / "selftests" / "release").write_text("6.1.192\n")
    (folder / "selftests" / "timeout").write_text("150\n")
    (folder / "bzImage").write_bytes(b"kernel")
    artifacts = Artifacts(directory=folder, bzimage=folder / "bzImage", modules=(),
                          agent=folder / "taintport-agent", release="6.1.192")
    if not named(variant).from_tree:
        return Built(artifacts, None, sources.of(named(variant)).profile(BOOKWORM))
    return Built(artifacts, None, BootProfile("console=ttyS0 panic=-1", (), 10, 512))


def cell_of(chain, variant, status):
    cell = chain.new_cell(SimpleNamespace(name="bookworm-6.1", ships=SHIPS), named(variant))
    cell.status = status
    return cell


@pytest.fixture
def guest(monkeypatch):
    """QEMU and dracut faked: the boot writes the console named in consoles[variant]
    and records what it was asked to boot."""
    consoles: dict[str, str] = {}
    asked: list[dict] = []

    def fake_qemu(cmd, console, timeout):
        variant = Path(cmd[cmd.index("-kernel") + 1]).parent.name
        shutil.copyfile(CONSOLES / consoles[variant], console)
        asked.append({"initrd": Path(cmd[cmd.index("-initrd") + 1]).read_bytes(),
                      "append": cmd[cmd.index("-append") + 1], "timeout": timeout,
                      "memory": cmd[cmd.index("-m") + 1]})
        return 0, False, 1.5

    def fake_dracut(cache_root, image, log):
        Path(image).write_bytes(b"dracut image\0\0\0")
        return Path(image)

    monkeypatch.setattr(boot, "run_qemu", fake_qemu)
    monkeypatch.setattr(initramfs, "selftests_base", fake_dracut)
    return consoles, asked


def run_cells(tmp_path, chain, guest, consoles, statuses=None):
    """upstream, then backported judged against it, as the matrix runs them."""
    statuses = statuses or {}
    guest[0].update(consoles)
    cells = {}
    for variant in consoles:
        cell = cell_of(chain, variant, statuses.get(variant, Status.AS_EXPECTED))
        selftests.stage(chain, cell, built(tmp_path, variant), cells.get("upstream"))
        cells[variant] = cell
    return cells


def check(cell, name):
    return next(c for c in cell.checks if c.name == name)


def test_a_selftest_failing_only_in_backported_makes_the_cell_unexpected(
        tmp_path, chain, guest):
    cells = run_cells(tmp_path, chain, guest,
                      {"upstream": "pass.log", "backported": "state-fails.log"},
                      {"upstream": Status.KNOWN_BUG})
    assert cells["upstream"].status is Status.KNOWN_BUG
    assert cells["backported"].status is Status.UNEXPECTED
    state = check(cells["backported"], "selftests.livepatch.test-state")
    assert (state.expected, state.observed) == (True, False)
    assert any("system state modification ... not ok" in d for d in state.diagnostics)
    assert [c.name for c in cells["backported"].failing] == ["selftests.livepatch.test-state"]


def test_a_selftest_failing_in_both_is_the_kernels_own(tmp_path, chain, guest):
    cells = run_cells(tmp_path, chain, guest,
                      {"upstream": "state-fails.log", "backported": "state-fails.log"},
                      {"upstream": Status.KNOWN_BUG})
    assert cells["upstream"].status is Status.KNOWN_BUG
    assert cells["backported"].status is Status.AS_EXPECTED
    for cell in cells.values():
        state = check(cell, "selftests.livepatch.test-state")
        assert (state.expected, state.observed) == (False, False)
        assert state.matches
        assert "the kernel's own failure" in state.diagnostics[0]
        assert any("ERROR: livepatch kselftest(s) failed" in d for d in state.diagnostics)


def test_a_selftest_failing_only_in_upstream_leaves_backported_as_expected(
        tmp_path, chain, guest):
    cells = run_cells(tmp_path, chain, guest,
                      {"upstream": "state-fails.log", "backported": "pass.log"})
    state = check(cells["backported"], "selftests.livepatch.test-state")
    assert (state.expected, state.observed) == (False, True)
    # a kernel test that went the other way is still a finding
    assert cells["backported"].status is Status.UNEXPECTED


def test_without_the_upstream_cell_a_failing_selftest_is_unexpected(tmp_path, chain, guest):
    cells = run_cells(tmp_path, chain, guest, {"backported": "state-fails.log"})
    assert cells["backported"].status is Status.UNEXPECTED
    state = check(cells["backported"], "selftests.livepatch.test-state")
    assert "nothing to compare with" in state.diagnostics[0]


def test_the_stage_has_its_own_time_image_and_boot(tmp_path, chain, guest):
    cells = run_cells(tmp_path, chain, guest, {"upstream": "pass.log"})
    cell = cells["upstream"]
    assert cell.timings.selftests is not None and cell.timings.boot is None
    consoles, asked = guest
    (boot_asked,) = asked
    assert boot_asked["timeout"] == 1 * 150 + payload.BOOT_AND_SAMPLE
    assert "loglevel=1" in boot_asked["append"]
    token = boot_asked["append"].split("taintport.token=")[1].split()[0]
    image = boot_asked["initrd"]
    assert image.startswith(b"dracut image\0\0\0")
    assert b"taintport/selftests/livepatch/test-state.sh" in image
    assert b"taintport/selftests/livepatch/test_modules/test_klp_state.ko" in image
    assert (token + "\n").encode() in image
    ktap_txt = chain.cell_dir(cell) / selftests.KTAP
    assert ktap_txt.read_text().startswith("KTAP version 1\n1..2\n")
    assert cell.status is Status.AS_EXPECTED
    assert len([c for c in cell.checks if c.name.startswith("selftests.livepatch.")]) == 6


def test_one_dracut_run_serves_every_kernels_selftests(tmp_path, chain, monkeypatch):
    """The selftests' dracut image holds no kernel's file: two kernels' boot
    threads asking at once get one dracut run between them, each cell its
    own payload after it; the next run (a new chain) runs dracut again."""
    runs = []
    started = threading.Event()

    def fake_dracut(module, cache_root, image, log):
        runs.append((module, Path(image).parent))
        started.set()
        time.sleep(0.2)  # the other kernel's thread asks meanwhile
        Path(image).write_bytes(b"dracut image\0\0\0")
        return Path(image)

    monkeypatch.setattr(initramfs, "dracut", fake_dracut)
    kernels = [built(tmp_path / kernel, "upstream") for kernel in ("6.1", "7.2")]
    with ThreadPoolExecutor(max_workers=2) as pool:
        first = pool.submit(selftests.image, chain, kernels[0], "aaaa", tmp_path / "log")
        started.wait(5)
        second = pool.submit(selftests.image, chain, kernels[1], "bbbb", tmp_path / "log")
        images = [first.result(), second.result()]
    assert [module for module, _ in runs] == ["taintport-selftests"]
    assert images[0] != images[1]
    for image, token in zip(images, ("aaaa", "bbbb")):
        data = image.read_bytes()
        assert data.startswith(b"dracut image\0\0\0") and (token + "\n").encode() in data
        assert b"taintport/selftests/livepatch/test-state.sh" in data
    again = Chain(chain.cache, tmp_path / "out2", chain.expectations, chain.progress,
                  jobs=1, timeout=10, accel=chain.accel)
    selftests.image(again, kernels[0], "cccc", tmp_path / "log")
    assert len(runs) == 2


def test_a_failed_dracut_leaves_the_shared_image_as_it_was(tmp_path, chain, monkeypatch):
    """Another run may be reading the image this one remakes: dracut writes a
    file of its own, renamed only once whole; a dracut that fails half-way
    leaves the old image and no part of the new one."""
    shared = chain.cache.initramfs("selftests-base.img")
    shared.parent.mkdir(parents=True)
    shared.write_bytes(b"the image an earlier run made")

    def failing_dracut(module, cache_root, image, log):
        assert Path(image) != shared and Path(image).parent == shared.parent
        Path(image).write_bytes(b"half")
        raise RunError("initramfs", "dracut failed")

    monkeypatch.setattr(initramfs, "dracut", failing_dracut)
    with pytest.raises(RunError, match="dracut failed"):
        selftests.image(chain, built(tmp_path, "upstream"), "aaaa", tmp_path / "log")
    assert shared.read_bytes() == b"the image an earlier run made"
    assert sorted(p.name for p in shared.parent.iterdir()) == [shared.name]


def test_the_sample_witnesses_the_unsigned_fix(tmp_path, chain, guest):
    """Its events present exactly where utt's must be: missing in reverted
    (the unsigned fix taken out) is as expected, missing in backported is not."""
    cells = run_cells(tmp_path, chain, guest,
                      {"upstream": "pass.log", "reverted": "sample-unsigned-refused.log",
                       "backported": "sample-unsigned-refused.log"})
    witness = "sample.trace_events.unsigned_events_present"
    assert check(cells["reverted"], witness).expected is False
    assert cells["reverted"].status is Status.AS_EXPECTED
    assert check(cells["backported"], witness).expected is True
    assert cells["backported"].status is Status.UNEXPECTED
    assert any("taint = FO" in d for d in check(cells["backported"], witness).diagnostics)


def test_a_selftest_stopped_at_its_timeout_is_a_declared_skip(tmp_path, chain, guest):
    cells = run_cells(tmp_path, chain, guest,
                      {"upstream": "pass.log", "backported": "callbacks-timeout.log"})
    callbacks = check(cells["backported"], "selftests.livepatch.test-callbacks")
    assert callbacks.declared_skip and callbacks.matches
    assert "did not finish within 150s under TCG" in callbacks.diagnostics[0]
    assert cells["backported"].status is Status.AS_EXPECTED


def test_cut_short_output_is_an_error_never_a_pass(tmp_path, chain, guest):
    cells = run_cells(tmp_path, chain, guest, {"upstream": "truncated.log"})
    cell = cells["upstream"]
    assert cell.status is Status.ERROR
    assert any(e.startswith("selftests: ") and "end marker" in e for e in cell.errors)


def test_a_missing_payload_is_an_error_of_the_cell(tmp_path, chain, guest):
    guest[0]["upstream"] = "pass.log"
    cell = cell_of(chain, "upstream", Status.AS_EXPECTED)
    made = built(tmp_path, "upstream")
    shutil.rmtree(payload.payload(made.artifacts.directory))
    selftests.stage(chain, cell, made, None)
    assert cell.status is Status.ERROR
    assert any("selftests" in e and "missing" in e for e in cell.errors)


def test_an_error_of_the_agent_stays_an_error():
    agent = verdict.Judgement(Status.ERROR, [], ["no end marker"])
    ran = judge.judge(ktap.parse((CONSOLES / "pass.log").read_text()),
                      verdict.load(fixes.NAMES).expected({}), None, {})
    assert ran.status is Status.AS_EXPECTED
    assert judge.merged(agent, ran).status is Status.ERROR


def test_the_runner_refuses_outside_the_test_guest():
    """On this machine (no token on its command line) the guest's runner
    stops before it mounts, copies or loads anything."""
    proc = subprocess.run(["bash", RUNNER], capture_output=True, text=True, timeout=30,
                          env={"PATH": os.environ["PATH"]})
    assert proc.returncode == 3
    assert "taintport-selftests: refusing to run: no taintport.token=" in proc.stderr
    assert "KTAP" not in proc.stdout


def test_the_payload_goes_to_the_guest_with_modes_that_keep_signatures(tmp_path):
    folder = tmp_path / "selftests"
    (folder / "livepatch" / "test_modules").mkdir(parents=True)
    (folder / "livepatch" / "test-state.sh").write_text("#!/bin/bash\n")
    (folder / "livepatch" / "test_modules" / "m.ko").write_bytes(b"signed")
    entries = {name: mode for name, mode, _ in payload.archive_entries(folder)}
    assert entries["taintport/selftests/livepatch/test-state.sh"] == 0o755
    assert entries["taintport/selftests/livepatch/test_modules/m.ko"] == 0o644
    names = list(entries)
    assert names.index("taintport/selftests/livepatch/test_modules") < \
        names.index("taintport/selftests/livepatch/test_modules/m.ko")
    os.symlink("/etc/passwd", folder / "livepatch" / "planted")
    with pytest.raises(RunError, match="symbolic link"):
        payload.archive_entries(folder)


def test_settings_timeout_zero_takes_ours(tmp_path):
    (tmp_path / "settings").write_text("timeout=0\n")
    assert payload.timeout(tmp_path) == payload.DEFAULT_TIMEOUT
    (tmp_path / "settings").write_text("timeout=45\n")
    assert payload.timeout(tmp_path) == 45


def test_summary_lists_the_kernels_own_failures_once_with_their_output(
        tmp_path, chain, guest):
    from taintport.results.reports import summary
    cells = run_cells(tmp_path, chain, guest,
                      {"upstream": "state-fails.log", "backported": "state-fails.log"})
    lines = summary.kernels_own(list(cells.values()))
    assert lines[0] == ("* bookworm-6.1: selftests.livepatch.test-state fails on the tree "
                        "as shipped")
    assert sum(line.startswith("* ") for line in lines) == 1
    assert any("system state modification ... not ok" in line for line in lines)
    clean = run_cells(tmp_path / "clean", chain, guest,
                      {"upstream": "pass.log", "backported": "pass.log"})
    assert summary.kernels_own(list(clean.values())) == []


def test_a_cell_with_its_selftests_goes_through_matrix_json_unchanged(
        tmp_path, chain, guest):
    import json
    from taintport.results import schema
    cells = run_cells(tmp_path, chain, guest,
                      {"upstream": "state-fails.log", "backported": "callbacks-timeout.log"})
    for cell in cells.values():
        written = json.loads(json.dumps(schema.write_cell(cell)))
        assert written["timings"]["selftests"] == cell.timings.selftests
        assert schema.read_cell(schema.Reader(tmp_path / "cell.json"), written, "cell") == cell


def fake_build(tmp_path, monkeypatch, *, in_tree: bool):
    """A tree and build dir in the two shapes (up to 6.1: lib/livepatch's
    modules in the build; from 6.12: test_modules/ built by make M=), with make
    and the build's sign-file faked: each signs by appending a marker."""
    tree, build_dir = tmp_path / "tree", tmp_path / "build"
    selftests_dir = tree / payload.SELFTESTS
    selftests_dir.mkdir(parents=True)
    for name in ("functions.sh", "test-livepatch.sh", "test-state.sh", "README"):
        (selftests_dir / name).write_text(f"# {name}\n")
    (selftests_dir / "settings").write_text("timeout=0\n")
    (build_dir / "scripts").mkdir(parents=True)
    (build_dir / "certs").mkdir()
    (build_dir / "certs" / "signing_key.pem").write_text("key")
    (build_dir / ".config").write_text('CONFIG_MODULE_SIG_HASH="sha256"\n')
    sign = build_dir / "scripts" / "sign-file"
    sign.write_text('#!/bin/sh\n{ cat "$4"; echo "~signed with $1"; } > "$5"\n')
    sign.chmod(0o755)
    (build_dir / payload.SAMPLE).parent.mkdir(parents=True)
    (build_dir / payload.SAMPLE).write_text("sample\n")
    if in_tree:
        (tree / payload.IN_TREE).mkdir(parents=True)
        (tree / payload.IN_TREE / "test_klp_state.c").write_text("state\n")
        (build_dir / payload.IN_TREE).mkdir(parents=True)
        (build_dir / payload.IN_TREE / "test_klp_state.ko").write_text("state\n")
    else:
        (selftests_dir / "test_modules").mkdir()
        (selftests_dir / "test_modules" / "test_klp_state.c").write_text("state\n")
        (selftests_dir / f"{payload.GETPID}.c").write_text("int main(void){return 0;}\n")
        bin_dir = tmp_path / "bin"
        bin_dir.mkdir()
        make = bin_dir / "make"
        make.write_text('#!/bin/sh\nfor a; do case $a in M=*) m=${a#M=};; esac; done\n'
                        'for c in "$m"/*.c; do cp "$c" "${c%.c}.ko"; done\n')
        make.chmod(0o755)
        monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    return tree, build_dir


@pytest.mark.parametrize("in_tree", [True, False], ids=["up-to-6.1", "from-6.12"])
def test_the_payload_is_built_from_the_cells_tree_and_signed(tmp_path, monkeypatch, in_tree):
    tree, build_dir = fake_build(tmp_path, monkeypatch, in_tree=in_tree)
    out = tmp_path / "out"
    (payload.payload(out) / "stale").mkdir(parents=True)
    folder = payload.build_payload(tree, payload.OurBuild(build_dir, 1, tmp_path / "cache"),
                                   "6.1.192", out, tmp_path / "log")
    assert not (folder / "stale").exists()
    assert (folder / "release").read_text() == "6.1.192\n"
    assert (folder / "timeout").read_text() == f"{payload.DEFAULT_TIMEOUT}\n"
    assert sorted(p.name for p in (folder / "livepatch").glob("*.sh")) == \
        ["functions.sh", "test-livepatch.sh", "test-state.sh"]
    module = folder / ("modules" if in_tree else "livepatch/test_modules") / \
        "test_klp_state.ko"
    assert module.read_text() == "state\n~signed with sha256\n"
    assert (folder / "sample" / "trace-events-sample.ko").read_text() == "sample\n"
    assert (folder / "sample" / "trace-events-sample-signed.ko").read_text() == \
        "sample\n~signed with sha256\n"
    assert (folder / "livepatch" / payload.GETPID).exists() is not in_tree
    assert payload.guest_timeout(out) == 2 * payload.DEFAULT_TIMEOUT + \
        payload.BOOT_AND_SAMPLE


def test_a_build_without_the_sample_says_which_option(tmp_path, monkeypatch):
    tree, build_dir = fake_build(tmp_path, monkeypatch, in_tree=True)
    (build_dir / payload.SAMPLE).unlink()
    with pytest.raises(RunError, match="CONFIG_SAMPLE_TRACE_EVENTS=m did not build"):
        payload.build_payload(tree, payload.OurBuild(build_dir, 1, tmp_path / "cache"),
                              "6.1.192", tmp_path / "out", tmp_path / "log")
    (build_dir / payload.IN_TREE / "test_klp_state.ko").unlink()
    with pytest.raises(RunError, match="CONFIG_TEST_LIVEPATCH=m did not build"):
        payload.build_payload(tree, payload.OurBuild(build_dir, 1, tmp_path / "cache"),
                              "6.1.192", tmp_path / "out", tmp_path / "log")


def test_the_distributions_binary_runs_its_selftests_with_its_own_boot(
        tmp_path, chain, guest):
    """Debian's binary boots the selftests' image as its agent's boot does
    (its memory and command line), and its selftests are judged against
    upstream's: all pass, the sample's signed load is skipped as the agent's
    signed loads are (no key here to sign it with). The console is a real
    run's (data/selftests/README.md)."""
    cells = run_cells(tmp_path, chain, guest,
                      {"upstream": "pass.log", "shipped": "bookworm-6.1/shipped.log"},
                      {"upstream": Status.KNOWN_BUG, "shipped": Status.KNOWN_BUG})
    cell = cells["shipped"]
    assert cell.status is Status.KNOWN_BUG, cell.errors
    assert cell.timings.selftests is not None
    shipped = BOOKWORM.shipped
    boot_asked = guest[1][-1]
    assert boot_asked["memory"] == str(shipped.memory) != "512"
    assert boot_asked["append"].startswith(shipped.append)
    livepatch = [c for c in cell.checks if c.name.startswith("selftests.livepatch.")]
    assert len(livepatch) == 6 and all(c.observed and c.matches for c in livepatch)
    signed = check(cell, "sample.trace_events.signed_events_present")
    assert signed.declared_skip and signed.matches
    assert "signed.events_present is unobservable on this variant" in signed.diagnostics[0]
    unsigned = check(cell, "sample.trace_events.unsigned_events_present")
    # built against Debian's headers, loaded unsigned: O and E, events kept
    assert unsigned.observed is True and "unsigned_events_present: taint = OE" in \
        unsigned.diagnostics


def test_a_selftest_failing_only_on_the_distributions_binary_is_unexpected(
        tmp_path, chain, guest):
    cells = run_cells(tmp_path, chain, guest,
                      {"upstream": "pass.log", "shipped": "shipped-state-fails.log"},
                      {"upstream": Status.KNOWN_BUG, "shipped": Status.KNOWN_BUG})
    assert cells["shipped"].status is Status.UNEXPECTED
    assert [c.name for c in cells["shipped"].failing] == ["selftests.livepatch.test-state"]


def test_a_selftest_failing_on_the_binary_and_upstream_is_the_kernels_own(
        tmp_path, chain, guest):
    cells = run_cells(tmp_path, chain, guest,
                      {"upstream": "state-fails.log", "shipped": "shipped-state-fails.log"},
                      {"upstream": Status.KNOWN_BUG, "shipped": Status.KNOWN_BUG})
    assert cells["shipped"].status is Status.KNOWN_BUG
    state = check(cells["shipped"], "selftests.livepatch.test-state")
    assert (state.expected, state.observed) == (False, False)
    assert state.diagnostics[0] == judge.KERNELS_OWN


def test_a_module_the_headers_cannot_build_is_a_declared_skip_naming_it(
        tmp_path, chain, guest):
    guest[0].update({"upstream": "pass.log", "shipped": "shipped-unbuilt.log"})
    upstream = cell_of(chain, "upstream", Status.KNOWN_BUG)
    selftests.stage(chain, upstream, built(tmp_path, "upstream"), None)
    cell = cell_of(chain, "shipped", Status.KNOWN_BUG)
    made = built(tmp_path, "shipped")
    why = ("not built against the distribution's headers: test_klp_callbacks_busy.c:9:10: "
           "fatal error: linux/workqueue.h: No such file or directory")
    (payload.payload(made.artifacts.directory) / payload.UNBUILT).write_text(
        f"test_klp_callbacks_busy\t{why}\ntrace-events-sample\t{why}\n")
    selftests.stage(chain, cell, made, upstream)
    assert cell.status is Status.KNOWN_BUG, cell.errors
    module = check(cell, "selftests.livepatch.test_klp_callbacks_busy")
    assert module.declared_skip and module.matches and module.diagnostics == (why,)
    callbacks = check(cell, "selftests.livepatch.test-callbacks")
    assert callbacks.declared_skip and "test_klp_callbacks_busy" in callbacks.diagnostics[0]
    for name in judge.WITNESSES:
        witness = check(cell, name)
        assert witness.declared_skip and witness.matches
        assert witness.diagnostics[0] == f"skipped: the sample: {why}"


def test_a_sample_declared_unbuilt_but_loaded_is_unexpected():
    """The host's declaration must be true: a sample it said it could not
    build, seen loading in the guest, is a finding (as a declared skip the
    agent observed)."""
    parsed = ktap.parse((CONSOLES / "pass.log").read_text())
    expected = verdict.load(fixes.NAMES).expected({})
    judged = judge.judge(parsed, expected, None, judge.declared(frozenset(), "broken"))
    assert judged.status is Status.UNEXPECTED
    assert not check(judged, "sample.trace_events.unsigned_events_present").matches


def fake_headers_make(tmp_path, monkeypatch):
    """make against a distribution's headers, faked: it records its
    arguments, builds <m>.ko from each <m>.c of M= as Kbuild would, and fails
    on a source holding #error with the compiler's line for it."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)  # fake_build's make, for our build dir, gives way
    make = bin_dir / "make"
    make.write_text('#!/bin/sh\necho "$*" >> "$MAKE_ARGS"\n'
                    'for a; do case $a in M=*) m=${a#M=};; esac; done\nrc=0\n'
                    'for c in "$m"/*.c; do\n'
                    '  if grep -q "#error" "$c"; then echo "$c:3:2: error: #error no such API"; rc=2\n'
                    '  else cp "$c" "${c%.c}.ko"; fi\ndone\nexit $rc\n')
    make.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    monkeypatch.setenv("MAKE_ARGS", str(tmp_path / "make-args"))
    return tmp_path / "make-args"


@pytest.mark.parametrize("in_tree", [True, False], ids=["up-to-6.1", "from-6.12"])
def test_the_distributions_payload_is_built_against_its_headers_unsigned(
        tmp_path, monkeypatch, in_tree):
    """kernel/binary.py's make builds every module of the payload out of
    tree (the tree's own Makefiles, the option on the command line), none is
    signed (the distribution's key is not here), and one its headers cannot
    build is named with the compiler's reason instead of stopping the run."""
    tree, _ = fake_build(tmp_path, monkeypatch, in_tree=in_tree)
    args = fake_headers_make(tmp_path, monkeypatch)
    modules = tree / (payload.IN_TREE if in_tree else payload.SELFTESTS / "test_modules")
    modules.mkdir(parents=True, exist_ok=True)
    (modules / "test_klp_state.c").write_text("state\n")
    (modules / "test_klp_syscall.c").write_text("#error\n")
    (tree / payload.SAMPLE.parent).mkdir(parents=True)
    (tree / payload.SAMPLE.parent / "trace-events-sample.c").write_text("sample\n")
    target = payload.Headers(("make", "-C", "/headers", "CC=gcc"), {})
    out = tmp_path / "out"
    log = tmp_path / "build.log"
    folder = payload.build_payload(tree, target, "6.1.0-57-amd64", out, log)
    module = folder / ("modules" if in_tree else "livepatch/test_modules") / \
        "test_klp_state.ko"
    assert module.read_text() == "state\n"  # as built: unsigned
    assert not module.with_name("test_klp_syscall.ko").exists()
    assert sorted(p.name for p in (folder / "sample").iterdir()) == ["trace-events-sample.ko"]
    why = payload.unbuilt(out)
    assert list(why) == ["test_klp_syscall"]
    assert why["test_klp_syscall"].startswith("not built against the distribution's headers: ")
    assert why["test_klp_syscall"].endswith("test_klp_syscall.c:3:2: error: #error no such API")
    calls = args.read_text().splitlines()
    assert all(c.startswith("-C /headers CC=gcc -k M=") for c in calls)
    assert calls[-1].endswith("CONFIG_SAMPLE_TRACE_EVENTS=m modules")
    assert calls[0].endswith("CONFIG_TEST_LIVEPATCH=m modules") is in_tree


def test_the_selftests_folders_are_the_same_in_every_variants_tree():
    """The distribution's binary takes its selftests from the version's tree
    in whatever variant the tree was left: no quilt patch may touch them."""
    read = (str(payload.SELFTESTS), str(payload.IN_TREE), str(payload.SAMPLE.parent))
    touched = [f"{patch}: {line}" for patch in sorted((REPO / "quilt").rglob("*.patch"))
               for line in patch.read_text(errors="replace").splitlines()
               if line.startswith(("--- ", "+++ ")) and any(r in line for r in read)]
    assert touched == []


def test_the_runners_ktap_starts_a_line_of_its_own():
    """data/selftests/bookworm-6.12/shipped-glued.log, a real run: Debian's
    6.12 binary printed the selftests' KTAP behind the boot stub's last line
    ("Probing EDD ... ok" and a terminal reset, no newline; from 6.12 no
    depmod line comes first), so that prefix was cut from every line and the
    cell was an error though every selftest passed. The runner now prints a
    newline first; the same console, so started, reads whole."""
    glued = (CONSOLES / "bookworm-6.12" / "shipped-glued.log").read_text()
    assert ktap.parse(glued).broken
    started = glued.replace("KTAP version 1", "\nKTAP version 1", 1)  # the runner's echo
    parsed = ktap.parse(started)
    assert not parsed.errors
    assert len([n for n in parsed.results if n.startswith("selftests.livepatch.")]) == 7
    runner = RUNNER.read_text().splitlines()
    assert runner[runner.index('echo "KTAP version 1"') - 1] == "echo"


def test_captured_consoles_of_debians_6_12_binary_and_our_build_agree():
    """data/selftests/bookworm-6.12, a real run: Debian's 6.12 binary runs
    the seven selftests (test-syscall's helper and test_modules/ built
    against its headers) and passes them as our build of its source does."""
    expectations = verdict.load(fixes.NAMES)
    ships = versions.select(["bookworm-6.12"])[0].ships
    judged = {}
    for variant in ("upstream", "shipped"):
        text = (CONSOLES / "bookworm-6.12" / f"{variant}.log").read_text()
        expected = expectations.expected(expectations.states(named(variant), ships))
        reference = judged["upstream"].checks if judged else None
        judged[variant] = judge.judge(ktap.parse(text), expected, reference,
                                      judge.declared(named(variant).skips, None))
        assert judged[variant].status is Status.AS_EXPECTED, judged[variant].errors
        ran = [c for c in judged[variant].checks if c.name.startswith("selftests.livepatch.")]
        assert len(ran) == 7 and all(c.observed for c in ran)
    signed = check(judged["shipped"], "sample.trace_events.signed_events_present")
    assert signed.declared_skip and signed.matches


def test_a_cell_whose_agent_ended_in_error_declares_its_selftests_not_run(
        tmp_path, chain, guest):
    """A hung, panicked or cut-short agent is the cell's result: the selftests
    are said not run (why, in the cell), and no guest boots for them."""
    cell = cell_of(chain, "upstream", Status.ERROR)
    selftests.stage(chain, cell, built(tmp_path, "upstream"), None)
    (skip,) = cell.checks
    assert skip.declared_skip and "agent's boot ended in an error" in skip.diagnostics[0]
    assert cell.status is Status.ERROR and cell.timings.selftests is None
    assert guest[1] == []


def test_captured_consoles_of_a_real_6_1_run_are_judged_as_the_matrix_judged_them():
    """data/selftests/bookworm-6.1: the selftests' consoles of a real run
    (every livepatch selftest passes on 6.1 under TCG; the sample loaded
    unsigned in reverted gets F and no events, as utt does)."""
    expectations = verdict.load(fixes.NAMES)
    reference = None
    for variant in ("upstream", "reverted", "backported"):
        text = (CONSOLES / "bookworm-6.1" / f"{variant}.log").read_text()
        expected = expectations.expected(expectations.states(named(variant), SHIPS))
        judged = judge.judge(ktap.parse(text), expected,
                             None if reference is None else reference.checks, {})
        assert judged.status is Status.AS_EXPECTED, (variant, judged.errors)
        names = {c.name: c for c in judged.checks}
        assert len([n for n in names if n.startswith("selftests.livepatch.")]) == 6
        unsigned = names["sample.trace_events.unsigned_events_present"]
        assert unsigned.observed is (variant != "reverted")
        reference = reference or judged
