"""The read-only public API under /api/v1/ (DESIGN section 8)."""
