"""The scenario file reference (`scenarios/FORMAT.md`), generated from the pydantic schema.

Every field of `scenarios_app.schemas.ScenarioFile` and of the parts it holds, with its type,
its limits (as the schema enforces them), its description and an example, all read from the
schema itself; `manage.py scenario_reference --write` writes the file and a test compares it,
so the reference cannot drift from the rules the importer applies.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.conf import settings

from scenarios_app.files import MAX_FILE_BYTES, MAX_LISTED_PROBLEMS, SUFFIXES
from scenarios_app.schemas import ALLOWED_HERE, FORMAT, ScenarioFile

REFERENCE_PATH = Path("scenarios") / "FORMAT.md"


def reference_path() -> Path:
    return Path(settings.BASE_DIR) / REFERENCE_PATH


def scenario_file_reference() -> str:
    """The reference as markdown."""
    schema = ScenarioFile.model_json_schema()
    definitions = schema.get("$defs", {})
    lines = [
        f"# The scenario file: `{FORMAT}`",
        "",
        "<!-- Generated from scenarios_app/schemas.py by `manage.py scenario_reference "
        "--write`; do not edit by hand (a test compares it with the schema). -->",
        "",
        f"A scenario is one YAML file ({', '.join(SUFFIXES)}), at most "
        f"{MAX_FILE_BYTES // 1024} KB, UTF-8, without YAML aliases. In every text "
        f"{ALLOWED_HERE}, and leading and trailing spaces are dropped. Unknown fields are "
        f"problems. Each problem is reported as one line naming the file, the line and the "
        f"field (`scenarios/x.yaml: line 185: knowledge_questions[2].correct: index 5 is "
        f"outside the 4 options`), all of them at once (the first {MAX_LISTED_PROBLEMS} are "
        f"listed, the rest counted). Whole examples: the shipped files in `scenarios/` "
        f"(`manage.py validate_scenarios FILE` checks one).",
        "",
    ]
    sections = [("Top level", "", schema)]
    while sections:
        title, prefix, model = sections.pop(0)
        lines += [f"## {title}", "", "| field | type | limits | what it is | example |",
                  "|---|---|---|---|---|"]
        for name, field in model["properties"].items():
            path = f"{prefix}{name}"
            part = _part(field, definitions)
            if part is not None:
                list_of = field.get("type") == "array"
                child = f"{path}[i]." if list_of else f"{path}."
                sections.append((f"`{child[:-1]}`", child, part))
            required = name in model.get("required", [])
            lines.append("| " + " | ".join(_cell(text) for text in (
                f"`{path}`", _type(field, definitions),
                _limits(field, required), field.get("description", ""),
                _example(field))) + " |")
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def _part(field: dict, definitions: dict) -> dict | None:
    """The model a field holds (itself or as its list's items), if any."""
    reference = field.get("$ref") or field.get("items", {}).get("$ref")
    return definitions[reference.rsplit("/", 1)[1]] if reference else None


def _type(field: dict, definitions: dict) -> str:
    if "$ref" in field:
        return "mapping (below)"
    if field.get("type") == "array":
        items = field.get("items", {})
        return "list of mappings (below)" if "$ref" in items else f"list of {_type(items, {})}s"
    return {"string": "text", "integer": "integer"}.get(field.get("type", ""), "text")


def _limits(field: dict, required: bool) -> str:
    limits = ["required" if required else "optional"]
    if "const" in field:
        limits.append(f"exactly `{field['const']}`")
    if "enum" in field:
        limits.append("one of " + ", ".join(f"`{value}`" for value in field["enum"]))
    limits += _bounds(field.get("minLength"), field.get("maxLength"), "character")
    limits += _bounds(field.get("minItems"), field.get("maxItems"), "item")
    if "pattern" in field:
        limits.append(f"matches `{field['pattern']}`")
    items = field.get("items", {})
    limits += [f"each {limit}" for limit in _bounds(items.get("minLength"),
                                                    items.get("maxLength"), "character")]
    return "; ".join(limits)


def _bounds(low: int | None, high: int | None, unit: str) -> list[str]:
    if low is None and high is None:
        return []
    if low == high:
        return [f"exactly {low} {unit}{'s' if low != 1 else ''}"]
    if high is None:
        return [f"at least {low} {unit}{'s' if low != 1 else ''}"]
    if low is None:
        return [f"at most {high} {unit}s"]
    return [f"{low} to {high} {unit}s"]


def _example(field: dict) -> str:
    examples: list[Any] = field.get("examples") or []
    if not examples:
        return ""
    return f"`{json.dumps(examples[0], ensure_ascii=False)}`"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")
