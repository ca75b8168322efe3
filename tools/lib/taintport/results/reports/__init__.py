# SPDX-License-Identifier: GPL-2.0
"""The reports people already read, each rendered from the matrix document."""
