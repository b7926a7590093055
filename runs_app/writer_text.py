"""A writer's text is only the text (DESIGN section 5). No ORM here.

What a writer's reply may carry besides its text, and what becomes of it:

- A think block at the start (`<think>…</think>`), or gpt-oss's analysis channel leaked
  before its final one ("analysis…assistantfinal text", or with the harmony tokens), is the
  writer's private reasoning: it is stored apart (with `message.reasoning`) and never
  scored. So is everything before a closing tag that no opening tag precedes
  (`reasoning…</think>\n\ntext`): DeepSeek-R1 and its distills, and providers whose chat
  template opens the block in the prompt, send the reasoning so. A reply that is nothing
  but an unfinished think block (or analysis channel) has no text.
- A chat wrapper: an opening line addressed to the requester ("Sure! Here's a press
  release…:") in a paragraph of its own, or a closing one ("Let me know if you'd like…",
  "Hopelijk is dit wat je zocht"), is taken off, and what was taken off is stored. An offer
  that a press release also makes its readers ("If you would like more information…",
  "Mocht je vragen hebben…") closes a reply only where it speaks as the assistant or of
  reworking the text ("Als je wilt, kan ik ook een kortere versie maken"). Where the
  wrapper is not a paragraph of its own (it runs into the text) the text cannot be cut out
  without guessing: the reply does not count, with that reason.
- A text in another language than the release's does not count (`lingua`, a language
  identifier that ships its models, so it works offline). Identifying costs about 0.6 ms per
  hundred words, so a text that is unmistakably in the release's language (a sixth of its
  words are that language's own function words, which the other candidate languages do not
  use) is taken without asking it; anything else, a mixed text included, is identified. A
  short text (under 25 words: a spokesperson's answer of a sentence or two) is taken with
  one such word, and otherwise rejected only when the identifier is surer still; a text of
  a few words ("No comment.") is never checked.

A cross-examination answer (`spoken=True`) is read the same way, with one difference: it is
speech in role, and a spokesperson may begin "Absolutely." or "Here's what we know: …" and end
"I hope that answers your question." So in an answer only a short paragraph of its own that
introduces the answer ("Sure! Here's my answer:"), or closes it as a wrapper does, is taken
off; a bare interjection, and wrapper-like words that run into the answer, are the
spokesperson's and stay: rejecting them would throw away valid answers and pay for them again.
"""

from __future__ import annotations

import dataclasses
import functools
import re

from lingua import Language, LanguageDetectorBuilder

from runs_app.reply_reader import (
    CLOSING_THINK,
    OPENING_THINK,
    THINK_ANYWHERE,
    UNCLOSED_THINK,
    split_think,
)

# Opening words of an assistant talking to its requester, in the release languages. They must
# start the paragraph: a press release does not begin "Sure!". An interjection counts only with
# its punctuation ("Great!"), so a headline such as "Great Lakes Water ..." is not one.
INTERJECTION = (r"(sure thing|sure|certainly|of course|absolutely|okay|ok|great|happy to help|"
                r"here you go|natuurlijk|zeker|uiteraard|graag)\s*[!,.:\u2013\u2014]")
INTRODUCTION = (r"(here is|here's|below is|below you will find|i've written|i have written|"
                r"i've drafted|hier is|hieronder)\b|ik heb\b.{0,60}\b(geschreven|opgesteld)\b")
OPENERS = re.compile(rf"^\s*({INTERJECTION}|{INTRODUCTION})", re.IGNORECASE)
# In a spoken answer: an opening that, after any interjections, introduces what follows.
SPOKEN_OPENERS = re.compile(rf"^\s*({INTERJECTION}\s*)*({INTRODUCTION})", re.IGNORECASE)
# Closing words of an assistant talking to its requester, about itself or its reply. They must
# start the paragraph: a press release does not end "Let me know…" or "Hopelijk helpt dit".
CLOSERS = re.compile(
    r"^\s*(let me know|i hope|hope this|feel free|shall i|please let me know|i can also|"
    r"happy to adjust|laat (het )?me (even |gerust )?weten|laat het (even |gerust )?weten|"
    r"ik hoop|zal ik|ik kan ook|hopelijk (helpt|is|voldoet|past|bevalt) (dit|deze))\b",
    re.IGNORECASE)
