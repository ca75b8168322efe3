"""The judge: KTAP from the guest, read against test-matrix/expectations.toml."""
