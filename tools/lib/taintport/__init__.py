"""taintport: one folder per stage of the pipeline, each importing only those before it.

tree/     versions, fetch, series    the pinned source and its variants (quilt)
layer/    engine, fixes/, ...        the family of fixes carried onto a tree
kernel/   kconfig, build, binary,    the kernel built (or Debian's binary), its
          initramfs, boot            modules, dracut image and QEMU boot
judge/    ktap, verdict              what the guest printed, against the expectations
results/  cells, reader, report,     the cell and its folder; reports/ renders them
          reports/
run/      stages, matrix, ...        the cells' chain, workers and progress
cli.py, ci.py                        the command line and the CI pipelines
"""
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
