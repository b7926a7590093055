"""The README onboards from a clone: what it links exists there, and the scenario file
reference it points to says what the schema enforces."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from django.conf import settings

from scenarios_app.reference import REFERENCE_PATH, reference_path, scenario_file_reference
from scenarios_app.schemas import ScenarioFile

ROOT = Path(settings.BASE_DIR)
README = (ROOT / "README.md").read_text(encoding="utf-8")
# A path in backticks that names a file or folder of the repository: words and slashes
# ending in a file name with an extension, or in a slash. URL paths start with a slash.
REPOSITORY_PATH = re.compile(r"`((?:\.\./|[A-Za-z0-9_.-]+/)[A-Za-z0-9_./-]*)`")
MARKDOWN_LINK = re.compile(r"\]\(([^)\s]+)\)")


def tracked(path: str) -> bool:
    """In the repository as a clone has it (tracked by git, or added and not yet committed).
    A folder named alone (`providers/`, in the row of the app that holds it) may be anywhere."""
    pattern = f":(glob)**/{path}**" if path.endswith("/") and path.count("/") == 1 else path
    listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard",
                             "--", pattern], cwd=ROOT, capture_output=True, text=True,
                            check=True)
    return bool(listed.stdout.strip())


def named_paths() -> set[str]:
    paths = {target.split("#")[0] for target in MARKDOWN_LINK.findall(README)
             if not re.match(r"[a-z]+://|mailto:|#", target)}
    for path in REPOSITORY_PATH.findall(README):
        # Placeholders (`releases/CODE.yaml`) and generated places (`var/`, `test-artifacts/`)
        # are not files of a clone.
        if re.search(r"CODE|ID|SLUG|ROLE|PATH|/path/", path) or path.startswith(
                ("var/", "test-artifacts/", ".venv/", "baitbench.")):  # baitbench.scenario/1
            continue
        paths.add(path)
    return paths


def test_every_file_the_readme_names_is_in_the_repository():
    paths = named_paths()
    assert "scenarios/FORMAT.md" in paths and "DESIGN.md" in paths  # the check sees links
    outside = sorted(path for path in paths if path.startswith("../") or "/../" in path)
    assert not outside, f"the README names files outside the repository: {outside}"
    missing = sorted(path for path in paths if not tracked(path))
    assert not missing, f"the README names files a clone does not have: {missing}"


def test_python_3_11_is_named_before_the_first_command():
    assert README.index("Python 3.11") < README.index("```sh")
    first_commands = README[README.index("```sh"):].split("```")[1]
    assert first_commands.splitlines()[1].startswith("make demo ")
    assert "make install" in first_commands and "make demo PORT=" in first_commands


def test_the_scenario_file_reference_is_the_one_the_schema_generates():
    assert reference_path().read_text(encoding="utf-8") == scenario_file_reference(), (
        f"{REFERENCE_PATH} is out of date: run `manage.py scenario_reference --write`")


def test_the_reference_names_every_field_with_its_limits():
    reference = scenario_file_reference()
    rows = {line.split(" | ")[0].strip("| `"): line for line in reference.splitlines()
            if line.startswith("| `")}

    def paths(model, prefix: str = "") -> list[str]:
        found = []
        for name, field in model.model_fields.items():
            found.append(f"{prefix}{name}")
            inner = getattr(field.annotation, "__args__", (field.annotation,))[0]
            if isinstance(inner, type) and issubclass(inner, ScenarioFile.__base__):
                list_of = getattr(field.annotation, "__origin__", None) is list
                found += paths(inner, f"{prefix}{name}{'[i]' if list_of else ''}.")
        return found

    expected = paths(ScenarioFile)
    assert sorted(rows) == sorted(expected)
    assert "exactly 4 items" in rows["knowledge_questions"]
    assert "exactly 2 items" in rows["human_baselines"]
    assert "1 to 3 items" in rows["confidential"]
    assert "200 to 400 words" in rows["control_text"]
    assert "one of `likely`, `possible`, `unlikely`, `unknown`" in rows[
        "uncertainties[i].strength"]
    assert all(row.rstrip(" |").endswith("`") or "(below)" in row for row in rows.values()), \
        "a field without an example"


def test_the_benchmark_list_names_every_benchmark():
    section = README[README.index("## Benchmarks"):]
    section = section[:section.index("\n## ", 1)]
    benches = sorted(path.relative_to(ROOT).as_posix() for path in (ROOT / "bench").glob("*.py"))
    missing = [path for path in benches if f"bin/python {path}" not in section]
    assert not missing, f"README's '## Benchmarks' leaves out {missing}"


def test_no_benchmark_installs_from_a_requirements_file():
    # The project declares its dependencies in pyproject.toml (`make install`); there is no
    # requirements.txt for a command to install from.
    assert not (ROOT / "requirements.txt").exists()
    naming = sorted(path.name for path in (ROOT / "bench").glob("*.py")
                    if "requirements.txt" in path.read_text(encoding="utf-8"))
    assert not naming, f"bench scripts that name requirements.txt: {naming}"



def test_the_problem_line_is_described_once():
    # The short sentence once stood straight before its fuller version.
    assert README.count("A problem in a scenario file") == 1
    assert "A problem in a scenario file or a release file is reported as one line" in README