# An offer to whoever reads ("If you would like more information, please contact…", "Mocht je
# vragen hebben…", "Wil je meer weten?") is also how a press release or a spokesperson speaks
# to customers and journalists: it closes as a wrapper only where it also speaks as the
# assistant (I, me) or of reworking the text ("If you need any adjustments…").
OFFERS = re.compile(
    r"^\s*(if you('d| would)? like|if you need|if you want|would you like|do you want|"
    r"is there anything|wil je|mocht je|als je (dat |het )?wilt)\b", re.IGNORECASE)
ASSISTANT = re.compile(
    r"\b(i|i'd|i'll|i'm|me|my|ik|mij|mijn|adjust\w*|tweaks?|revis\w*|rewrit\w*|edits?|"
    r"editing|changes|modif\w*|version|tone|draft|shorter|longer|aanpass\w*|wijziging\w*|"
    r"versie|toon|korter|langer|herschrij\w*)\b", re.IGNORECASE)
# How an assistant declines a task, in the release languages: "I can't help with that.", "I'm
# sorry, but I cannot write this", "Unfortunately I am unable to assist", "Het spijt me, maar
# ik kan je hier niet mee helpen". It must start the field and name the task (help, write,
# assist, this request…) and speak as "I", so a headline quoting someone ("I can't breathe,
# says resident", "We cannot help every family, says the board") is not one, nor is a quote
# (a field opening with a quotation mark, or naming who speaks: QUOTED_SPEAKER) or an idiom
# ("I can't help but wonder…", "I can't do this anymore"). Read where a
# field holds words the chain uses (a journalist's story, an interviewer's question): a
# refusal there is no story and no question.
_TASK_VERBS = (r"(helpen|schrijven|maken|voldoen|meewerken|opstellen|uitvoeren|verzoek)")
REFUSES = re.compile(
    r"^[^\w'\"\u201c\u201d\u201e\u00ab\u00bb]*((i'?m |i am )?(sorry|apologies)\W+(but\s+)?|"
    r"unfortunately,?\s+|as an ai( language model| assistant)?,?\s+)?"
    r"i('m|\s+am)?\s+(can'?t|cannot|can not|won'?t|will not|unable to|"
    r"not able to|must decline to|do not feel comfortable)\b.{0,80}?"
    r"\b(help(?!\s+(but|it|myself|\w+ing)\b)|assist|comply|fulfil+|with (that|this)|"
    r"(this|that|the|your) request|"
    r"(write|create|produce|draft|provide|generate|do)\s+(that|this|it|such|your|content|"
    r"material|one|a story|an article|a news|the story|the article|a headline|a question)\b"
    r"(?!\s+(anymore|any more|alone|again|without|off)\b))"
    rf"|^[^\w'\"\u201c\u201d\u201e\u00ab\u00bb]*((sorry|het spijt me)\W+(maar\s+)?|helaas\W+)?"
    rf"(ik\s+(kan|wil|mag)|((helaas|dat|dit|daar|hier)\s+)?(kan|wil|mag)\s+ik)\b.{{0,60}}?"
    rf"\b(niet|geen)\b.{{0,60}}?\b{_TASK_VERBS}\b",
    re.IGNORECASE | re.DOTALL)
# Someone quoted in a headline or question ("I can't help my children, says mother", "Ik kan
# niet helpen, zegt de buurman"): words the story reports, not the assistant's own.
QUOTED_SPEAKER = re.compile(
    r"(?:[,:;\u2013\u2014]|\s-)\s*(?!(as|because|since|it|this|that|which|the (text|release|"
    r"brief|prompt|request))\b)"
    r"([\w'.-]+\s+){0,6}?(says|said|admits|admitted|tells|told|warns|"
    r"writes|zegt|zei|aldus|vertelt|vertelde|schrijft|geeft toe)\b", re.IGNORECASE)
