"""The judge: KTAP from the guest, read against the fixes' guest data (test-matrix/fixes/, guest.toml)."""
