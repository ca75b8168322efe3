# SPDX-License-Identifier: GPL-2.0
"""The tree: version descriptors, the pinned source fetched, variants as quilt prefixes."""
