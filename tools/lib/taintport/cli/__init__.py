# SPDX-License-Identifier: GPL-2.0
"""Command line: the matrix, and one verb per stage for debugging a single step.

Each verb (cells.py, archive.py, layer.py, reports.py) turns its arguments
into a typed request, checked whole before any work, and hands it to one
function; main() maps the outcome to the exit code.
"""
import argparse
import os
import signal
import sys
import traceback
from types import FrameType

from taintport.cache import Cache
from taintport.cli import archive, cells, layer, options, reports
from taintport.cli.verb import AnyVerb
from taintport.errors import TaintportError
from taintport.kernel import build
from taintport.layer import fixes
from taintport.results import report
from taintport.tree import variants

VERBS: dict[str, AnyVerb] = {verb.name: verb for verb in
                             (*cells.VERBS, *archive.VERBS, *layer.VERBS, *reports.VERBS)}


def description() -> str:
    """The family of fixes and the variants, as their files say them."""
    family = "\n".join(f"  {fix.name:<11} {fix.info.title} (upstream {fix.commit[:12]}, "
                       f"{fix.release})" for fix in fixes.FIXES)
    rows = "\n".join(f"  {v.name:<11} {v.what}" for v in variants.table().booted())
    return f"""\
Carry a family of kernel fixes (semantic-patches/) onto distribution kernels
and prove them by booting each kernel:
{family}

Each kernel in versions/ is fetched with apt, built from tinyconfig plus
kconfigs/, and booted under QEMU with a dracut initramfs that loads an
out-of-tree module signed, unsigned and forced, and a livepatch. Variants
(test-matrix/variants.toml):
{rows}

Exit codes: 0 every cell as expected, 1 a cell unexpected (the kernel is not
what test-matrix/fixes/<fix>.toml says; for inspect: a fix is not there; for
versions --outdated: a pin is behind), 2 the run itself broke or the input
was refused. NO_COLOR set: no colour on a terminal.
"""


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="taintport", description=description(),
                                  formatter_class=argparse.RawDescriptionHelpFormatter,
                                  allow_abbrev=False)
    top.add_argument("--version", action="version", version=options.version_text(),
                     help="the tool's version (and its git commit, run from a clone)")
    sub = top.add_subparsers(dest="verb", required=True, metavar="VERB")
    for verb in VERBS.values():
        p = sub.add_parser(verb.name, help=verb.help, description=verb.description or
                           verb.help, allow_abbrev=False,
                           formatter_class=argparse.RawDescriptionHelpFormatter)
        verb.options(p)
    return top


def on_sigterm(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def refused(err: TaintportError) -> int:
    print(f"taintport: error: {report.printable(err)}", file=sys.stderr)
    return 2


def main(argv: list[str] | None = None) -> int:
    # SIGTERM (a CI job cancelled, kill) ends the run like Ctrl-C: children
    # killed, finished cells kept.
    signal.signal(signal.SIGTERM, on_sigterm)
    try:
        # the help names the variants: a broken variants.toml is an input error too
        top = parser()
        if "_ARGCOMPLETE" in os.environ:  # bash asks (cli/manual.py's hook): answer, exit
            import argcomplete
            argcomplete.autocomplete(top)
        args = top.parse_args(argv)
        verb = VERBS[args.verb]
        request = verb.request(args)  # every argument checked before any work
        build.ccache_wanted()  # and the environment's TAINTPORT_CCACHE
        code = verb.run(request, Cache(getattr(args, "cache", None)))
        sys.stdout.flush()  # a closed pipe is met here, not in the interpreter's exit
        return code
    except TaintportError as err:
        return refused(err)
    except KeyboardInterrupt:
        print("taintport: interrupted; the cells that finished are kept", file=sys.stderr)
        return 2
    except BrokenPipeError:
        # the reader went away (`taintport check ... | head`): stop quietly, as a
        # tool that SIGPIPE ended would, with the status a shell gives that one
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 128 + signal.SIGPIPE
    except Exception:  # noqa: BLE001 - exit 1 would say a kernel misbehaved
        traceback.print_exc()
        print("taintport: error: internal error (a bug in taintport, not in a kernel); "
              "the traceback above says where", file=sys.stderr)
        return 2
