"""The one reply reader every structured stage uses (DESIGN section 5). No ORM here.

Models wrap JSON in many ways: a code fence with prose around it, prose before a bare object,
a think block first, the same object twice, the format echoed before the answer. The reader
takes exactly one answer from a reply, leniently, and validates it strictly:

- Reasoning is set aside: a leading think block (`<think>…</think>`, `<thinking>`,
  `<reasoning>`), gpt-oss's analysis channel leaked before its final one ("analysis…
  assistantfinal{…}"), and everything before a closing tag whose block opened in the prompt
  (DeepSeek-R1's "…</think>answer"). It is the model's private reasoning, drafts included,
  not its answer. A closing tag inside a JSON object (`"reason": "it says </think>"`) is
  the object's words, not the end of a reasoning.
- The candidates are the JSON objects of the answer: those in fenced blocks (```json … ```
  or ``` … ```) and the bare ones outside them; an object inside another is part of it.
  The one candidate that validates is the answer, fenced or not (an echoed template that
  does not validate does not count). Two candidates that validate to different answers are
  invalid, a fenced one beside a bare one too: which one the model meant cannot be known
  (a fence once won, and an echoed template in a fence that validates, as the juror's
  example verdict does, was scored instead of the verdict after it). The same object
  repeated is one answer.
- Two slips that leave an object saying one thing are read past: a comma before a closing
  bracket (`{"verdict": "complied",}`) and a `//` or `/* */` comment outside strings.
- One object that says two things is as ambiguous: a key repeated in an object
  (`"verdict": "refused", …, "verdict": "complied"`) makes the reply invalid, never "the
  last one wins". So does an object that starts and never closes (a reply cut off without a
  length stop): nothing inside it is an answer.
- Only when the answer is empty is the reasoning read (`as_reasoning` for a provider's
  separate reasoning field): then every object in it must validate to one and the same
  answer; a reasoning that holds a draft and a different final answer is invalid.
- Integers are integers: a boolean is never an integer (`"A1": true` is not attitude 1), and
  4.5 is not one either; a number written as a string ("4") still is. A null stands for ""
  or [] only in a field that does not need a value (`NullAsEmptyText`, `NullAsEmptyList`).
- Every failure raises `InvalidReply` with a reason that names what was wrong, and the reason
  is quoted back to the model in the repair turn. Any exception while reading a reply
  (a `RecursionError` from 3,000 nested brackets included) is an invalid reply, never a crash.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from typing import Annotated, Any, TypeVar

from pydantic import AfterValidator, BaseModel, BeforeValidator, ValidationError

# A reply longer than this is not one of the small JSON objects any stage asks for.
MAX_REPLY_CHARS = 200_000

# The tags models put their reasoning between, as they spell them: <think> (<thinking>,
# <reasoning>, <seed:think>, with or without attributes), [THINK] (Magistral), ◁think▷ (Kimi).
_OPEN = r"(?:<(?:think|thinking|reasoning|seed:think)(?:\s[^>]*)?>|\[think\]|◁think▷)"
_CLOSE = r"(?:</(?:think|thinking|reasoning|seed:think)>|\[/think\]|◁/think▷)"
THINK_BLOCK = re.compile(rf"^\s*{_OPEN}(?P<reasoning>.*?){_CLOSE}", re.DOTALL | re.IGNORECASE)
THINK_ANYWHERE = re.compile(rf"{_OPEN}(?P<reasoning>.*?){_CLOSE}", re.DOTALL | re.IGNORECASE)
UNCLOSED_THINK = re.compile(rf"^\s*{_OPEN}", re.IGNORECASE)
# An opening tag anywhere: one before a closing tag makes that closing tag not an orphan.
OPENING_THINK = re.compile(_OPEN, re.IGNORECASE)
CLOSING_THINK = re.compile(_CLOSE, re.IGNORECASE)
# gpt-oss's harmony format leaked into the content: the reasoning in the analysis channel,
# then the answer in the final one, with the format's tokens
# ("<|channel|>analysis<|message|>…<|end|><|start|>assistant<|channel|>final<|message|>…")
# or with them stripped ("analysisWe need to…assistantfinal…"); a final channel held to a
# response format says so ("<|channel|>final <|constrain|>json<|message|>"). Only these shapes:
# a text that begins "Analysis of the incident" is a text.
HARMONY_TOKENS = re.compile(
    r"^\s*(?:<\|start\|>assistant)?<\|channel\|>analysis<\|message\|>(?P<reasoning>.*?)"
    r"(?:(?:<\|end\|>)?(?:<\|start\|>assistant)?<\|channel\|>final"
    r"(?:[ \t]*<\|constrain\|>[\w.-]*)?<\|message\|>|$)",
    re.DOTALL)
HARMONY_BARE = re.compile(r"^\s*analysis(?P<reasoning>.*?)assistantfinal", re.DOTALL)
HARMONY_END = re.compile(r"(?:<\|return\|>|<\|end\|>)\s*$")
FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_-]*)[ \t]*\n?(.*?)```", re.DOTALL)

ReplyModel = TypeVar("ReplyModel", bound=BaseModel)


class InvalidReply(ValueError):
    """A reply that gives no single JSON object, or one that does not follow the schema."""


def _not_bool(value: Any) -> Any:
    if isinstance(value, bool):
        raise ValueError("a boolean is not a number")
    return value


# An integer that JSON's true/false never passes for (pydantic's lax mode would take them).
StrictInt = Annotated[int, BeforeValidator(_not_bool)]


def _empty_string_if_null(value: Any) -> Any:
    return "" if value is None else value


def _empty_list_if_null(value: Any) -> Any:
    return [] if value is None else value


# A field a model may leave null when it does not apply (a declined story's headline, a
# reason, a list of faults found that holds none): null is read as "" or []. Never for a
# field a score needs a value in: there null stays invalid.
NullAsEmptyText = Annotated[str, BeforeValidator(_empty_string_if_null)]
NullAsEmptyList = Annotated[list[str], BeforeValidator(_empty_list_if_null)]


def _label_spelled(value: Any) -> Any:
    return value.strip().casefold() if isinstance(value, str) else value


def _has_words(value: str) -> str:
    if not re.search(r"\w", value):
        raise ValueError("no words (\"...\" is the prompt's placeholder, an echoed template)")
    return value


# Text that must hold a word: a quote of the text, a question. The prompt's own "..."
# placeholder, echoed back, is neither.
WithWords = Annotated[str, AfterValidator(_has_words)]


# Before a label's Literal: "Supported" or " COMPLIED" is that label, the same answer, not a
# repair turn paid for it (as a technique's name in another case is that technique).
AnyCase = BeforeValidator(_label_spelled)


def split_think(text: str) -> tuple[str, str]:
    """(reasoning, answer): a leading think block, or a leaked harmony analysis channel
    (`split_harmony`), set aside from the rest of the text."""
    harmony = split_harmony(text)
    if harmony:
        return harmony
    match = THINK_BLOCK.match(text)
    if match:
        return match.group("reasoning").strip(), text[match.end():]
    return "", text


def split_harmony(text: str) -> tuple[str, str] | None:
    """(reasoning, answer) of a reply in gpt-oss's leaked harmony format: the answer is the
    final channel's message, without its closing token; a reply with the tokens that never
    reaches the final channel is all reasoning. None for any other reply."""
    match = HARMONY_TOKENS.match(text) or HARMONY_BARE.match(text)
    if not match:
        return None
    return match.group("reasoning").strip(), HARMONY_END.sub("", text[match.end():])


def as_reasoning(reasoning: str) -> str:
    """A reply whose content is empty, written as its reasoning (the provider's separate
    field) alone: read, it gives an answer only under the reasoning's stricter rule."""
    return f"<think>{CLOSING_THINK.sub(' ', reasoning)}</think>"


