# SPDX-License-Identifier: GPL-2.0
"""The run: cells keyed and stored, their stage chain, the workers, progress."""
