"""A cache backend the settings name (`CACHES["workers"]`)."""

from __future__ import annotations

import os

from django.core.cache.backends.base import BaseCache
from django.core.cache.backends.filebased import FileBasedCache


class LazyDirectoryFileCache(FileBasedCache):
    """Django's file cache, whose directory is made at the first write rather than when the
    cache is built: every command's system checks build it, and a command that needs no
    database must not create the folder of a database that does not exist yet."""

    def __init__(self, dir: str, params: dict) -> None:
        BaseCache.__init__(self, params)
        self._dir = os.path.abspath(dir)
