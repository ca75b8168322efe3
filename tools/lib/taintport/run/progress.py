"""What a long run shows while it works.

On a terminal (and not under CI) one status line is redrawn in place, every
second, so a four-minute build is seen counting: the cells in flight with
their stage, its elapsed time and, when an earlier run measured that stage of
that cell, the time it should still take. Elsewhere (a pipe, a CI log, CI
set) each event is one plain line that starts with the run's elapsed time,
so a slow stage shows in the log alone.

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

from taintport.cache import write_atomic
from taintport.results.reader import printable

TICK = 1.0  # seconds between redraws of the status line


def clock(seconds):
    """0:01:23 for a log line's elapsed run time."""
    seconds = int(seconds)
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


def span(seconds):
    """12s, 4m05s: a stage's time on the status line."""
    seconds = int(round(seconds))
    return f"{seconds}s" if seconds < 60 else f"{seconds // 60}m{seconds % 60:02d}s"


def load_costs(path):
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
    def __init__(self, total, stream=sys.stderr, costs_path=None, tick=TICK):
        self.stream = stream
        self.live = stream.isatty() and not os.environ.get("CI")
        self.total = total
        self.finished = 0
        self.started = time.monotonic()
        self.active = {}  # "version variant" -> (stage, started)
        self.costs_path = costs_path
        self.costs = load_costs(costs_path)  # "version variant stage" -> seconds
        self.measured = {}
        self.lock = threading.Lock()
        self.closed = threading.Event()
        self.ticker = None
        if self.live:
            self.ticker = threading.Thread(target=self._tick, args=(tick,),
                                           name="progress", daemon=True)
            self.ticker.start()

    def _tick(self, tick):
        while not self.closed.wait(tick):
            self._emit("")

    def estimate(self, cell, stage, elapsed):
        """' (~2m left)' from the last run's measurement of this stage, if any."""
        cost = self.costs.get(f"{cell} {stage}")
        if cost is None:
            return ""
        if elapsed <= cost:
            return f" (~{span(cost - elapsed)} left)"
        return f" (last time {span(cost)})"

    def _status(self):
        now = time.monotonic()
        busy = ", ".join(f"{cell} {stage} {span(now - start)}"
                         + self.estimate(cell, stage, now - start)
                         for cell, (stage, start) in sorted(self.active.items()))
        line = f"[{self.finished}/{self.total} done, {clock(now - self.started)}] {busy}"
        # a line longer than the terminal wraps, and \r then redraws only its tail
        return line[:max(20, shutil.get_terminal_size().columns - 1)]

    def _emit(self, line):
        line = printable(line)  # a guest's error line must not drive the terminal
        with self.lock:
            if self.closed.is_set():
                return
            if self.live:
                self.stream.write("\r\033[K" + (line + "\n" if line else "") + self._status())
            elif line:
                self.stream.write(f"[{clock(time.monotonic() - self.started)}] {line}\n")
            self.stream.flush()

    def _finish_stage(self, cell, now):
        """Record what the cell's current stage took; under self.lock."""
        if cell in self.active:
            stage, start = self.active.pop(cell)
            self.measured[f"{cell} {stage}"] = round(now - start, 1)

    def stage(self, cell, stage):
        with self.lock:
            now = time.monotonic()
            self._finish_stage(cell, now)
            self.active[cell] = (stage, now)
        self._emit("" if self.live else f"[{cell}] {stage}")

    def note(self, line):
        self._emit(line)

    def done(self, cell, status, detail=""):
        with self.lock:
            self._finish_stage(cell, time.monotonic())
            self.finished += 1
        self._emit(f"[{cell}] {status}" + (f" ({detail})" if detail else ""))

    def close(self):
        with self.lock:
            self.closed.set()  # no redraw after the status line is cleared
            if self.live:
                self.stream.write("\r\033[K")
                self.stream.flush()
        if self.ticker:
            self.ticker.join(timeout=5)
        self.save()

    def save(self):
        """Merge this run's measurements into the cost file (another run's stay)."""
        if self.costs_path is None or not self.measured:
            return
        costs = load_costs(self.costs_path)
        costs.update(self.measured)
        try:
            write_atomic(self.costs_path, json.dumps(costs, indent=1, sort_keys=True) + "\n")
        except OSError:
            pass  # estimates are a convenience; a read-only cache loses only them
