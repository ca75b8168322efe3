# SPDX-License-Identifier: GPL-2.0
"""The ways a run goes wrong, kept apart from a test that fails.

A test that fails is a result (a cell that is "unexpected"). These are not
results: they mean the input was bad, the run itself broke or its results
could not be written, and they end as status "error" and exit code 2.
"""


class TaintportError(Exception):
    """Base: anything that stops a stage."""


class InputError(TaintportError):
    """Bad input: an unknown name, a wrong checksum, a malformed file."""


class OutputError(TaintportError):
    """A result could not be written (a full disk, a read-only folder); what
    was there before is left as it was."""


class RunError(TaintportError):
    """A stage broke: a tool failed, a build failed, a guest hung or panicked."""

    def __init__(self, stage: str, message: str, log_tail: str = "") -> None:
        self.stage = stage
        self.log_tail = log_tail
        text = f"{stage}: {message}"
        if log_tail:
            text += "\n" + log_tail
        super().__init__(text)
