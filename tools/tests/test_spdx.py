# SPDX-License-Identifier: GPL-2.0
"""Every tracked source file says its licence in its first lines, as the
kernel's own files do (GPL-2.0, LICENSE): `//` in C and SmPL, `#` in Python,
shell, Makefiles and TOML. Fixtures (inputs whose bytes a test reads) are data."""
import subprocess

from taintport import REPO

# the folders of fixtures: a line added there moves what the tests compare
DATA = ("tools/tests/data/", "quilt/")


def fixture(name):
    """A fix's SmPL fixtures (semantic-patches/<fix>/tests/) are data too."""
    return name.startswith(DATA) or (name.startswith("semantic-patches/") and
                                     "/tests/" in name)
COMMENT = {".c": "//", ".h": "//", ".cocci": "//", ".py": "#", ".sh": "#", ".toml": "#"}
MAKEFILES = ("Makefile", "Kbuild")
LINE = "SPDX-License-Identifier: GPL-2.0"


def sources():
    """{path: the comment its SPDX line starts with} of every tracked source file."""
    tracked = subprocess.run(["git", "-C", str(REPO), "ls-files", "-z"], capture_output=True,
                             check=True).stdout.decode().split("\0")
    found = {}
    for name in filter(None, tracked):
        path = REPO / name
        if not path.is_file() or path.is_symlink():
            continue
        suffix = path.suffix
        if suffix in COMMENT:
            found[name] = COMMENT[suffix]
        elif path.name in MAKEFILES:
            found[name] = "#"
        elif path.read_bytes().startswith(b"#!"):  # a script, wherever it lives
            found[name] = "#"
        if fixture(name) and not path.read_bytes().startswith(b"#!"):
            found.pop(name, None)
    return found


def test_every_source_file_has_an_spdx_line():
    missing = []
    for name, comment in sorted(sources().items()):
        lines = (REPO / name).read_text(errors="replace").splitlines()[:3]
        head = lines[1:] if lines and lines[0].startswith("#!") else lines
        if not any(line.startswith(f"{comment} {LINE}") or line == f"/* {LINE} */"
                   for line in head[:2]):
            missing.append(name)
    assert not missing, f"no '{LINE}' line at the top: {missing}"


def test_the_check_sees_every_kind():
    kinds = {name.rsplit(".", 1)[-1] if "." in name.rsplit("/", 1)[-1] else
             name.rsplit("/", 1)[-1] for name in sources()}
    assert {"c", "h", "cocci", "py", "sh", "toml", "Makefile", "Kbuild", "taintport",
            "install-deps"} <= kinds, kinds
