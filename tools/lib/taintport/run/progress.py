# SPDX-License-Identifier: GPL-2.0
"""What a long run shows while it works.

On a terminal (and not under CI) one status line is redrawn in place, every
second, so a four-minute build is seen counting: the cells in flight with
their stage, its elapsed time and, when an earlier run measured that stage of
that cell, the time it should still take. Elsewhere (a pipe, a CI log, CI
set) each event is one plain line that starts with the run's elapsed time,
so a slow stage shows in the log alone, and a stage still running says so
once a minute (a heartbeat: a 20-minute cold build is not a silent hang in
a CI log); nothing is printed while nothing runs.

What each stage took is kept in <cache>/stage-costs.json for the next run's
estimates: the last measurement per cell and stage, since a variant's
rebuild takes seconds where the first build of its tree takes minutes.
"""
import json
import os
import shutil
import sys
import threading
import time
from pathlib import Path
from typing import TextIO

from taintport.cache import write_atomic
from taintport.results.report import printable

TICK = 1.0  # seconds between redraws of the status line (and heartbeat checks)
HEARTBEAT = 60.0  # at most this often a log line about one stage still running


def clock(seconds: float) -> str:
    """0:01:23 for a log line's elapsed run time."""
    seconds = int(seconds)
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


def span(seconds: float, coarse: bool = False) -> str:
    """12s, 4m05s: a stage's time on the status line; coarse (whole minutes
    once past one, 20m) for a heartbeat line, which comes once a minute."""
    whole = int(round(seconds))
    if whole < 60:
        return f"{whole}s"
    return f"{whole // 60}m" if coarse else f"{whole // 60}m{whole % 60:02d}s"


def load_costs(path: Path | None) -> dict[str, float]:
    if path is None:
        return {}
    try:
        costs = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}  # no estimates yet, or a file to be rewritten
    if not isinstance(costs, dict):
        return {}
    return {k: v for k, v in costs.items()
            if isinstance(k, str) and isinstance(v, (int, float)) and v >= 0}


class Progress:
    def __init__(self, total: int, stream: TextIO = sys.stderr,
                 costs_path: Path | None = None, tick: float = TICK,
                 heartbeat: float = HEARTBEAT) -> None:
        self.stream = stream
        self.live = stream.isatty() and not os.environ.get("CI")
        self.total = total
        self.finished = 0
        self.started = time.monotonic()
        self.active: dict[str, tuple[str, float]] = {}  # "version variant" -> (stage, started)
        self.heard: dict[str, float] = {}  # "version variant" -> its last line in a log
        self.heartbeat = heartbeat
        self.costs_path = costs_path
        self.costs = load_costs(costs_path)  # "version variant stage" -> seconds
        self.measured: dict[str, float] = {}
        self.lock = threading.Lock()
        self.closed = threading.Event()
        # a terminal's line is redrawn on each tick; a log checks for heartbeats
        self.ticker = threading.Thread(target=self._tick, args=(tick,), name="progress",
                                       daemon=True)
        self.ticker.start()

    def _tick(self, tick: float) -> None:
        while not self.closed.wait(tick):
            if self.live:
                self._emit("")
            else:
                self._beat()

    def _beat(self) -> None:
        """In a log: one line for each stage that has run a heartbeat since
        the log last said anything about its cell."""
        with self.lock:
            now = time.monotonic()
            for cell, (stage, start) in sorted(self.active.items()):
                if self.closed.is_set() or now - self.heard.get(cell, start) < self.heartbeat:
                    continue
                self.heard[cell] = now
                self.stream.write(f"[{clock(now - self.started)}] [{cell}] {stage} "
                                  f"{span(now - start, coarse=True)}"
                                  f"{self.estimate(cell, stage, now - start, coarse=True)}\n")
                self.stream.flush()

    def estimate(self, cell: str, stage: str, elapsed: float, coarse: bool = False) -> str:
        """' (~2m left)' from the last run's measurement of this stage, if any."""
        cost = self.costs.get(f"{cell} {stage}")
        if cost is None:
            return ""
        if elapsed <= cost:
            return f" (~{span(cost - elapsed, coarse)} left)"
        return f" (last time {span(cost, coarse)})"

    def _status(self) -> str:
        now = time.monotonic()
        busy = ", ".join(f"{cell} {stage} {span(now - start)}"
                         + self.estimate(cell, stage, now - start)
                         for cell, (stage, start) in sorted(self.active.items()))
        line = f"[{self.finished}/{self.total} done, {clock(now - self.started)}] {busy}"
        # a line longer than the terminal wraps, and \r then redraws only its tail
        return line[:max(20, shutil.get_terminal_size().columns - 1)]

    def _emit(self, line: str) -> None:
        line = printable(line)  # a guest's error line must not drive the terminal
        with self.lock:
            if self.closed.is_set():
                return
            if self.live:
                self.stream.write("\r\033[K" + (line + "\n" if line else "") + self._status())
            elif line:
                self.stream.write(f"[{clock(time.monotonic() - self.started)}] {line}\n")
            self.stream.flush()

    def _finish_stage(self, cell: str, now: float) -> None:
        """Record what the cell's current stage took; under self.lock."""
        if cell in self.active:
            stage, start = self.active.pop(cell)
            self.measured[f"{cell} {stage}"] = round(now - start, 1)
        self.heard.pop(cell, None)

    def stage(self, cell: str, stage: str) -> None:
        with self.lock:
            now = time.monotonic()
            self._finish_stage(cell, now)
            self.active[cell] = (stage, now)
        self._emit("" if self.live else f"[{cell}] {stage}")

    def note(self, line: str) -> None:
        self._emit(line)

    def done(self, cell: str, status: str, detail: str = "") -> None:
        with self.lock:
            self._finish_stage(cell, time.monotonic())
            self.finished += 1
        self._emit(f"[{cell}] {status}" + (f" ({detail})" if detail else ""))

    def close(self) -> None:
        with self.lock:
            self.closed.set()  # no redraw after the status line is cleared
            if self.live:
                self.stream.write("\r\033[K")
                self.stream.flush()
        self.ticker.join(timeout=5)
        self.save()

    def save(self) -> None:
        """Merge this run's measurements into the cost file (another run's stay)."""
        if self.costs_path is None or not self.measured:
            return
        costs = load_costs(self.costs_path)
        costs.update(self.measured)
        try:
            write_atomic(self.costs_path, json.dumps(costs, indent=1, sort_keys=True) + "\n")
        except OSError:
            pass  # estimates are a convenience; a read-only cache loses only them
