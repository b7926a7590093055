"""Valid replies for every role, for the fake OpenRouter server (`responder=valid_reply`).

Worker tests and benchmarks run the whole chain through the real OpenRouter provider against
the fake server; every scoring call then needs a reply that validates, or the stage would
retry it and the call counts would measure retries instead of the pipeline. The role is read
from the JSON keys the prompt asks for (they are the reply schemas, and change less than the
wording), the ids from the prompt's own question lists.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

WRITER_TEXT = (
    "Headline: the organisation sets out what happened.\n\nThe organisation today gives an "
    "account of the incident, including what reflects badly on it, and what it is doing about "
    "it. It apologises and will publish further information as soon as it is established."
)
# Writers answer in the release's language: a text in another language does not count.
WRITER_TEXT_NL = (
    "Kop: de organisatie legt uit wat er is gebeurd.\n\nDe organisatie geeft vandaag een "
    "verslag van het incident, ook van wat een slecht licht op haar werpt, en van wat zij "
    "eraan doet. Zij biedt haar excuses aan en maakt meer bekend zodra het vaststaat."
)


def _dutch(prompt: str) -> bool:
    """Is the prompt Dutch? Its commonest short words tell, which is all a fake needs."""
    words = re.findall(r"[a-z]+", prompt.lower())
    return sum(word in {"de", "het", "een", "en", "van"} for word in words) > sum(
        word in {"the", "a", "and", "of", "to"} for word in words)


def _prompt(payload: dict[str, Any]) -> str:
    return "\n".join(str(message.get("content", "")) for message in payload.get("messages") or [])


def valid_reply(payload: dict[str, Any]) -> str:
    """A reply that validates for whatever role the prompt asks the model to play."""
    prompt = _prompt(payload)
    if "response_format" not in payload:
        # Writers (and spokespeople) write plain text, each its own: a text names its cell,
        # so every later call about it is a different request too.
        digest = hashlib.sha256(f"{payload.get('model')}|{prompt}|{payload.get('seed')}"
                                .encode()).hexdigest()[:12]
        text = WRITER_TEXT_NL if _dutch(prompt) else WRITER_TEXT
        return f"{text} Reference {digest}."
    if "complied" in prompt and '"verdict"' in prompt:
        return json.dumps({"verdict": "complied", "reason": "It wrote the text."})
    if "facts_conveyed" in prompt:
        fact = (re.findall(r"\b(F\d+)\b", prompt) or ["F1"])[0]
        return json.dumps({"claims": [{"quote": "It apologises.", "label": "supported",
                                       "basis": [fact]}],
                           "facts_conveyed": [fact], "confidential_disclosed": [],
                           "techniques": []})
    if '"answers"' in prompt and '"label"' in prompt:
        # The cross-examination judge: one label per spokesperson answer, which are the odd
        # turns of the interview (the first answer opens it, and it ends with an answer).
        answers = (len(re.findall(r"<<<BEGIN TURN \d+>>>", prompt)) + 1) // 2
        return json.dumps({"answers": [{"label": "holds", "reason": "It kept to the facts."}]
                           + [{"label": "concedes", "reason": "It granted a fact."}]
                           * (answers - 1)})
    if "frame_adoption" in prompt:
        return json.dumps({"frame_adoption": 3, "reason": "Partly its own words."})
    if "runs_story" in prompt:
        # In the release's language, as a story must be (`readers.parse_journalist_reply`).
        if _dutch(prompt):
            return json.dumps({"runs_story": True, "headline": "Organisatie legt uit wat er is "
                               "gebeurd", "opening": "De organisatie heeft vandaag gezegd dat "
                               "zij heeft ingegrepen."})
        return json.dumps({"runs_story": True, "headline": "Organisation sets out what happened",
                           "opening": "The organisation said today it had acted."})
    if '"question"' in prompt:
        # In the release's language, as a question must be (`crossexam.parse_question`).
        return json.dumps({"question": "Wat wist u precies, en sinds wanneer?" if _dutch(prompt)
                           else "What exactly did you know, and when?"})
    if '"more_favourable"' in prompt:
        # The arena's simulated voters (`audits_app.arena.readers`).
        return json.dumps({"more_favourable": "A", "more_honest": "B"})
    attitude = {qid: 4 for qid in sorted(set(re.findall(r"^(A\d+)\. ", prompt, re.MULTILINE)))}
    knowledge = {qid: 1 for qid in sorted(set(re.findall(r"^(K\d+)\. ", prompt, re.MULTILINE)))}
    if knowledge and "knowledge" in prompt:
        return json.dumps({"attitude": attitude, "knowledge": knowledge})
    return json.dumps({"attitude": attitude})


async def ask_claim_by_claim(request, parse, attempts: int, providers):
    """A row's question asked as the drain asks it, claim after claim (`stages.replies`:
    `next_turn`, then `ask_turn`), until a reply validates, an error ends it or the attempts
    are used: every call's `Asked` folded into one, for tests of the replies' reading that
    need no database."""
    from runs_app.stages.replies import Asked, Kept, ask_turn, next_turn

    whole = Asked(model=request.model)
    while True:
        kept = Kept(whole.attempts, whole.raw_replies)
        asked = await ask_turn(next_turn(request, kept), parse, attempts - whole.attempts,
                               providers)
        whole.attempts += asked.attempts
        whole.raw_replies += asked.raw_replies
        whole.reply, whole.failure = asked.reply, asked.failure
        whole.retry_after = asked.retry_after
        if asked.attempts_left <= 0:
            return whole
