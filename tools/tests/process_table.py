# SPDX-License-Identifier: GPL-2.0
"""The host's processes read from /proc, for tests that kill a run and look
for what outlived it. A process is named by its pid and start time, never
only its pid: make check forks thousands while such a test runs, and a pid
seen early may belong to another process by the end."""
import time
from pathlib import Path


def stat(text):
    """(command name, the fields after it) of a /proc/<pid>/stat text: the
    name may hold spaces and parentheses, so it ends at the last ")".
    fields[0] is the state (proc(5)'s field 3), fields[1] the parent,
    fields[16] the nice value, fields[19] the start time."""
    return text[text.index("(") + 1:text.rindex(")")], text[text.rindex(")") + 2:].split()


def processes():
    """{(pid, start time): (parent, state, command name)} of every process now."""
    found = {}
    for path in Path("/proc").glob("[0-9]*/stat"):
        try:
            name, fields = stat(path.read_text())
        except OSError:
            continue
        state, parent, start = fields[0], int(fields[1]), int(fields[19])
        found[int(path.parent.name), start] = (parent, state, name)
    return found


def descendants(pid):
    """{(pid, start time): command name} of every live process below pid."""
    table = processes()
    below, todo = {}, [pid]
    while todo:
        parent = todo.pop()
        for child, (ppid, state, name) in table.items():
            if ppid == parent and state != "Z" and child not in below:
                below[child] = name
                todo.append(child[0])
    return below


def still_alive(procs, wait=1.0):
    """Those of procs still running (not zombies) after up to wait seconds: a
    child that dies with its run is gone in milliseconds, one that does not
    goes on with its work."""
    deadline = time.monotonic() + wait
    while True:
        table = processes()
        living = {p: procs[p] for p in procs if p in table and table[p][1] != "Z"}
        if not living or time.monotonic() > deadline:
            return living
        time.sleep(0.1)
