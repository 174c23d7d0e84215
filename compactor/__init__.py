"""compactor package."""
