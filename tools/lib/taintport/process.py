"""Run external tools with their output in a log and failures named."""
import os
import shlex
import shutil
import subprocess
from pathlib import Path

from .errors import RunError

TAIL_LINES = 20


def require(tool, package):
    """Fail early, naming the Debian package, when a tool is missing."""
    path = shutil.which(tool)
    if not path:
        raise RunError("setup", f"'{tool}' not found; install the Debian package '{package}' "
                       "(make deps installs everything)")
    return path


def tail(path, lines=TAIL_LINES):
    try:
        text = Path(path).read_text(errors="replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


def run(cmd, *, stage, cwd=None, env=None, log=None, timeout=None, check=True):
    """Run cmd; stdout+stderr go to log (appended) or are captured.

    Returns the CompletedProcess. On a non-zero exit (when check) raises
    RunError naming the command and quoting the last lines of its output.
    """
    full_env = dict(os.environ)
    if env:
        full_env.update(env)
    shown = shlex.join(str(c) for c in cmd)
    try:
        if log:
            Path(log).parent.mkdir(parents=True, exist_ok=True)
            with open(log, "a") as out:
                out.write(f"$ {shown}\n")
                out.flush()
                proc = subprocess.run([str(c) for c in cmd], cwd=cwd, env=full_env,
                                      stdout=out, stderr=subprocess.STDOUT,
                                      timeout=timeout, text=True)
        else:
            proc = subprocess.run([str(c) for c in cmd], cwd=cwd, env=full_env,
                                  capture_output=True, timeout=timeout, text=True)
    except FileNotFoundError:
        raise RunError(stage, f"command not found: {cmd[0]}") from None
    except subprocess.TimeoutExpired:
        raise RunError(stage, f"timed out after {timeout}s: {shown}",
                       tail(log) if log else "") from None
    if check and proc.returncode != 0:
        detail = tail(log) if log else "\n".join(
            (proc.stdout + proc.stderr).splitlines()[-TAIL_LINES:])
        raise RunError(stage, f"exit {proc.returncode}: {shown}", detail)
    return proc
