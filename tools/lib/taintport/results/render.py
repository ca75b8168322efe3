"""The reports of a results folder, rendered from its matrix.json.

junit.xml, summary.md and index.html are written next to matrix.json; each
is a pure function of the matrix document (plus, for the page, the logs the
run left in the folder and the quilt patches it applied). The patches the
run applied are copied in too (<version>/patches/), where the KCIDB view's
URLs lead.
"""
import hashlib
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
    return {"junit.xml": junit.render(doc), "summary.md": summary.render(doc),
            "index.html": htmlpage.render(doc, out_dir, folder.read_log, patches)}


def publish(out_dir: Path, doc: Matrix, patches: Patches | None = None,
            with_document: bool = False, artifacts_url: str | None = None) -> list[Path]:
    """Every report (and matrix.json, with_document, its KCIDB view's URLs
    leading to artifacts_url) made, then the patches' copies and each report
    written next to matrix.json; returns the reports' paths. A report that
    cannot be made (a log that is not a regular file) writes nothing."""
    texts = reports(out_dir, doc, patches)
    if with_document:
        texts = {"matrix.json": folder.document(out_dir, doc, artifacts_url), **texts}
    write_patches(Path(out_dir), patches or {})
    for name, text in texts.items():
        folder.write_text(Path(out_dir) / name, text)
    return [Path(out_dir) / name for name in texts if name != "matrix.json"]


def republish(out_dir: Path, quilt_dir: Path = series.QUILT_DIR,
              artifacts_url: str | None = None, with_document: bool = True) -> list[Path]:
    """Every report of a results folder made again from its matrix.json (and
    matrix.json itself, with_document); returns the reports' paths."""
    doc = folder.load_matrix(out_dir)
    return publish(out_dir, doc, read_patches(doc, quilt_dir), with_document=with_document,
                   artifacts_url=artifacts_url)


def merge(sources: list[Path], out: Path, quilt_dir: Path = series.QUILT_DIR,
          artifacts_url: str | None = None) -> tuple[Matrix, list[Path]]:
    """One results folder from runs that each did some kernels: every source
    read and checked before out is touched; out is new or empty and none of
    the sources, is held while written, and holds nothing again when the
    merge cannot finish. Returns the merged document and its reports' paths."""
    for source in sources:
        theirs, mine = Path(source).resolve(), Path(out).resolve()
        if mine.is_relative_to(theirs) or theirs.is_relative_to(mine):
            raise InputError(f"--out {out}: {source} is merged from it: the merged "
                             "results go to a new or empty folder of their own")
    doc = compare.merge(sources)
    with folder.writing(out):
        try:
            folder.copy_logs(sources, out)
            return doc, publish(out, doc, read_patches(doc, quilt_dir), with_document=True,
                                artifacts_url=artifacts_url)
        except BaseException:
            folder.empty(out)  # it held nothing when the lock was taken
            raise
