# SPDX-License-Identifier: GPL-2.0
"""The kernel: configured and built (or Debian's binary), its initramfs, booted in QEMU."""
