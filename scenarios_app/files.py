"""Reading and writing scenario files (no database here; services.py does the writes).

A scenario file comes from outside (a curator's editor, an upload, a zip), so it is read with
limits before anything trusts it: its size is checked before a byte is read, it must be UTF-8,
no control character may hide in it, and the YAML parser refuses aliases, deep nesting,
repeated keys and giant numbers. Each refusal is one problem line naming the file and, where
it can, the field: `x.yaml: facts[2].text: contains a NUL byte (U+0000) at line 14, column 9`.
"""

from __future__ import annotations

import dataclasses
import re
import zipfile
import zlib
from pathlib import Path
from typing import Any

import yaml

from scenarios_app.schemas import (
    ALLOWED_HERE,
    ScenarioFile,
    field_path,
    forbidden_character,
    validate_scenario_document,
)

SUFFIXES = (".yaml", ".yml")
# The shipped scenarios are 13-15 KB each. 256 KB is seventeen times that: room for a long
# scenario, while a file that size already makes a writer prompt of some 64,000 tokens, more
# than any task needs. It also bounds what validating one file costs (bench/scenario_files.py).
MAX_FILE_BYTES = 256 * 1024
# A zip as uploaded, and everything it unpacks to: 32 scenario files at their size limit.
MAX_ZIP_BYTES = 32 * MAX_FILE_BYTES
# Problem lines listed for one import or validation; the rest are counted, not listed (a zip
# of 3,000 bad files would otherwise list 3,000 lines).
MAX_LISTED_PROBLEMS = 50
# A scenario file nests four levels (knowledge_questions[0].options[1]). Deeper has no use,
# and the pure-Python YAML composer recurses once per level: a deep file would otherwise end in
# a RecursionError rather than a problem line.
MAX_DEPTH = 16
# Python refuses to convert integers of more than 4,300 digits (a ValueError, not a problem
# line); no field of the format needs more than a few.
MAX_INTEGER_CHARACTERS = 20
# Characters refused in the file as written. Carriage returns are line breaks there (files
# saved on Windows); inside a value, escapes such as "\0" are caught by the schema's rule.
RAW_FORBIDDEN = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")


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


def is_scenario_name(name: str) -> bool:
    """A scenario file's name ends in .yaml or .yml, in any case (X.YAML is one too: a folder
    or zip that skipped it would leave a file out unsaid)."""
    return name.lower().endswith(SUFFIXES)


def scenario_file_suffix(path: Path) -> bool:
    """Whether a file named on the command line may be read: a scenario file, a zip of them,
    or a name with no suffix at all (`<(…)`'s /dev/fd/63, a pipe)."""
    return not path.suffix or is_scenario_name(path.name) or is_zip_name(path.name)


def is_zip_name(name: str) -> bool:
    return name.lower().endswith(".zip")


def expand_paths(paths: list[str]) -> tuple[list[Path], list[str]]:
    """Files as given (a .zip among them is read as a zip of scenario files), folders as their
    *.yaml files (sorted); missing paths, and files of another kind (x.py), are problems."""
    files: list[Path] = []
    problems: list[str] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found = sorted(p for p in path.iterdir() if is_scenario_name(p.name) and p.is_file())
            if not found:
                problems.append(f"{raw}: no scenario files (*.yaml) in this folder")
            files += found
        elif path.is_file() and not scenario_file_suffix(path):
            problems.append(f"{raw}: not a scenario file: its name ends in {path.suffix}, "
                            "not .yaml, .yml or .zip")
        elif path.is_file():
            files.append(path)
        else:
            problems.append(f"{raw}: no such file or folder")
    return files, problems


def too_large(size: int) -> str | None:
    """The problem with a scenario file of `size` bytes, or None if it may be read."""
    if size > MAX_FILE_BYTES:
        return f"too large ({size_against(size, MAX_FILE_BYTES)})"
    return None


