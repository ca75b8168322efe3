"""The tree: version descriptors, the pinned source fetched, variants as quilt prefixes."""
