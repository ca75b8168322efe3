"""taintport: one module per pipeline stage.

versions -> fetch -> series (quilt variants, layer) -> kconfig -> build ->
initramfs -> boot -> ktap -> verdict -> report, driven by matrix and cli.
"""
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
