"""What a long run shows while it works.

On a terminal (and not under CI) one status line is redrawn in place: the
cells in flight with their stage and elapsed time, and how many are left.
Elsewhere (a pipe, a CI log, CI set) each event is one plain line.
"""
import os
import sys
import threading
import time

from .results import printable


class Progress:
    def __init__(self, total, stream=sys.stderr):
        self.stream = stream
        self.live = stream.isatty() and not os.environ.get("CI")
        self.total = total
        self.finished = 0
        self.active = {}  # "version variant" -> (stage, started)
        self.lock = threading.Lock()

    def _status(self):
        now = time.monotonic()
        busy = ", ".join(f"{cell} {stage} {now - start:4.0f}s"
                         for cell, (stage, start) in sorted(self.active.items()))
        return f"[{self.finished}/{self.total} done] {busy}"[:200]

    def _emit(self, line):
        line = printable(line)  # a guest's error line must not drive the terminal
        with self.lock:
            if self.live:
                self.stream.write("\r\033[K" + (line + "\n" if line else "") + self._status())
            elif line:
                self.stream.write(line + "\n")
            self.stream.flush()

    def stage(self, cell, stage):
        self.active[cell] = (stage, time.monotonic())
        self._emit("" if self.live else f"[{cell}] {stage}")

    def note(self, line):
        self._emit(line)

    def done(self, cell, status, detail=""):
        self.active.pop(cell, None)
        self.finished += 1
        self._emit(f"[{cell}] {status}" + (f" ({detail})" if detail else ""))

    def close(self):
        if self.live:
            with self.lock:
                self.stream.write("\r\033[K")
                self.stream.flush()
