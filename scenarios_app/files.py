"""Reading and writing scenario files (no database here; services.py does the writes)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import yaml

from scenarios_app.schemas import ScenarioFile, validate_scenario_document

SUFFIXES = (".yaml", ".yml")


@dataclasses.dataclass(frozen=True)
class LoadedFile:
    path: str
    scenario: ScenarioFile


@dataclasses.dataclass
class LoadReport:
    files: list[LoadedFile]
    problems: list[str]  # one line per problem: `file: field.path: message`

    @property
    def ok(self) -> bool:
        return not self.problems


def expand_paths(paths: list[str]) -> tuple[list[Path], list[str]]:
    """Files as given, folders as their *.yaml files (sorted); missing paths are problems."""
    files: list[Path] = []
    problems: list[str] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found = sorted(p for p in path.iterdir() if p.suffix in SUFFIXES and p.is_file())
            if not found:
                problems.append(f"{raw}: no scenario files (*.yaml) in this folder")
            files += found
        elif path.is_file():
            files.append(path)
        else:
            problems.append(f"{raw}: no such file or folder")
    return files, problems


def parse_yaml(text: str, source: str) -> tuple[Any, list[str]]:
    try:
        return yaml.safe_load(text), []
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        reason = getattr(error, "problem", None) or str(error).splitlines()[0]
        return None, [f"{source}: malformed YAML{where}: {reason}"]


def load_scenario_files(paths: list[str]) -> LoadReport:
    """Load and validate every file; collect every problem rather than stop at the first."""
    files, problems = expand_paths(paths)
    loaded: list[LoadedFile] = []
    for path in files:
        source = str(path)
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as error:
            problems.append(f"{source}: cannot read the file: {error}")
            continue
        data, yaml_problems = parse_yaml(text, source)
        if yaml_problems:
            problems += yaml_problems
            continue
        scenario, schema_problems = validate_scenario_document(data)
        problems += [problem.line(source) for problem in schema_problems]
        if scenario is not None:
            loaded.append(LoadedFile(source, scenario))
    problems += duplicate_problems(loaded)
    return LoadReport(loaded, problems)


def duplicate_problems(loaded: list[LoadedFile]) -> list[str]:
    """A slug or canary names one scenario only: two files may not share one."""
    problems = []
    for field in ("slug", "canary"):
        first: dict[str, str] = {}
        for item in loaded:
            value = getattr(item.scenario, field)
            if value in first:
                problems.append(f"{item.path}: {field}: {value!r} is also used by {first[value]}")
            first.setdefault(value, item.path)
    return problems


class _BlockDumper(yaml.SafeDumper):
    pass


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_BlockDumper.add_representer(str, _represent_str)


def dump_scenario(scenario: ScenarioFile) -> str:
    """YAML in the file's field order; block scalars for multi-line text."""
    return yaml.dump(
        scenario.canonical(), Dumper=_BlockDumper, sort_keys=False, allow_unicode=True, width=100
    )
