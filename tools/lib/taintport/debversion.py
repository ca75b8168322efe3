"""Debian's order of package versions (Policy 5.6.12), as dpkg --compare-versions has it.

A leaf: the fetch stage picks the newest upload among a release's suites
with it, and nothing else about a version's meaning is needed. Written out
rather than taken from python3-apt, whose comparison needs apt's system
configuration (the host's) initialised first.
"""
from functools import cmp_to_key

DIGITS = "0123456789"


def _weight(char: str) -> int:
    """dpkg's order of a non-digit: '~' before the end, the end before
    letters, letters before everything else."""
    if char == "~":
        return -1
    if not char or char in DIGITS:
        return 0
    if char.isascii() and char.isalpha():
        return ord(char)
    return ord(char) + 256


def _compare_part(a: str, b: str) -> int:
    """dpkg's verrevcmp: runs of non-digits by _weight, runs of digits as numbers."""
    i = j = 0
    while i < len(a) or j < len(b):
        while (i < len(a) and a[i] not in DIGITS) or (j < len(b) and b[j] not in DIGITS):
            left = _weight(a[i]) if i < len(a) and a[i] not in DIGITS else 0
            right = _weight(b[j]) if j < len(b) and b[j] not in DIGITS else 0
            if left != right:
                return left - right
            i += 1
            j += 1
        start_i, start_j = i, j
        while i < len(a) and a[i] in DIGITS:
            i += 1
        while j < len(b) and b[j] in DIGITS:
            j += 1
        left_number = int(a[start_i:i] or "0")
        right_number = int(b[start_j:j] or "0")
        if left_number != right_number:
            return -1 if left_number < right_number else 1
    return 0


def _split(version: str) -> tuple[int, str, str]:
    epoch, colon, rest = version.partition(":")
    if not colon:
        epoch, rest = "0", version
    upstream, dash, revision = rest.rpartition("-")
    if not dash:
        upstream, revision = rest, ""
    return int(epoch or "0"), upstream, revision


def compare(a: str, b: str) -> int:
    """Negative, zero or positive as a is older than, equal to or newer than b."""
    left, right = _split(a), _split(b)
    if left[0] != right[0]:
        return -1 if left[0] < right[0] else 1
    return _compare_part(left[1], right[1]) or _compare_part(left[2], right[2])


# sorted(versions, key=key): oldest first
key = cmp_to_key(compare)
