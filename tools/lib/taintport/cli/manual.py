# SPDX-License-Identifier: GPL-2.0
"""The man page and the bash completion, generated from the parser at build
time (`make man completion`), never committed: they cannot go stale.

    python3 -m taintport.cli.manual man|completion   (PYTHONPATH=tools/lib)
"""
import os
import subprocess
import sys

from build_manpages.manpage import Manpage

from taintport.cli import parser


def man_page() -> str:
    """taintport(1), argparse-manpage's rendering of every verb and option."""
    return str(Manpage(parser()))


def bash_completion() -> str:
    """argcomplete's bash hook: completing asks taintport's own parser
    (cli.main calls argcomplete when the hook runs it)."""
    return subprocess.run(["register-python-argcomplete", "taintport"], capture_output=True,
                          text=True, check=True, timeout=60).stdout


def main(argv: list[str]) -> int:
    made = {"man": man_page, "completion": bash_completion}
    if len(argv) != 1 or argv[0] not in made:
        print(f"usage: python3 -m taintport.cli.manual {'|'.join(made)}", file=sys.stderr)
        return 2
    sys.stdout.write(made[argv[0]]())
    return 0


if __name__ == "__main__" and not os.environ.get("_ARGCOMPLETE"):
    sys.exit(main(sys.argv[1:]))
