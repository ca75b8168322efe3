# SPDX-License-Identifier: GPL-2.0
"""The judge: KTAP from the guest, read against the fixes' guest data (test-matrix/fixes/, guest.toml)."""
