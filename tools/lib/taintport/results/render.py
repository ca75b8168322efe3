# SPDX-License-Identifier: GPL-2.0
"""The reports of a results folder, rendered from its matrix.json.

junit.xml, summary.md and index.html are written next to matrix.json; each
is a pure function of the matrix document (plus, for the page, the logs the
run left in the folder and the quilt patches it applied). The patches the
run applied are copied in too (<version>/patches/), where the KCIDB view's
URLs lead.
"""
import hashlib
from functools import partial
from pathlib import Path

from taintport.errors import InputError, OutputError
from taintport.results import compare, folder
from taintport.results.cells import Matrix
from taintport.results.reports import htmlpage, junit, kcidb, summary
from taintport.tree import series

Patches = dict[str, dict[str, str]]  # {version: {"group/name.patch": text}}
# the largest quilt patch the page shows (the layer's are a few KiB)
MAX_PATCH = 1 << 20


def read_patches(doc: Matrix, quilt_dir: Path = series.QUILT_DIR) -> Patches:
    """The quilt patches the cells applied, when the files still hold what the run used."""
    found: Patches = {}
    for cell in doc.cells:
        for name, digest in (cell.inputs.series if cell.inputs else {}).items():
            path = Path(quilt_dir) / cell.version / name
            try:
                data = folder.read_bytes(path, MAX_PATCH)
            except (OSError, InputError):
                continue  # not the file the run applied: the page shows none
            if hashlib.sha256(data).hexdigest() == digest:
                found.setdefault(cell.version, {})[name] = data.decode(errors="replace")
    return found


def write_patches(out_dir: Path, patches: Patches) -> None:
    """Each patch the run applied (as read_patches found it unchanged) at
    kcidb.patch_path in the folder; never through a link out of it."""
    for version, texts in patches.items():
        for name, text in texts.items():
            rel = kcidb.patch_path(version, name)
            below = Path(out_dir)
            for part in Path(rel).parent.parts:
                below = below / part
                folder.inside(Path(out_dir), str(below.relative_to(out_dir)),
                              f"{out_dir}: the copy of {name}")
                try:
                    below.mkdir(exist_ok=True)
                except OSError as err:
                    raise OutputError(f"{below}: cannot make the folder: "
                                      f"{err.strerror or err}") from None
            target = Path(out_dir) / rel
            if target.is_symlink():
                raise InputError(f"{target}: a link where the copy of {name} goes")
            folder.write_text(target, text)


def reports(out_dir: Path, doc: Matrix, patches: Patches | None = None) -> dict[str, str]:
    """{file name: text} of every report, made before any is written."""
    page_log = partial(folder.read_log, limit=folder.page_log_limit(len(doc.cells)))
    return {"junit.xml": junit.render(doc), "summary.md": summary.render(doc),
            "index.html": htmlpage.render(doc, out_dir, page_log, patches)}


def made(out_dir: Path, doc: Matrix, patches: Patches | None = None,
         with_document: bool = False, artifacts_url: str | None = None) -> dict[str, str]:
    """{file name: text} of every report (and matrix.json, with_document, its
    KCIDB view's URLs leading to artifacts_url), each checked to be no larger
    than the reader takes (folder.fits). A report that cannot be made (a log
    that is not a regular file) or is too large raises before any is written."""
    texts = reports(out_dir, doc, patches)
    if with_document:
        texts = {"matrix.json": folder.document(out_dir, doc, artifacts_url), **texts}
    for name, text in texts.items():
        folder.fits(Path(out_dir) / name, text)
    return texts


def written(out_dir: Path, texts: dict[str, str], patches: Patches | None) -> list[Path]:
    """The patches' copies and each text made written next to matrix.json; the reports' paths."""
    write_patches(Path(out_dir), patches or {})
    for name, text in texts.items():
        folder.write_text(Path(out_dir) / name, text)
    return [Path(out_dir) / name for name in texts if name != "matrix.json"]


def publish(out_dir: Path, doc: Matrix, patches: Patches | None = None,
            with_document: bool = False, artifacts_url: str | None = None) -> list[Path]:
    """Every report made, then written, in a folder this process holds (a run, a merge)."""
    return written(out_dir, made(out_dir, doc, patches, with_document, artifacts_url), patches)


def republish(out_dir: Path, doc: Matrix, patches: Patches | None = None,
              artifacts_url: str | None = None) -> list[Path]:
    """`report DIR`: matrix.json and every report made, then written while the
    folder is held (a run writing it is refused; the temp files a killed
    report left are removed: folder.writing)."""
    texts = made(out_dir, doc, patches, True, artifacts_url)
    with folder.writing(out_dir, resume=True):
        return written(out_dir, texts, patches)


def merge(sources: list[Path], out: Path, quilt_dir: Path = series.QUILT_DIR,
          artifacts_url: str | None = None) -> tuple[Matrix, list[Path]]:
    """One results folder from runs that each did some kernels: every source
    read and checked before out is touched; out is new or empty and none of
    the sources, and gets the whole merge at once or nothing
    (folder.replacing). Returns the merged document and its reports' paths in out."""
    for source in sources:
        theirs, mine = Path(source).resolve(), Path(out).resolve()
        if mine.is_relative_to(theirs) or theirs.is_relative_to(mine):
            raise InputError(f"--out {out}: {source} is merged from it: the merged "
                             "results go to a new or empty folder of their own")
    doc = compare.merge(sources)
    # file:// URLs of out, not of the folder the merge is made in
    base = kcidb.artifacts(out, artifacts_url).base
    with folder.replacing(out) as scratch:
        folder.copy_logs(sources, scratch)
        written = publish(scratch, doc, read_patches(doc, quilt_dir), with_document=True,
                          artifacts_url=base)
    return doc, [Path(out) / path.name for path in written]