def file_size(size: int) -> str:
    """'256.0 KB': what Django's `filesizeformat` shows in English (the upload page states its
    limit with it), without Django's settings, which it needs for its translations: this module
    runs without them (bench/scenario_files.py). Number and unit are joined by a no-break
    space, as there."""
    if size == 1:
        return "1\xa0byte"
    for power, unit in ((50, "PB"), (40, "TB"), (30, "GB"), (20, "MB"), (10, "KB")):
        if size >= 1 << power:
            return f"{round(size / (1 << power), 1):.1f}\xa0{unit}"
    return f"{size}\xa0bytes"


def size_against(size: int, limit: int) -> str:
    """'10.0 MB; the limit is 256.0 KB': sizes in the unit the upload page states its limit
    in (`file_size`), with the bytes too where the two would read the same."""
    shown, most = file_size(size), file_size(limit)
    if shown == most:
        shown, most = f"{shown}, {size} bytes", f"{most}, {limit} bytes"
    return f"{shown}; the limit is {most}"


def read_scenario_text(path: Path) -> tuple[str | None, list[str]]:
    """The file's text, or the problems that keep it from being parsed at all."""
    source = str(path)
    try:
        size = path.stat().st_size
        if problem := too_large(size):
            return None, [f"{source}: {problem}"]
        with path.open("rb") as handle:
            # Never more than the limit allows, even if the file grew since stat().
            content = handle.read(MAX_FILE_BYTES + 1)
    except OSError as error:
        return None, [f"{source}: cannot read the file: {error.strerror or error}"]
    if problem := too_large(len(content)):
        return None, [f"{source}: {problem}"]
    return decode_scenario_bytes(content, source)


def decode_scenario_bytes(content: bytes, source: str) -> tuple[str | None, list[str]]:
    if not content:
        return None, [f"{source}: the file is empty"]
    try:
        text = content.decode("utf-8")
    except UnicodeDecodeError as error:
        line = content.count(b"\n", 0, error.start) + 1
        return None, [f"{source}: not UTF-8 text (byte 0x{content[error.start]:02x} on line "
                      f"{line}); save the file as UTF-8"]
    return text, raw_character_problems(text, source)


def raw_character_problems(text: str, source: str) -> list[str]:
    """A control character written into the file, named with its field, line and column."""
    found = list(RAW_FORBIDDEN.finditer(text))
    if not found:
        return []
    index = found[0].start()
    _, description = forbidden_character(text[index])
    line = text.count("\n", 0, index) + 1
    column = index - (text.rfind("\n", 0, index) + 1) + 1
    more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
    # Blanked out (same length, so the same positions), the file can be parsed to learn
    # which field holds the character.
    field = _field_at(RAW_FORBIDDEN.sub(" ", text), index)
    where = f"{field}: " if field else ""
    return [f"{source}: {where}contains {description} at line {line}, column {column}{more}; "
            f"{ALLOWED_HERE}"]


class LimitRefused(yaml.MarkedYAMLError):
    """The YAML is well formed, but uses something a scenario file may not."""


# libyaml's parser when PyYAML was built with it (the wheels are): some seven times faster than
# the pure-Python one on a file at the size limit (bench/scenario_files.py).
_SafeLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_OPENING = (yaml.MappingStartEvent, yaml.SequenceStartEvent)
_CLOSING = (yaml.MappingEndEvent, yaml.SequenceEndEvent)


def check_structure(text: str, kind: str = "scenario file") -> None:
    """Refuse aliases and deep nesting, from the parser's events, before any node is built.

    `*name` repeats an anchored node, and aliases of aliases expand exponentially for
    whatever walks the data (a few hundred bytes can stand for gigabytes: the "billion
    laughs"); a scenario file has no use for them. Nesting is bounded by MAX_DEPTH."""
    depth = 0
    for event in yaml.parse(text, Loader=_SafeLoader):
        if isinstance(event, yaml.AliasEvent):
            raise LimitRefused(None, None, f"aliases (*{event.anchor}) are not allowed in a "
                               f"{kind}; write the value out", event.start_mark)
        if isinstance(event, _OPENING):
            depth += 1
            if depth > MAX_DEPTH:
                raise LimitRefused(None, None, f"nested more than {MAX_DEPTH} levels deep",
                                   event.start_mark)
        elif isinstance(event, _CLOSING):
            depth -= 1


