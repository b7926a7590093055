"""Writing a file whole or not at all."""

from __future__ import annotations

import os
from pathlib import Path


def write_whole(path: Path, data: bytes) -> None:
    """Write `data` beside `path` and rename it into place: a write that fails half way (a full
    disk) leaves no partial file under the name, and a file already there stays as it was.
    The OSError is raised on, with nothing left beside it."""
    partial = path.with_name(f".{path.name}.partial")
    try:
        partial.write_bytes(data)
        os.replace(partial, path)
    except OSError:
        partial.unlink(missing_ok=True)
        raise
