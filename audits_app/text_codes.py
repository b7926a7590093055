"""The name under which staff see a text where its writer must not show: a keyed code.

Generation ids cannot serve: a release's ids, if they ran in blocks per writer, would tell
which texts share a writer, and a text's id appears in links and titles. The code is a keyed
hash (the site's SECRET_KEY): nobody without the key can map codes to ids. Rotating the key
changes the codes; a worksheet downloaded before then no longer imports (its codes are
unknown, never matched to other texts).
"""

from __future__ import annotations

from django.utils.crypto import salted_hmac


def text_code(release_code: str, generation_id: int) -> str:
    """Stable for a text, and telling nothing about its writer."""
    digest = salted_hmac("baitbench.audit-text-code", f"{release_code}:{generation_id}",
                         algorithm="sha256").hexdigest()
    return "t" + digest[:12]
