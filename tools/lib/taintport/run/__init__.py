"""The run: cells keyed and stored, their stage chain, the workers, progress."""