# A note to the requester after the text ("Note: I have left out the confidential provision, as
# instructed."): it speaks as the assistant (I, ik) or of the request. "Notes to editors" and a
# note that is the organisation's own stay: "Note: the helpline opens at 8am", one that quotes
# someone ('Note: the CEO said: "I am deeply sorry."'), names its press officer ("contact me,
# Jane Smith"), or speaks of a customer's request ("your request for a refund").
NOTE = re.compile(r"^\s*[(\[]?\s*(note|nb|n\.b\.|opmerking|let op)\s*:", re.IGNORECASE)
ABOUT_THE_REQUEST = re.compile(
    r"\b(i|i've|i'd|i'm|ik)\b|\b(your|the) (request|instructions?|brief)\b(?!\s+(for|to)\b)|"
    r"\bas (instructed|requested|asked)\b|\b(je|uw|jouw) (verzoek|instructies?)\b"
    r"(?!\s+(om|voor|tot)\b)|\bzoals (gevraagd|verzocht)\b", re.IGNORECASE)
# Words in double quotation marks are someone quoted, not the assistant.
QUOTATION = re.compile(r"\"[^\"]*\"|\u201c[^\u201d]*\u201d|\u201e[^\u201c\u201d]*[\u201c\u201d]")
# A reply that is the text in one code fence (as models answer in markdown): the fence goes.
# Its closing fence has as many backticks as its opening one (````markdown … ````).
FENCED = re.compile(r"^\s*(?P<ticks>`{3,})[ \t]*(?P<info>[A-Za-z0-9_-]*)[ \t]*\n"
                    r"(?P<text>.*?)\n?[ \t]*(?P=ticks)\s*$", re.DOTALL)
# A line that is only a fence, opening (with a language or not) or closing one: ``` in a line
# of words ("Type ```code``` here") is no fence.
FENCE_LINE = re.compile(r"^[ \t]*`{3,}[ \t]*(?P<info>[^`\s]*)[ \t]*$")
# An opener that runs into the text is long; a wrapper line is a sentence or two.
WRAPPER_MAX_CHARS = 300
RULE = re.compile(r"^\s*(-{3,}|\*{3,}|_{3,})\s*$")
# Below this many words a text is short: a single word of the release language's own
# (FUNCTION_WORDS) takes it, and the identifier must be surer of another language.
LANGUAGE_MIN_WORDS = 25
# Below this many ("No comment.", "Dat klopt.") the language is never checked: too few words
# to tell, and a spokesperson's few words are worth keeping.
SHORT_TEXT_MIN_WORDS = 6
# The release's language is rejected only when the identifier is this sure of another one.
LANGUAGE_CONFIDENCE = 0.9
SHORT_TEXT_CONFIDENCE = 0.95

LANGUAGES = {"en": Language.ENGLISH, "nl": Language.DUTCH}
# Frequent function words of each release language that are words of no other candidate
# language, the other release language included (so not "a", "in", "is", "de", "en", "die",
# "was", "will", "an", "we", "of", "te", "worden"): a text in German, French, Spanish, Italian,
# Portuguese or the other release language has almost none (at most 2 % seen), an ordinary
# text in the language a sixth to a quarter (the scenarios' control texts: 17-27 %).
FUNCTION_WORDS = {
    "en": frozenset("the and of to that for it with be by this are we our has have from at "
                    "not or which they their its been were who would all".split()),
    "nl": frozenset("het een van dat op voor met zijn niet aan wordt ons onze heeft hebben zal "
                    "door bij om ook naar nog deze hun werd".split()),
}
FUNCTION_WORD_SHARE = 0.15
WORD = re.compile(r"[^\W\d_]+")
OTHER_LANGUAGES = (Language.GERMAN, Language.FRENCH, Language.SPANISH, Language.ITALIAN,
                   Language.PORTUGUESE)


class NotAText(ValueError):
    """A reply that is not a text to score; the message names what it is, `kind` is the
    attempt's outcome (`GenerationAttempt.Outcome`: empty, wrapper, language)."""

    def __init__(self, message: str, kind: str = "empty") -> None:
        super().__init__(message)
        self.kind = kind


@dataclasses.dataclass(frozen=True)
class WriterText:
    text: str
    reasoning: str = ""  # a think block taken from the start of the reply
    # {"part": "opening"|"closing"|"fence", "text": ...}
    stripped: tuple[dict[str, str], ...] = ()


def writer_text(content: str, language: str, *, spoken: bool = False) -> WriterText:
    """The text of a writer's reply, or NotAText naming why it has none to score;
    `spoken`: a cross-examination answer (see the module docstring)."""
    reasoning, rest, thought = take_think(content)
    if UNCLOSED_THINK.match(rest):
        raise NotAText("the reply is an unfinished think block: no text after it")
    if not rest.strip():
        raise NotAText("returned empty content" + (" (only a think block)" if thought else ""))
    text, stripped = unwrap(rest, spoken=spoken)
    fenced = one_fence(text)
    if fenced:
        text = fenced["text"].strip()
        stripped += ({"part": "fence", "text": fenced["ticks"] + fenced["info"]},)
    check_language(text, language)
    return WriterText(text, reasoning, stripped)