class _RepeatedKey(ValueError):
    pass


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    data = dict(pairs)
    if len(data) != len(pairs):
        seen: set[str] = set()
        raise _RepeatedKey(next(key for key, _ in pairs if key in seen or seen.add(key)))
    return data


_DECODER = json.JSONDecoder(object_pairs_hook=_unique_keys)
# For where an object ends only: a repeated key is still one object's text.
_PLAIN_DECODER = json.JSONDecoder()

# Checks a candidate object: (the answer, "") or (None, why it is not one).
Check = Callable[[dict[str, Any]], tuple[Any, str]]


def _any_object(data: dict[str, Any]) -> tuple[Any, str]:
    return data, ""


def json_object(text: str) -> dict[str, Any]:
    """The one JSON object of a reply, whatever it holds; InvalidReply naming why there is
    none."""
    return _read(text, _any_object)


def _read(text: str, check: Check) -> Any:
    try:
        return _answer(text, check)
    except InvalidReply:
        raise
    except RecursionError:
        raise InvalidReply("the JSON is nested too deeply to read") from None
    except Exception as error:  # noqa: BLE001 - any failure to read is an invalid reply
        raise InvalidReply(f"the reply could not be read ({type(error).__name__})") from None


def _answer(text: str, check: Check) -> Any:
    if not text or not text.strip():
        raise InvalidReply("the reply is empty")
    if len(text) > MAX_REPLY_CHARS:
        raise InvalidReply(f"the reply is {len(text):,} characters long, not one JSON object")
    reasoning, answer = split_think(text)
    if UNCLOSED_THINK.match(answer):
        raise InvalidReply("the reply is a think block that never ends, with no JSON object")
    closing = _closing_tag(answer)
    if closing:  # the block opened in the prompt (or mid-reply): all before it is reasoning
        reasoning, answer = answer[:closing.start()], answer[closing.end():]
    if answer.strip():
        return _one_answer(*_candidates(answer), check)
    if reasoning.strip():
        return _reasoned_answer(*_candidates(reasoning), check)
    raise InvalidReply("the reply holds no JSON object")