class ScenarioLoader(_SafeLoader):
    """The safe loader, with a key at most once per mapping (YAML itself would silently keep
    the last of two `canary:` lines) and integers of at most MAX_INTEGER_CHARACTERS."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict:
        seen: set[str] = set()
        for key_node, _ in node.value:
            if isinstance(key_node, yaml.ScalarNode):
                if key_node.value in seen:
                    raise LimitRefused(None, None, f"the key {key_node.value!r} appears twice "
                                       "in one mapping", key_node.start_mark)
                seen.add(key_node.value)
        return super().construct_mapping(node, deep=deep)

    def construct_yaml_int(self, node: yaml.ScalarNode) -> int:
        if len(node.value) > MAX_INTEGER_CHARACTERS:
            raise LimitRefused(None, None, f"a number of {len(node.value)} characters; the "
                               f"limit is {MAX_INTEGER_CHARACTERS}", node.start_mark)
        return super().construct_yaml_int(node)


ScenarioLoader.add_constructor("tag:yaml.org,2002:int", ScenarioLoader.construct_yaml_int)


def load_yaml(text: str, kind: str = "scenario file") -> Any:
    """Parse one YAML document within the limits above (raises yaml.YAMLError)."""
    check_structure(text, kind)
    loader = ScenarioLoader(text)
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()


def parse_yaml(text: str, source: str, kind: str = "scenario file") -> tuple[Any, list[str]]:
    """The document, or one problem line naming `source` and the line and column: PyYAML's
    own message runs over several lines, quoting the text."""
    try:
        return load_yaml(text, kind), []
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        reason = getattr(error, "problem", None) or str(error).splitlines()[0]
        if isinstance(error, LimitRefused):
            return None, [f"{source}: {where}: {reason}"]
        return None, [f"{source}: malformed YAML{' at ' + where if where else ''}: {reason}"]


def _field_at(text: str, index: int) -> str:
    """The path of the value that spans character `index`, or "" (a comment, a key, or a file
    that does not parse)."""
    node = _document_node(text)
    location = _location_of(node, index, ()) if node is not None else None
    return field_path(location) if location else ""


def _location_of(node: yaml.Node, index: int,
                 location: tuple[str | int, ...]) -> tuple[str | int, ...] | None:
    if not node.start_mark.index <= index < max(node.end_mark.index, node.start_mark.index + 1):
        return None
    if isinstance(node, yaml.ScalarNode):
        return location
    children: list[tuple[str | int, yaml.Node]] = (
        [(position, child) for position, child in enumerate(node.value)]
        if isinstance(node, yaml.SequenceNode)
        else [(str(key.value), value) for key, value in node.value]
    )
    for part, child in children:
        found = _location_of(child, index, (*location, part))
        if found is not None:
            return found
    return None


def yaml_members(archive: zipfile.ZipFile) -> list[zipfile.ZipInfo]:
    return [
        member for member in archive.infolist()
        if not member.is_dir() and is_scenario_name(member.filename)
        and not member.filename.startswith("__MACOSX/")
    ]


def members_left_out(handle: Any) -> tuple[list[str], list[str]]:
    """The files of a readable zip an import leaves out, named in its result so that nothing
    is left out unsaid: (those that are not scenario files, a README or an image; those under
    `__MACOSX/`, the metadata macOS adds beside each file when it zips a folder, named apart
    since they are not the curator's files)."""
    handle.seek(0)
    with zipfile.ZipFile(handle) as archive:
        files = [member.filename for member in archive.infolist() if not member.is_dir()]
    macos = [name for name in files if name.startswith("__MACOSX/")]
    others = [name for name in files
              if not is_scenario_name(name) and not name.startswith("__MACOSX/")]
    return others, macos


def read_zip(name: str, handle: Any, size: int) -> tuple[list[tuple[str, bytes]], list[str]]:
    """(member name, content) of each scenario file in the zip `handle`, or the problem that
    refuses the whole zip. Sizes are checked before anything is unpacked (members by their
    declared sizes, which `zipfile` never reads beyond); a damaged zip is a problem line, not
    an exception. The upload form and the commands both read zips here."""
    if size > MAX_ZIP_BYTES:
        return [], [f"{name}: too large ({size_against(size, MAX_ZIP_BYTES)})"]
    try:
        archive = zipfile.ZipFile(handle)
        members = yaml_members(archive)
        if not members:
            return [], [f"{name}: holds no .yaml files"]
        for member in members:
            if problem := too_large(member.file_size):
                return [], [f"{name}/{member.filename}: {problem}"]
        unpacked = sum(member.file_size for member in members)
        if unpacked > MAX_ZIP_BYTES:
            return [], [f"{name}: unpacks to {size_against(unpacked, MAX_ZIP_BYTES)}"]
        return [(member.filename, archive.read(member)) for member in members], []
    except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError, ValueError) as error:
        reason = "empty file" if size == 0 else str(error) or type(error).__name__
        return [], [f"{name}: a damaged zip (unreadable or truncated: {reason})"]


