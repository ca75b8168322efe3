# SPDX-License-Identifier: GPL-2.0
"""The layer: the family of fixes in SmPL, carried onto a tree, and the patches it gives."""
