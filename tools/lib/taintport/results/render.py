"""The reports of a results folder, rendered from its matrix.json.

junit.xml, summary.md and index.html are written next to matrix.json; each
is a pure function of the matrix document (plus, for the page, the logs the
run left in the folder and the quilt patches it applied).
"""
import hashlib
from pathlib import Path

from taintport.cache import write_atomic
from taintport.results import reader
from taintport.results.cells import Matrix
from taintport.results.reports import htmlpage, junit, summary
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


def render_all(out_dir: Path, doc: Matrix, patches: Patches | None = None) -> list[Path]:
    """Write every report next to matrix.json; returns their paths."""
    reports = {"junit.xml": junit.render(doc), "summary.md": summary.render(doc),
               "index.html": htmlpage.render(doc, out_dir, patches)}
    for name, text in reports.items():
        write_atomic(Path(out_dir) / name, text)
    return [Path(out_dir) / name for name in reports]