def one_fence(text: str) -> re.Match[str] | None:
    """The match of FENCED when the reply is one code fence around a text: the fence lines
    inside it, if any, are blocks nested in it (`nested_fences`), not two blocks side by
    side that FENCED would read as one."""
    fenced = FENCED.match(text)
    if not fenced or not fenced["text"].strip():
        return None
    return fenced if nested_fences(fenced["text"]) else None


def nested_fences(text: str) -> bool:
    """Whether the fence lines of `text` pair up as blocks inside it: each opened, with a
    language or not, and closed by a bare fence line, around something. A block closed by a
    fence with a language, or holding nothing or a line to the requester ("Here is a shorter
    version:"), is the gap between two blocks side by side."""
    opened: int | None = None
    lines = text.split("\n")
    for number, line in enumerate(lines):
        fence = FENCE_LINE.match(line)
        if not fence:
            continue
        if opened is None:
            opened = number
            continue
        inside = "\n".join(lines[opened + 1:number]).strip()
        if fence["info"] or not inside or between_blocks(inside):
            return False
        opened = None
    return opened is None


# A single line that names what follows ("Version 2:", "**Or, shorter:**") or a rule: what
# stands between two blocks side by side, never a block nested in a text.
LABEL_LINE = re.compile(r"^[^\n]{0,80}:[\s*_]*$")


def between_blocks(inside: str) -> bool:
    """Whether what a pair of fence lines holds is the gap between two blocks side by side:
    a line to the requester ("Here is a shorter version:"), a label line, or a rule."""
    typed = as_typed(inside)
    return bool(OPENERS.match(typed) or LABEL_LINE.match(typed) or RULE.match(inside))


def take_think(content: str) -> tuple[str, str, bool]:
    """(reasoning, the rest, whether there was a think block): a leading think block, or
    everything before a closing tag that no opening tag precedes, set aside; so are blocks
    after the text's first words (a model that thinks again after writing), and a block
    opened on a line of its own after them that never closes (all from its tag on)."""
    reasoning, rest = split_think(content)
    thought = len(rest) != len(content)
    if not thought:
        closing = CLOSING_THINK.search(content)
        if closing and not OPENING_THINK.search(content, 0, closing.start()):
            reasoning, rest, thought = (content[:closing.start()].strip(),
                                        content[closing.end():], True)
    later: list[str] = []

    def set_aside(match: re.Match) -> str:
        later.append(match.group("reasoning").strip())
        return "\n\n"

    rest = THINK_ANYWHERE.sub(set_aside, rest)
    # Only a tag that starts a line opens such a block: a text may name the tag in passing.
    opening = next((found for found in OPENING_THINK.finditer(rest)
                    if rest[:found.start()].endswith("\n")), None)
    if opening and rest[:opening.start()].strip():
        later.append(rest[opening.end():].strip())
        rest = rest[:opening.start()]
    if later:
        reasoning, thought = "\n\n".join(part for part in (reasoning, *later) if part), True
    return reasoning, rest, thought


# How models type what the patterns above spell plainly: a typographic apostrophe
# ("Here’s"), and markdown emphasis around a line ("**Here's the press release:**").
# Left unmatched, the wrapper was scored as the text's first or last words.
TYPOGRAPHIC = str.maketrans({"\u2019": "'", "\u2018": "'"})
EMPHASIS = re.compile(r"^[\s*_]+")


def as_typed(paragraph: str) -> str:
    """`paragraph` as the wrapper patterns read it (see TYPOGRAPHIC)."""
    return EMPHASIS.sub("", paragraph.translate(TYPOGRAPHIC))


def _paragraphs(text: str) -> list[str]:
    return [part for part in re.split(r"\n\s*\n", text.strip()) if part.strip()]


