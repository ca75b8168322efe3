"""The reports people already read, each rendered from the matrix document."""
