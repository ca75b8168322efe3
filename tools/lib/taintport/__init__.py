# SPDX-License-Identifier: GPL-2.0
"""taintport: one folder per stage of the pipeline, each importing only those before it.

leaves    errors, digest, atomic,    what every stage uses: errors, checksums,
          names, process, family,    the one safe writer, validated names,
          guest, journal, cache      child processes, the fix family's metadata,
                                     the guest's data (test-matrix/fixes/),
                                     a folder's journal, the cache folders
tree/     versions, archive/, fetch, the pinned upload, the Debian archive (private
          untar, disk, variants,     apt, indexes, downloads, repin), the fetched
          series, quilt              source, the variant table and its variants (quilt)
layer/    engine, fixes, strategies, the family of fixes (read from their folders)
          spatch, carry, dep3, ...   carried onto a tree, judged by the semantic patches
kernel/   kconfig, build, binary,    the kernel built (or Debian's binary), its
          initramfs, boot            modules, dracut image and QEMU boot
judge/    ktap, verdict, selftests   what the guest printed, against the expectations
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
