"""taintport: one folder per stage of the pipeline, each importing only those before it.

leaves    errors, digest, debversion,  what every stage uses: errors, checksums,
          names, process, family,    Debian version order, validated names,
          journal, cache             child processes, the fix family's metadata,
                                     atomic file replacement, the cache folders
tree/     versions, variants, fetch, the pinned upload, the variant table, the
          series, quilt              fetched source and its variants (quilt)
layer/    engine, fixes/, spatch,    the family of fixes carried onto a tree, judged
          carry, dep3, ...           by the semantic patches alone
kernel/   kconfig, build, binary,    the kernel built (or Debian's binary), its
          initramfs, boot            modules, dracut image and QEMU boot
judge/    ktap, verdict              what the guest printed, against the expectations
results/  cells, schema, folder,     the cell, its JSON schema and its folder;
          report, reports/           reports/ renders them
run/      sources, stages, matrix,   the cells' chain, workers and progress
          ...
cli/, ci.py                          the command line (one module per verb group) and
                                     the CI pipelines
"""
from pathlib import Path

# the one place the version is written (CHANGELOG.md names each release)
__version__ = "0.1.0"

REPO = Path(__file__).resolve().parents[3]
