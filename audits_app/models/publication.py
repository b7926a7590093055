"""Publication of a release: the frozen snapshot (issue 5)."""