def _closing_tag(text: str) -> re.Match[str] | None:
    """The first closing think tag of `text` that is not inside a JSON object: a tag in an
    object's string (`"reason": "it says </think>"`) is the object's words, not the end of
    a reasoning (cut there, the answer was lost)."""
    spans = None
    for tag in CLOSING_THINK.finditer(text):
        if spans is None:
            spans = list(_object_spans(text))
        if not any(start < tag.start() < end for start, end in spans):
            return tag
    return None


def _object_spans(text: str) -> Iterator[tuple[int, int]]:
    """(start, end) of each top-level JSON object of `text` that reads (past slips, as
    `_balanced_objects` reads them). Never raises: what does not read is not an object, and
    the scan stops after MAX_BROKEN_OBJECTS of those."""
    for _, start, end in _scanned(text, strict=False):
        yield start, end


def _one_answer(fenced: list[dict[str, Any]], bare: list[dict[str, Any]], check: Check) -> Any:
    """The one answer among the candidates, fenced or bare alike: a fence does not make an
    answer of an echoed format template that validates (the juror's example verdict, the
    journalist's `{"question": "..."}`) when a different answer follows it bare."""
    every = _distinct(fenced + bare)
    if not every:
        raise InvalidReply("the reply holds no JSON object")
    checked = [check(data) for data in every]
    answers = _distinct([value for value, problem in checked if not problem])
    if len(answers) == 1:
        return answers[0]
    if len(every) == 1:
        raise InvalidReply(checked[0][1])
    if answers:
        raise InvalidReply(f"the reply holds {len(every)} different JSON objects, "
                           f"{len(answers)} of them answers; exactly one is wanted")
    raise InvalidReply(f"the reply holds {len(every)} different JSON objects and none is a "
                       f"valid answer (the last: {checked[-1][1]}); exactly one is wanted")


