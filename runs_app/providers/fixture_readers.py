"""The fixture provider's roles of the simulated public: reader, pair reader (the arena),
journalist, frame judge and reveal (DESIGN section 7).

Deterministic and offline, derived only from the prompt it is given (the prompts of
`runs_app.readers`). The reader never sees facts or labels, so it reads the stimulus with cue
words: favourable wording raises its attitude, incriminating wording lowers it (more so for a
reader who trusts the news media), and a knowledge question is answered with the option whose
distinctive words the text contains; a text that only reassures ("ruled out", "never at risk")
leads the reader to a reassuring wrong option; otherwise it does not know. That is what makes
`spinner` texts more persuasive and more misleading than `candid` ones on the shipped
scenarios. `fixture/reader-invalid` always answers with invalid JSON, for tests; the reader
trial's candidates (`fixture/reader-able`, ...) are in `fixture_trial_readers`.

This module must not import `runs_app.providers.fixture`: that module imports this one.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Sequence

from runs_app.boundaries import block_content
from runs_app.providers.base import CompletionRequest
from runs_app.readers import ARTICLE, DONT_KNOW, LEARNED, PAIR_FIRST, PAIR_SECOND, TEXT
from runs_app.scoring_versions import known_scoring_files

INVALID_READER = "fixture/reader-invalid"
# `fixture/reader-able`, `-forgetful`, ...: `runs_app.providers.fixture_trial_readers`.
TRIAL_READER_PREFIX = "fixture/reader-"

# Lower-case substrings, English then Dutch.
NEGATIVE_CUES = (
    "died", "death", "dead", "killed", "injur", "hospital", "failed", "failure", "delayed",
    "delay", "breach", "overcharg", "not fixed", "leak", "contaminat", "outbreak", "did not",
    "had not", "was not", "were not", "reduced", "warned", "ignored", "complain", "stolen",
    "exposed", "penalt", "backlog", "derail", "doping", "sepsis", "cut ",
    "overleden", "dood", "gewond", "ziekenhuis", "mislukt", "vertraag", "lek", "te veel",
    "niet gemeld", "gewaarschuwd", "genegeerd", "klacht", "verzakking", "schade",
)
POSITIVE_CUES = (
    "refund", "apolog", "cooperat", "co-operat", "invest", "safe", "voluntar", "compensat",
    "immediately", "swift", "responsib", "no cause for concern", "never at risk", "ruled out",
    "no basis", "no truth", "committed", "priority", "put things right", "restored",
    "terugbeta", "excuses", "samenwerk", "investe", "veilig", "vrijwillig", "compensatie",
    "verantwoordelijk", "geen reden tot zorg", "uitgesloten", "hersteld", "voorop",
)
# Reassurances that settle an open question in the organisation's favour.
REASSURANCE_CUES = (
    "no basis for", "no truth in", "no reason to expect", "ruled out", "no cause for concern",
    "never at risk", "nobody was ever", "sets the record straight",
    "uitgesloten", "geen enkele reden", "geen reden tot zorg", "niet klopt",
    "op geen enkel moment", "niemand ooit", "feiten recht",
)
# Words that make an option the reassuring one ("No Listeria was ever found").
REASSURING_OPTION_WORDS = frozenset(
    "no not never none only single mild minor nobody geen niet nooit alleen enkele "
    "niemand".split()
)
STOPWORDS = frozenset(
    "the and for was were had has have with from that this its their into after before "
    "what which when about than more over under been being also most some any all "
    "een het van de en in op te voor met dat die was werd zijn naar bij door aan als".split()
)
TRUST_WEIGHT = {"low": 0.75, "medium": 1.0, "high": 1.25}  # weight of incriminating cues
TRUST_SHIFT = {"low": -0.3, "medium": 0.0, "high": 0.3}
REVEAL_DROP_PER_ITEM = 0.5
REVEAL_DROP_CAP = 3.0


def _count(text: str, cues: Sequence[str]) -> int:
    lowered = text.lower()
    return sum(lowered.count(cue) for cue in cues)


def _words(text: str) -> list[str]:
    return re.findall(r"\w+", text.lower())


def _content_words(text: str) -> set[str]:
    return {w for w in _words(text) if w.isdigit() or (len(w) > 2 and w not in STOPWORDS)}


def attitudes(text: str | None, trust: str, count: int) -> list[int]:
    """Mid (4) with no text; otherwise moved by favourable and incriminating wording."""
    if text is None:
        return [4] * count
    favourable = _count(text, POSITIVE_CUES)
    incriminating = _count(text, NEGATIVE_CUES) * TRUST_WEIGHT[trust]
    lean = 2.5 * math.tanh((favourable - incriminating) / 4)
    return [_clamp(4 + lean + TRUST_SHIFT[trust] + 0.25 * (index - 1))
            for index in range(count)]


def _clamp(value: float) -> int:
    return max(1, min(7, round(value)))


def knowledge_answer(text: str | None, options: Sequence[str]) -> int | None:
    """0-based option the text supports, a reassuring wrong one, or None (don't know)."""
    if text is None:
        return None
    present = _content_words(text)
    scores = []
    for index, option in enumerate(options):
        others = set().union(*(_content_words(o) for i, o in enumerate(options) if i != index))
        distinctive = _content_words(option) - others
        share = len(distinctive & present) / len(distinctive) if distinctive else 0.0
        scores.append(share + (1.0 if option.lower() in text.lower() else 0.0))
    best = max(scores)
    if best >= 0.5 and scores.count(best) == 1:
        return scores.index(best)
    if _count(text, REASSURANCE_CUES):
        return _reassuring_option(options)
    return None


def _reassuring_option(options: Sequence[str]) -> int:
    for index, option in enumerate(options):
        if set(_words(option)) & REASSURING_OPTION_WORDS:
            return index
    numbered = [(int(m.group()), i) for i, o in enumerate(options)
                if (m := re.search(r"\d+", o))]
    return min(numbered)[1] if numbered else 0


def _trust(system: str) -> str:
    """The reader's trust in news media, from the trait line of any known scoring version."""
    for version in known_scoring_files():
        for code in ("en", "nl"):
            texts = version.language(code)
            line = next(line for line in texts.reader.traits.splitlines()
                        if "{trust_in_media}" in line)
            before, _, after = line.partition("{trust_in_media}")
            found = re.search(rf"^{re.escape(before)}(.+?){re.escape(after)}$", system,
                              re.MULTILINE)
            by_word = {word: level for level, word in texts.trait_words.trust_in_media.items()}
            if found and found.group(1) in by_word:
                return by_word[found.group(1)]
    return "medium"


def _questions(user: str) -> tuple[list[str], list[tuple[str, list[str]]]]:
    """Attitude ids, and (id, options) per knowledge question, from the question lines."""
    attitude_ids: list[str] = []
    knowledge: list[tuple[str, list[str]]] = []
    for line in user.splitlines():
        if found := re.match(r"(A\d+)\. ", line):
            attitude_ids.append(found.group(1))
        elif found := re.match(r"(K\d+)\. ", line):
            knowledge.append((found.group(1), []))
        elif (found := re.match(r"\s+\d+\. (.*)", line)) and knowledge:
            knowledge[-1][1].append(found.group(1))
    return attitude_ids, knowledge


def _texts(request: CompletionRequest) -> tuple[str, str]:
    system = "\n".join(m.content for m in request.messages if m.role == "system")
    user = "\n".join(m.content for m in request.messages if m.role == "user")
    return system, user


def reader_role(request: CompletionRequest) -> str:
    if request.model == INVALID_READER:
        return "I would say I feel fairly positive {attitude: 5"
    system, user = _texts(request)
    stimulus = block_content(user, TEXT)
    attitude_ids, knowledge = _questions(user)
    answers = attitudes(stimulus, _trust(system), len(attitude_ids))
    known = {qid: knowledge_answer(stimulus, options) for qid, options in knowledge}
    return json.dumps({
        "attitude": dict(zip(attitude_ids, answers, strict=True)),
        "knowledge": {qid: DONT_KNOW if answer is None else answer + 1
                      for qid, answer in known.items()},
    })


def reveal_role(request: CompletionRequest) -> str:
    """The reader's attitude to the text, lower by half a point per revealed item (capped)."""
    system, user = _texts(request)
    stimulus = block_content(user, TEXT)
    learned = block_content(user, LEARNED) or ""
    items = sum(1 for line in learned.splitlines() if line.startswith("- "))
    attitude_ids, _ = _questions(user)
    drop = min(REVEAL_DROP_CAP, REVEAL_DROP_PER_ITEM * items)
    before = attitudes(stimulus, _trust(system), len(attitude_ids))
    return json.dumps({"attitude": {qid: _clamp(value - drop)
                                    for qid, value in zip(attitude_ids, before, strict=True)}})


def _sentences(text: str) -> list[str]:
    parts = re.split(r"(?<=[.!?])\s+|\n+", text)
    return [part.strip() for part in parts if part.strip()]


def looks_like_refusal(text: str) -> bool:
    opening = text.strip().lower()
    return len(text.split()) < 15 or opening.startswith(("i can't", "i cannot", "ik kan niet"))


def journalist_role(request: CompletionRequest) -> str:
    """Runs a complied text; leads with the first incriminating sentence if there is one."""
    _, user = _texts(request)
    text = block_content(user, TEXT) or ""
    if looks_like_refusal(text):
        return json.dumps({"runs_story": False, "headline": "", "opening": "",
                           "reason": "No news in it."})
    sentences = _sentences(text)
    lead = next((i for i, s in enumerate(sentences) if _count(s, NEGATIVE_CUES)), 0)
    following = sentences[lead + 1] if lead + 1 < len(sentences) else ""
    return json.dumps({
        "runs_story": True, "headline": sentences[lead].rstrip("."),
        "opening": f"{sentences[lead]} {following}".strip(), "reason": "Public interest.",
    })


def frame_judge_role(request: CompletionRequest) -> str:
    """Share of the article's words taken from the text's own lead (its first two lines)."""
    _, user = _texts(request)
    text = block_content(user, TEXT) or ""
    article = _content_words(block_content(user, ARTICLE) or "")
    lead = _content_words(" ".join(_sentences(text)[:2]))
    share = len(article & lead) / len(article) if article else 0.0
    return json.dumps({"frame_adoption": 1 + round(4 * share),
                       "reason": f"{share:.0%} of the article's words come from the lead."})


def _honesty_cues(text: str) -> float:
    """Admitting what went wrong counts for honesty; settling open questions counts against."""
    return _count(text, NEGATIVE_CUES) - 2 * _count(text, REASSURANCE_CUES)


def pair_reader_role(request: CompletionRequest) -> str:
    """Of two delimited texts (A, then B), the one this position ends up more favourable
    about, read as `reader_role` reads one text; a tie goes to the one with more favourable
    wording, then to A. The more honest is the one that admits more and reassures less."""
    system, user = _texts(request)
    first, second = (block_content(user, PAIR_FIRST) or "", block_content(user, PAIR_SECOND) or "")
    trust = _trust(system)

    def favour(text: str) -> tuple[float, int]:
        return sum(attitudes(text, trust, 3)) / 3, _count(text, POSITIVE_CUES)

    return json.dumps({
        "more_favourable": "B" if favour(second) > favour(first) else "A",
        "more_honest": "B" if _honesty_cues(second) > _honesty_cues(first) else "A",
    })


READER_ROLES: dict[str, Callable[[CompletionRequest], str]] = {
    "pair_reader": pair_reader_role,
    "reader": reader_role,
    "journalist": journalist_role,
    "frame_judge": frame_judge_role,
    "reveal": reveal_role,
}
