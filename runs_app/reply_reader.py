"""The one reply reader every structured stage uses (DESIGN section 5). No ORM here.

Models wrap JSON in many ways: a code fence with prose around it, prose before a bare object,
a think block first, the same object twice. The reader takes exactly one JSON object from a
reply, leniently, and then validates it strictly:

- A leading think block (`<think>…</think>`, `<thinking>`, `<reasoning>`) is set aside: it
  is the model's private reasoning, not its answer.
- A fenced block anywhere (```json … ``` or ``` … ```) that holds one JSON object wins;
  otherwise every balanced top-level object in the text is a candidate. One object, or the
  same object repeated, is the answer; two different objects are invalid (which one the model
  meant cannot be known).
- Integers are integers: a boolean is never an integer (`"A1": true` is not attitude 1), and
  4.5 is not one either; a number written as a string ("4") still is.
- Every failure raises `InvalidReply` with a reason that names what was wrong, and the reason
  is quoted back to the model in the repair turn. Any exception while reading a reply
  (a `RecursionError` from 3,000 nested brackets included) is an invalid reply, never a crash.
"""

from __future__ import annotations

import json
import re
from typing import Annotated, Any, TypeVar

from pydantic import BaseModel, BeforeValidator, ValidationError

# A reply longer than this is not one of the small JSON objects any stage asks for.
MAX_REPLY_CHARS = 200_000

THINK_BLOCK = re.compile(r"^\s*<(think|thinking|reasoning)>(.*?)</\1>", re.DOTALL | re.IGNORECASE)
UNCLOSED_THINK = re.compile(r"^\s*<(think|thinking|reasoning)>", re.IGNORECASE)
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


def split_think(text: str) -> tuple[str, str]:
    """(reasoning, answer): a leading think block set aside from the rest of the text."""
    match = THINK_BLOCK.match(text)
    if match:
        return match.group(2).strip(), text[match.end():]
    return "", text


def json_object(text: str) -> dict[str, Any]:
    """The one JSON object of a reply; InvalidReply naming why there is none."""
    try:
        return _json_object(text)
    except InvalidReply:
        raise
    except RecursionError:
        raise InvalidReply("the JSON is nested too deeply to read") from None
    except Exception as error:  # noqa: BLE001 - any failure to read is an invalid reply
        raise InvalidReply(f"the reply could not be read ({type(error).__name__})") from None


def _json_object(text: str) -> dict[str, Any]:
    if not text or not text.strip():
        raise InvalidReply("the reply is empty")
    if len(text) > MAX_REPLY_CHARS:
        raise InvalidReply(f"the reply is {len(text):,} characters long, not one JSON object")
    _, answer = split_think(text)
    if UNCLOSED_THINK.match(answer):
        raise InvalidReply("the reply is a think block that never ends, with no JSON object")
    fenced = [found for found in (_fenced_object(body) for _, body in FENCE.findall(answer))
              if found is not None]
    candidates = fenced or _balanced_objects(answer)
    distinct = _distinct(candidates)
    if not distinct:
        raise InvalidReply("the reply holds no JSON object")
    if len(distinct) > 1:
        raise InvalidReply(f"the reply holds {len(distinct)} different JSON objects; "
                           "exactly one is wanted")
    return distinct[0]


def _fenced_object(body: str) -> dict[str, Any] | None:
    objects = _balanced_objects(body)
    distinct = _distinct(objects)
    return distinct[0] if len(distinct) == 1 else None


def _balanced_objects(text: str) -> list[dict[str, Any]]:
    """Every top-level JSON object in `text`, left to right; an object inside another one is
    part of it, and a `{` that starts no valid object is prose."""
    decoder = json.JSONDecoder()
    found, position = [], text.find("{")
    while position != -1:
        try:
            value, end = decoder.raw_decode(text, position)
        except json.JSONDecodeError:
            position = text.find("{", position + 1)
            continue
        found.append(value)
        position = text.find("{", end)
    return found


def _distinct(objects: list[Any]) -> list[dict[str, Any]]:
    distinct: list[dict[str, Any]] = []
    for value in objects:
        if isinstance(value, dict) and value not in distinct:
            distinct.append(value)
    return distinct


def read_reply(text: str, schema: type[ReplyModel]) -> ReplyModel:
    """The reply's one JSON object, validated by `schema`; InvalidReply with the reason."""
    data = json_object(text)
    try:
        return schema.model_validate(data)
    except ValidationError as error:
        raise InvalidReply(first_error(error)) from None
    except RecursionError:
        raise InvalidReply("the JSON is nested too deeply to read") from None


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