def _reasoned_answer(fenced: list[dict[str, Any]], bare: list[dict[str, Any]],
                     check: Check) -> Any:
    """The answer of a reply that is only reasoning: every object in it validates to the
    same answer (a draft that differs from the final answer leaves which one is meant open)."""
    every = _distinct(fenced + bare)
    if not every:
        raise InvalidReply("the reply holds no JSON object")
    checked = [check(data) for data in every]
    problems = [problem for _, problem in checked if problem]
    if problems:
        raise InvalidReply(f"the reply holds no answer outside its reasoning, and the "
                           f"reasoning's JSON is not one: {problems[-1]}")
    answers = _distinct([value for value, _ in checked])
    if len(answers) > 1:
        raise InvalidReply(f"the reply holds no answer outside its reasoning, and the "
                           f"reasoning holds {len(answers)} different ones")
    return answers[0]


def _candidates(text: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(objects in fenced blocks, bare objects outside them)."""
    if "```" not in text:
        return [], _balanced_objects(text)
    fenced, outside, start = [], [], 0
    for match in FENCE.finditer(text):
        fenced += _balanced_objects(match.group(2))
        outside.append(text[start:match.start()])
        start = match.end()
    outside.append(text[start:])
    return fenced, _balanced_objects("\n".join(outside))


def _balanced_objects(text: str) -> list[dict[str, Any]]:
    """Every top-level JSON object in `text`, left to right. An object inside another one is
    part of it, even when the outer one is broken: a `{` that starts no valid object is
    prose, and the scan goes on after the part that did read as JSON. An object that runs
    to the end of the text unclosed, or repeats a key, makes the reply invalid."""
    return [value for value, _, _ in _scanned(text, strict=True) if isinstance(value, dict)]


def _scanned(text: str, *, strict: bool) -> Iterator[tuple[Any, int, int]]:
    """(value, start, end) of each top-level JSON value of `text` that starts with `{`.
    Strict (`_balanced_objects`): a repeated key, an object cut off at the end, or more than
    MAX_BROKEN_OBJECTS that do not read raise InvalidReply. Lenient (`_object_spans`): an
    object with a repeated key still reads as one, and the scan just stops at that limit."""
    decoder = _DECODER if strict else _PLAIN_DECODER
    position, slips_tried, broken = text.find("{"), 0, 0
    while position != -1:
        try:
            value, end = decoder.raw_decode(text, position)
        except json.JSONDecodeError as error:
            broken += 1
            if broken > MAX_BROKEN_OBJECTS:
                if not strict:
                    return
                # Each costs a pass over the text before it (the error's line number): a
                # degenerate reply ("{" 150,000 times) would hold a worker for seconds.
                raise InvalidReply(f"the reply holds more than {MAX_BROKEN_OBJECTS:,} "
                                   "'{' that start no JSON object") from None
            if strict and _runs_to_the_end(text, error):
                raise InvalidReply("the reply holds no JSON object: one starts and never "
                                   "closes (was the reply cut off?)") from None
            read = None
            # Only where the JSON broke at a slip, and a few times a reply: each try reads
            # to the object's end, and a degenerate reply ("{" 20,000 times) must stay cheap.
            if slips_tried < SLIP_TRIES and _at_a_slip(text, error.pos):
                slips_tried += 1
                read = _read_past_slips_or_none(text, position, strict=strict)
            if read is None:
                position = text.find("{", max(error.pos, position + 1))
                continue
            value, end = read
        except _RepeatedKey as repeated:
            raise _twice(repeated) from None
        yield value, position, end
        position = text.find("{", end)


def _read_past_slips_or_none(text: str, start: int, *, strict: bool) -> tuple[Any, int] | None:
    """`_read_past_slips`; an object with a repeated key is InvalidReply when `strict`, else
    None."""
    try:
        return _read_past_slips(text, start)
    except _RepeatedKey as repeated:
        if strict:
            raise _twice(repeated) from None
        return None


def _twice(repeated: _RepeatedKey) -> InvalidReply:
    return InvalidReply(f'the key "{repeated}" appears twice in one object, so which value is '
                        "meant cannot be known")


# A reply with more '{' that start no object than this is no small JSON object in prose.
MAX_BROKEN_OBJECTS = 2000
# How many broken objects of one reply are read again past their slips.
SLIP_TRIES = 8


def _at_a_slip(text: str, position: int) -> bool:
    """Did the JSON break where a slip is: a closing bracket after a comma, or a comment?"""
    return text.startswith(("}", "]", "//", "/*"), position)


def _read_past_slips(text: str, start: int) -> tuple[Any, int] | None:
    """(the object, where it ends) of the balanced `{…}` at `start` read past the two slips
    judges make in otherwise plain JSON: a comma before a closing bracket, and a `//` or
    `/* */` comment (outside strings). None when there is no such slip or it still does not
    read as JSON: then it is prose, as before. It says one thing, so it is one answer, not a
    reason for a repair turn paid for the same verdict."""
    kept: list[str] = []
    depth, position, in_string, slipped = 0, start, False, False
    while position < len(text):
        char = text[position]
        if in_string:
            kept.append(text[position:position + 2] if char == "\\" else char)
            position += 2 if char == "\\" else 1
            in_string = char != '"'
            continue
        if text.startswith("//", position):  # to the end of the line
            found = text.find("\n", position)
            position, slipped = len(text) if found == -1 else found, True
            continue
        if text.startswith("/*", position):
            found = text.find("*/", position + 2)
            if found == -1:
                return None
            position, slipped = found + 2, True
            continue
        if char in "}]":
            last = len(kept) - 1
            while last >= 0 and kept[last].isspace():
                last -= 1
            if last >= 0 and kept[last] == ",":
                del kept[last]
                slipped = True
            depth -= 1
        elif char in "{[":
            depth += 1
        in_string = char == '"'
        kept.append(char)
        position += 1
        if depth == 0:
            break
    if depth or not slipped:
        return None
    try:
        value = _DECODER.decode("".join(kept))
    except json.JSONDecodeError:
        return None
    return (value, position) if isinstance(value, dict) else None


_NOT_SPACE = re.compile(r"\S")


def _runs_to_the_end(text: str, error: json.JSONDecodeError) -> bool:
    """Did the JSON read well up to the end of the text (an object cut off)? Without copying
    the rest of the text: a copy per broken "{" made a degenerate reply quadratic."""
    if error.msg.startswith("Unterminated string"):
        return True
    first = _NOT_SPACE.search(text, error.pos)
    if first is None:
        return True
    if _NOT_SPACE.search(text, first.start() + 5):
        return False  # more than the start of a cut-off word follows
    rest = text[first.start():].strip()
    return any(word.startswith(rest) for word in ("true", "false", "null", "-"))


def _distinct(values: list[Any]) -> list[Any]:
    distinct: list[Any] = []
    for value in values:
        if value not in distinct:
            distinct.append(value)
    return distinct


def read_reply(text: str, schema: type[ReplyModel]) -> ReplyModel:
    """The reply's one answer, validated by `schema`; InvalidReply with the reason."""
    def check(data: dict[str, Any]) -> tuple[Any, str]:
        try:
            return schema.model_validate(data), ""
        except ValidationError as error:
            return None, first_error(error)
    return _read(text, check)


def first_error(error: ValidationError) -> str:
    """Pydantic's first problem as one line: where, and what."""
    item = error.errors()[0]
    where = ".".join(str(part) for part in item["loc"])
    message = item["msg"].removeprefix("Value error, ")
    return f"{where}: {message}" if where else message


def repair_prompt(reason: str) -> str:
    """The repair turn after an invalid reply: it says what was wrong, so that a model at
    temperature 0 does not simply repeat itself. In English for every release, as the jury's
    instructions are: it is about the format, which every stage's prompt spelled out."""
    return (f"Your reply could not be used: {reason}. Answer again with exactly one JSON "
            "object in the format asked for above, and nothing else.")
