"""Results: the cell and its folder, written and read back, and the reports."""
