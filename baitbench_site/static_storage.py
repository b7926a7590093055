"""Production's static files storage: WhiteNoise's hashed, compressed copies, each file's URL
worked out once per process.

The manifest (each file's hashed name) is read when the storage is made and does not change
while the process runs, so neither does a file's URL; working it out (the manifest lookup,
splitting, quoting and joining the URL) cost every page a few tenths of a millisecond for its
three scripts. In DEBUG the URL is the unhashed name, worked out each time as before.
"""

from __future__ import annotations

from django.conf import settings
from whitenoise import storage as whitenoise_storage


class CompressedManifestStaticFilesStorage(whitenoise_storage.CompressedManifestStaticFilesStorage):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._urls: dict[str, str] = {}

    def url(self, name, force=False):
        if force or settings.DEBUG:
            return super().url(name, force)
        try:
            return self._urls[name]
        except KeyError:
            # A name the manifest lacks raises here and is not kept.
            url = self._urls[name] = super().url(name)
            return url

    def post_process(self, *args, **kwargs):
        # `collectstatic` makes the manifest anew: no URL worked out before it may stay.
        self._urls.clear()
        yield from super().post_process(*args, **kwargs)
        self._urls.clear()
