# SPDX-License-Identifier: GPL-2.0
"""Results: the cell and its folder, written and read back, and the reports."""