def summarise(problems: list[str], listed: int = MAX_LISTED_PROBLEMS) -> list[str]:
    """The first `listed` problem lines, then one line counting the rest and their files."""
    if len(problems) <= listed:
        return problems
    rest = problems[listed:]
    files = {line.split(": ", 1)[0] for line in rest}
    return [*problems[:listed], f"… and {len(rest)} more problem{'s' if len(rest) != 1 else ''} "
            f"in {len(files)} file{'s' if len(files) != 1 else ''}"]


def load_scenario_files(paths: list[str]) -> LoadReport:
    """Load and validate every file; collect every problem rather than stop at the first.

    Pure: reads files, never the database (validate_scenarios runs without one)."""
    files, problems = expand_paths(paths)
    loaded: list[LoadedFile] = []
    for path in files:
        if is_zip_name(path.name):
            try:
                with path.open("rb") as handle:
                    members, zip_problems = read_zip(str(path), handle, path.stat().st_size)
            except OSError as error:
                members, zip_problems = [], [f"{path}: cannot read the file: "
                                                f"{error.strerror or error}"]
            problems += zip_problems
            for member, content in members:
                source = f"{path}/{member}"
                problems += _load_text(*decode_scenario_bytes(content, source), source, loaded)
            continue
        problems += _load_text(*read_scenario_text(path), str(path), loaded)
    problems += duplicate_problems(loaded)
    return LoadReport(loaded, problems)


def _load_text(text: str | None, read_problems: list[str], source: str,
               loaded: list[LoadedFile]) -> list[str]:
    """The problems of one file's text; a valid scenario is appended to `loaded`."""
    if text is None or read_problems:
        return read_problems
    data, yaml_problems = parse_yaml(text, source)
    if yaml_problems:
        return yaml_problems
    if data is None:
        return [f"{source}: the file is empty (blank lines and comments only)"]
    scenario, schema_problems = validate_scenario_document(data)
    if scenario is not None:
        loaded.append(LoadedFile(source, scenario))
    root = _document_node(text) if schema_problems else None
    return [problem.line(source + _line_note(root, problem.path)) for problem in schema_problems]


def _document_node(text: str) -> yaml.Node | None:
    """The file's YAML node tree, for where its values stand; None if it does not parse."""
    loader = ScenarioLoader(text)
    try:
        check_structure(text)  # an alias would make a walk of the tree exponential
        return loader.get_single_node()
    except yaml.YAMLError:
        return None
    finally:
        loader.dispose()


PATH_PART = re.compile(r"\[(\d+)\]|\.?([^.\[\]]+)")


def _line_note(root: yaml.Node | None, path: str) -> str:
    """": line N": where the value at `path` ('knowledge_questions[0].correct') starts, or the
    nearest enclosing value the file has (a missing key: the mapping that lacks it); "" for
    the document as a whole, whose line says nothing."""
    node, steps = root, 0
    for index, key in PATH_PART.findall(path) if root is not None else ():
        if index and isinstance(node, yaml.SequenceNode) and int(index) < len(node.value):
            node = node.value[int(index)]
        elif key and isinstance(node, yaml.MappingNode):
            found = [value for name, value in node.value
                     if isinstance(name, yaml.ScalarNode) and name.value == key]
            if not found:
                break
            node = found[0]
        else:
            break
        steps += 1
    return f": line {node.start_mark.line + 1}" if steps else ""


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
