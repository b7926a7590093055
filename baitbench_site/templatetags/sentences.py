"""`sentence_start`: a message's first letter in capitals, as Django's admin writes its
messages (`capfirst`), unless the message opens with a name written as it must stay: a
release code (`htry.1`), a slug, a model id. `capfirst` made "htry.1: 3 generations pending
again" read "Htry.1: …", a release that does not exist."""

from __future__ import annotations

import re

from django import template
from django.template.defaultfilters import capfirst

register = template.Library()

# An ordinary word: letters only, up to a space, a comma or the end ("release with ID …").
_WORD = re.compile(r"[^\W\d_]+(?=[\s,]|$)")


@register.filter(is_safe=True)
def sentence_start(value):
    text = str(value)  # a message's safe HTML stays safe, other text is escaped
    return capfirst(text) if _WORD.match(text) else text
