# SPDX-License-Identifier: GPL-2.0
"""Modules built out of tree keep their folder: a rebuild compiles what changed.

make is stood in by a script with make's rule for these folders (an object
older than its source, or missing, is compiled again; every module is linked
again) and a log of what it compiled; Kbuild's own dependencies (headers,
the configuration) are what the e2e run's real builds exercise."""
import os

import pytest

from taintport.errors import RunError
from taintport.kernel import build

MAKE = """#!/bin/sh
for a; do case $a in M=*) m=${a#M=};; esac; done
for c in "$m"/*.c; do
    o=${c%.c}.o
    if [ ! -e "$o" ] || [ "$c" -nt "$o" ]; then
        grep -q FAIL "$c" && continue
        cp "$c" "$o"; echo "CC $(basename "$c")" >> "$MAKE_LOG"
    fi
    cp "$o" "${c%.c}.ko"
done
"""


@pytest.fixture
def make(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "make").write_text(MAKE)
    (bin_dir / "make").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    compiled = tmp_path / "compiled.log"
    monkeypatch.setenv("MAKE_LOG", str(compiled))

    def run(source, work, keep_going=False):
        compiled.write_text("")
        built = build.out_of_tree(["make"], dict(os.environ), source, work,
                                  tmp_path / "build.log", keep_going=keep_going)
        return [ko.name for ko in built], compiled.read_text().split("\n")[:-1]
    return run


def sources(folder, **files):
    folder.mkdir(exist_ok=True)
    for name, text in files.items():
        (folder / name).write_text(text)
    return folder


def test_a_rebuild_of_the_same_sources_compiles_nothing_and_links_every_module(
        tmp_path, make):
    source = sources(tmp_path / "src", **{"a.c": "a\n", "b.c": "b\n"})
    work = build.external_work(tmp_path / "build" / "linux-source-6.12", "module-build")
    assert make(source, work) == (["a.ko", "b.ko"], ["CC a.c", "CC b.c"])
    assert make(source, work) == (["a.ko", "b.ko"], [])


def test_a_source_that_changed_is_compiled_again(tmp_path, make):
    source = sources(tmp_path / "src", **{"a.c": "a\n", "b.c": "b\n"})
    work = tmp_path / "work"
    make(source, work)
    old = os.stat(work / "a.o").st_mtime - 60
    (source / "b.c").write_text("b, edited\n")
    os.utime(source / "b.c", (old, old))  # an older time than its object: bytes decide
    assert make(source, work) == (["a.ko", "b.ko"], ["CC b.c"])
    assert (work / "b.ko").read_text() == "b, edited\n"


def test_a_module_this_make_did_not_build_is_not_returned_from_an_earlier_one(
        tmp_path, make):
    """make -k against a distribution's headers: a module that fails now is
    named as unbuilt, not taken from the build before."""
    source = sources(tmp_path / "src", **{"a.c": "a\n", "b.c": "b\n"})
    work = tmp_path / "work"
    make(source, work)
    (source / "b.c").write_text("FAIL\n")
    assert make(source, work, keep_going=True) == (["a.ko"], [])


def test_a_planted_link_in_the_folder_is_refused_not_written_through(tmp_path, make):
    source = sources(tmp_path / "src", **{"a.c": "a\n"})
    work = tmp_path / "work"
    work.mkdir()
    outside = tmp_path / "outside.c"
    outside.write_text("kept\n")
    (work / "a.c").symlink_to(outside)
    with pytest.raises(RunError, match="not a plain file"):
        make(source, work)
    assert outside.read_text() == "kept\n"


def test_an_interrupted_make_in_the_folder_drops_what_it_wrote_since(tmp_path, make):
    """A make killed mid-way can leave a half-written .cmd (fixdep writes it in
    place): the next build drops the ones written since the interrupted start."""
    source = sources(tmp_path / "src", **{"a.c": "a\n"})
    work = tmp_path / "work"
    make(source, work)
    (work / ".taintport-building").write_text("1\n")  # a make that never finished
    (work / ".a.o.cmd").write_text("savedcmd_a.o := $(half")
    make(source, work)
    assert not (work / ".a.o.cmd").exists()
    assert not (work / ".taintport-building").exists()
