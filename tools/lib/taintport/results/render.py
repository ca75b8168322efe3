"""The reports of a results folder, rendered from its matrix.json.

junit.xml, summary.md and index.html are written next to matrix.json; each
is a pure function of the matrix document (plus, for the page, the logs the
run left in the folder and the quilt patches it applied). The patches the
run applied are copied in too (<version>/patches/), where the KCIDB view's
URLs lead.
"""
import hashlib
from pathlib import Path

from taintport.cache import write_atomic
from taintport.errors import InputError
from taintport.results import reader
from taintport.results.cells import Matrix
from taintport.results.reports import htmlpage, junit, kcidb, summary
from taintport.tree import series

Patches = dict[str, dict[str, str]]  # {version: {"group/name.patch": text}}


def load(results_dir: Path | str) -> Matrix:
    """matrix.json of a results folder, checked field by field (reader.load_matrix)."""
    return reader.load_matrix(results_dir)


def read_patches(doc: Matrix, quilt_dir: Path = series.QUILT_DIR) -> Patches:
    """The quilt patches the cells applied, when the files still hold what the run used."""
    found: Patches = {}
    for cell in doc.cells:
        for name, digest in (cell.inputs.series if cell.inputs else {}).items():
            path = Path(quilt_dir) / cell.version / name
            try:
                data = path.read_bytes()
            except OSError:
                continue
            if hashlib.sha256(data).hexdigest() == digest:
                found.setdefault(cell.version, {})[name] = data.decode(errors="replace")
    return found


def write_patches(out_dir: Path, patches: Patches) -> None:
    """Each patch the run applied (as read_patches found it unchanged) at
    kcidb.patch_path in the folder; never through a link out of it."""
    for version, texts in patches.items():
        for name, text in texts.items():
            rel = kcidb.patch_path(version, name)
            folder = Path(out_dir)
            for part in Path(rel).parent.parts:
                folder = folder / part
                reader.inside(Path(out_dir), str(folder.relative_to(out_dir)),
                              f"{out_dir}: the copy of {name}")
                folder.mkdir(exist_ok=True)
            target = Path(out_dir) / rel
            if target.is_symlink():
                raise InputError(f"{target}: a link where the copy of {name} goes")
            write_atomic(target, text)


def render_all(out_dir: Path, doc: Matrix, patches: Patches | None = None) -> list[Path]:
    """Write every report next to matrix.json (and the patches' copies); returns
    the reports' paths."""
    reports = {"junit.xml": junit.render(doc), "summary.md": summary.render(doc),
               "index.html": htmlpage.render(doc, out_dir, patches)}
    write_patches(Path(out_dir), patches or {})
    for name, text in reports.items():
        write_atomic(Path(out_dir) / name, text)
    return [Path(out_dir) / name for name in reports]
