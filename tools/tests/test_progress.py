# SPDX-License-Identifier: GPL-2.0
"""What a long run shows: a status line that counts every second on a
terminal, with an estimate once a stage has been measured; plain lines that
carry the run's elapsed time in a CI log."""
import io
import json
import re
import time

import pytest

from taintport.run import progress


class Terminal(io.StringIO):
    def isatty(self):
        return True


@pytest.fixture(autouse=True)
def not_ci(monkeypatch):
    monkeypatch.delenv("CI", raising=False)


def redraws(text):
    return [part for part in text.split("\r\033[K") if part]


def test_terminal_line_counts_while_no_event_arrives(tmp_path):
    out = Terminal()
    shown = progress.Progress(4, stream=out, costs_path=tmp_path / "costs.json", tick=0.1)
    shown.stage("bookworm-6.1 upstream", "build")
    time.sleep(1.35)
    shown.close()
    lines = redraws(out.getvalue())
    assert len(lines) >= 8, "redrawn on the tick, not only on events"
    seconds = [int(m.group(1)) for m in
               (re.search(r"upstream build (\d+)s", line) for line in lines) if m]
    assert seconds[0] == 0 and seconds[-1] >= 1, "the stage's elapsed time moves"
    assert out.getvalue().endswith("\r\033[K"), "the status line is cleared at the end"


def test_estimate_from_the_last_measurement_of_that_stage(tmp_path):
    costs = tmp_path / "costs.json"
    costs.write_text(json.dumps({"bookworm-6.1 upstream build": 240.0}))
    out = Terminal()
    shown = progress.Progress(4, stream=out, costs_path=costs, tick=60)
    shown.stage("bookworm-6.1 upstream", "build")
    shown.stage("bookworm-6.1 reverted", "apply")
    shown.close()
    text = out.getvalue()
    assert "bookworm-6.1 upstream build 0s (~4m00s left)" in text
    assert "reverted apply 0s (" not in text, "no estimate without a measurement"
    assert shown.estimate("bookworm-6.1 upstream", "build", 300) == " (last time 4m00s)"


def test_measurements_are_kept_for_the_next_run(tmp_path):
    costs = tmp_path / "costs.json"
    costs.write_text(json.dumps({"trixie-6.12 upstream build": 300.0, "junk": "x"}))
    shown = progress.Progress(2, stream=io.StringIO(), costs_path=costs)
    shown.stage("bookworm-6.1 upstream", "build")
    time.sleep(0.2)
    shown.stage("bookworm-6.1 upstream", "boot")
    shown.done("bookworm-6.1 upstream", "as-expected")
    shown.close()
    kept = json.loads(costs.read_text())
    assert kept["trixie-6.12 upstream build"] == 300.0, "another version's stay"
    assert 0.1 <= kept["bookworm-6.1 upstream build"] < 5
    assert "bookworm-6.1 upstream boot" in kept
    assert "junk" not in kept


def test_log_lines_carry_the_run_elapsed_time(monkeypatch):
    out = io.StringIO()
    shown = progress.Progress(1, stream=out)
    shown.started -= 83  # the run began 83 seconds ago
    shown.stage("bookworm-6.1 upstream", "build")
    shown.note("accelerator: tcg (no /dev/kvm)")
    shown.done("bookworm-6.1 upstream", "as-expected", "reused")
    shown.close()
    assert out.getvalue().splitlines() == [
        "[0:01:23] [bookworm-6.1 upstream] build",
        "[0:01:23] accelerator: tcg (no /dev/kvm)",
        "[0:01:23] [bookworm-6.1 upstream] as-expected (reused)",
    ]
    assert "\r" not in out.getvalue(), "no redraws in a log"


def test_log_heartbeat_for_each_running_stage_and_none_when_idle(tmp_path):
    """A cold build prints nothing for 20 minutes; in a log each running stage
    says it is still running at most once a heartbeat, with the estimate, and
    nothing comes while no stage runs."""
    costs = tmp_path / "costs.json"
    costs.write_text(json.dumps({"sid-7.2 upstream build": 1380.0}))
    out = io.StringIO()
    shown = progress.Progress(2, stream=out, costs_path=costs, tick=0.02, heartbeat=0.25)
    shown.started -= 1260  # the run began 21 minutes ago ...
    shown.stage("sid-7.2 upstream", "build")
    with shown.lock:  # ... and so did the build
        shown.active["sid-7.2 upstream"] = ("build", shown.active["sid-7.2 upstream"][1] - 1200)
    shown.stage("bookworm-6.1 reverted", "boot")
    time.sleep(0.6)
    shown.done("sid-7.2 upstream", "known-bug")
    shown.done("bookworm-6.1 reverted", "as-expected")
    quiet_from = len(out.getvalue())
    time.sleep(0.6)
    shown.close()
    lines = out.getvalue().splitlines()
    beats = [line for line in lines if re.search(r"\] (build|boot) \d", line)]
    assert re.fullmatch(r"\[0:21:0\d\] \[sid-7.2 upstream\] build 20m \(~3m left\)", beats[0])
    upstream = [line for line in beats if "sid-7.2 upstream" in line]
    reverted = [line for line in beats if "bookworm-6.1 reverted" in line]
    assert 1 <= len(upstream) <= 3 and 1 <= len(reverted) <= 3, \
        "one line per running stage per heartbeat, not one per tick"
    assert reverted[0].endswith("] [bookworm-6.1 reverted] boot 0s"), "no estimate: none measured"
    assert out.getvalue()[quiet_from:] == "", "nothing while nothing runs"


def test_a_stage_line_restarts_its_heartbeat():
    out = io.StringIO()
    shown = progress.Progress(1, stream=out, tick=0.02, heartbeat=0.4)
    shown.stage("bookworm-6.1 upstream", "apply")
    time.sleep(0.25)
    shown.stage("bookworm-6.1 upstream", "build")
    time.sleep(0.25)
    shown.close()
    assert [line.split("] ", 1)[1] for line in out.getvalue().splitlines()] == [
        "[bookworm-6.1 upstream] apply", "[bookworm-6.1 upstream] build"], \
        "no stage ran a whole heartbeat without a line"


def test_ci_set_means_a_log_even_on_a_terminal(monkeypatch):
    monkeypatch.setenv("CI", "true")
    out = Terminal()
    shown = progress.Progress(1, stream=out)
    shown.stage("bookworm-6.1 upstream", "build")
    shown.close()
    assert "\r" not in out.getvalue()
    assert re.fullmatch(r"\[0:00:0\d\] \[bookworm-6.1 upstream\] build\n", out.getvalue())


def test_a_guest_line_cannot_drive_the_terminal():
    out = io.StringIO()
    shown = progress.Progress(1, stream=out)
    shown.note("evil \033[2J line")
    shown.close()
    assert "\033" not in out.getvalue()


def test_clock_and_span():
    assert progress.clock(0) == "0:00:00"
    assert progress.clock(3725.9) == "1:02:05"
    assert progress.span(59.4) == "59s"
    assert progress.span(245) == "4m05s"
    assert progress.span(1230, coarse=True) == "20m"
    assert progress.span(42, coarse=True) == "42s"