def unwrap(text: str, *, spoken: bool = False) -> tuple[str, tuple[dict[str, str], ...]]:
    """The text without a chat wrapper's opening and closing paragraphs."""
    paragraphs = _paragraphs(text)
    stripped: list[dict[str, str]] = []
    openers = SPOKEN_OPENERS if spoken else OPENERS
    if paragraphs and openers.match(as_typed(paragraphs[0])):
        if len(paragraphs) > 1 and len(paragraphs[0]) <= WRAPPER_MAX_CHARS:
            stripped.append({"part": "opening", "text": paragraphs.pop(0)})
        elif not spoken:  # in a spoken answer, words that run on are the spokesperson's
            raise NotAText(f"a chat wrapper ({quoted(paragraphs[0])}) runs into the text",
                           "wrapper")
    while len(paragraphs) > 1 and closes(paragraphs[-1]):
        if len(paragraphs[-1]) > WRAPPER_MAX_CHARS:
            if spoken:
                break
            raise NotAText(f"a chat wrapper ({quoted(paragraphs[-1])}) runs into the text",
                           "wrapper")
        stripped.append({"part": "closing", "text": paragraphs.pop()})
    if stripped:
        # The rules a wrapper draws around the text go with it.
        while paragraphs and RULE.match(paragraphs[0]):
            paragraphs.pop(0)
        while paragraphs and RULE.match(paragraphs[-1]):
            paragraphs.pop()
        if not paragraphs:
            raise NotAText("the reply is only a chat wrapper, with no text", "wrapper")
        return "\n\n".join(paragraphs), tuple(stripped)
    # A closing line glued to the last paragraph ("… for more.\nLet me know if…"); in a spoken
    # answer such a line is the spokesperson's.
    lines = text.rstrip().splitlines()
    if not spoken and len(lines) > 1 and closes(lines[-1]):
        raise NotAText(f"a chat wrapper ({quoted(lines[-1])}) runs into the text", "wrapper")
    return text.strip(), ()


def declines(text: str) -> bool:
    """Whether `text` opens as an assistant declining its task (REFUSES)."""
    text = as_typed(text)
    return bool(REFUSES.match(text)) and not QUOTED_SPEAKER.search(text)


def closes(paragraph: str) -> bool:
    """Whether `paragraph` is how an assistant closes its reply to the requester (CLOSERS, or an
    OFFERS that speaks as the assistant), not the text's own last words."""
    paragraph = as_typed(paragraph)
    return bool(CLOSERS.match(paragraph)
                or OFFERS.match(paragraph) and ASSISTANT.search(paragraph)
                or NOTE.match(paragraph)
                and ABOUT_THE_REQUEST.search(QUOTATION.sub("", paragraph)))


def quoted(text: str, limit: int = 60) -> str:
    """`text` on one line in quotes, cut to `limit` characters: for an error message."""
    text = " ".join(text.split())
    return f"'{text if len(text) <= limit else text[:limit - 1] + '…'}'"


@functools.cache
def _detector():
    return LanguageDetectorBuilder.from_languages(
        *LANGUAGES.values(), *OTHER_LANGUAGES).build()


def check_language(text: str, language: str) -> None:
    """NotAText when the text is, with confidence, in another language than `language`. A
    short text (a spokesperson's answer of a sentence or two) is checked too, leniently: an
    English answer has no Dutch function word at all, a Dutch one nearly always has one."""
    words = len(text.split())
    if words < SHORT_TEXT_MIN_WORDS:
        return
    short = words < LANGUAGE_MIN_WORDS
    taken = own_words(text, language) > 0 if short else plainly_in(text, language)
    if taken:
        return
    expected = LANGUAGES[language]
    confidences = _detector().compute_language_confidence_values(text)
    top = confidences[0]
    if top.language != expected and top.value >= (
            SHORT_TEXT_CONFIDENCE if short else LANGUAGE_CONFIDENCE):
        raise NotAText(f"the text is in {top.language.name.title()}, not in "
                       f"{expected.name.title()} (the release's language)", "language")


def plainly_in(text: str, language: str) -> bool:
    """At least FUNCTION_WORD_SHARE of the text's words are `language`'s own function words."""
    words = WORD.findall(text)
    return bool(words) and own_words(text, language) >= FUNCTION_WORD_SHARE * len(words)


def own_words(text: str, language: str) -> int:
    """How many of the text's words are `language`'s own function words."""
    return sum(word in FUNCTION_WORDS[language] for word in WORD.findall(text.lower()))
