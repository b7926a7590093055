"""Scenario files from outside: sizes, characters and YAML constructs are refused with a line
naming the file and the field, never with a traceback or a database error; a canary changes
only when the curator confirms it; validation needs no database."""

from __future__ import annotations

import io
import os
import random
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from django.conf import settings
from django.core.files.uploadedfile import SimpleUploadedFile
from django.template.defaultfilters import filesizeformat
from django.urls import reverse

from scenarios_app.files import MAX_FILE_BYTES, file_size
from scenarios_app.models import Scenario
from scenarios_app.schemas import validate_scenario_document
from scenarios_app.tests.factories import (
    GREENVALE,
    database_state,
    dump,
    other_scenario_document,
    run,
    valid_document,
    write,
)

pytestmark = pytest.mark.django_db

UPLOAD = reverse("admin:scenarios_app_scenario_upload")
RULE = "control characters other than tab and newline are not allowed"


def padded_to(text: str, size: int) -> str:
    """The file with a trailing comment that makes it exactly `size` bytes."""
    missing = size - len(text.encode("utf-8")) - 3
    return text + "#" + "x" * missing + "\n\n"


def refused(*args: str) -> list[str]:
    """Import the files; assert the whole import was refused; return the problem lines."""
    before = database_state()
    code, out, err = run("import_scenarios", *args)
    assert (code, out) == (1, ""), err
    assert database_state() == before
    lines = err.splitlines()
    assert lines[-1].startswith("nothing imported")
    return lines[:-1]


# --- size ----------------------------------------------------------------------------------

def test_a_file_over_the_size_limit_is_refused_before_it_is_read(tmp_path):
    path = write(tmp_path, "big.yaml", padded_to(dump(valid_document()), MAX_FILE_BYTES + 1))

    # One byte over reads as the limit does in KB: the bytes say which is larger.
    assert refused(path) == [f"{path}: too large (256.0\xa0KB, {MAX_FILE_BYTES + 1} bytes; the "
                             f"limit is 256.0\xa0KB, {MAX_FILE_BYTES} bytes)"]
    code, _, err = run("validate_scenarios", path)
    assert (code, err.strip()) == (1, f"{path}: too large (256.0\xa0KB, {MAX_FILE_BYTES + 1} "
                                      f"bytes; the limit is 256.0\xa0KB, {MAX_FILE_BYTES} bytes)")


def test_a_file_over_the_size_limit_is_refused_without_django_settings(tmp_path):
    # bench/scenario_files.py validates files with no Django settings at all: the size refusal
    # once needed them (Django's filesizeformat translates its units) and crashed there.
    path = write(tmp_path, "big.yaml", "#" + "x" * (10 * 2**20) + "\n")
    code = ("from scenarios_app.files import load_scenario_files\n"
            f"print(load_scenario_files([{path!r}]).problems)")
    environment = {key: value for key, value in os.environ.items()
                   if key != "DJANGO_SETTINGS_MODULE"}
    result = subprocess.run([sys.executable, "-c", code], cwd=settings.BASE_DIR,
                            env=environment, capture_output=True, text=True, timeout=60)
    assert (result.returncode, result.stderr) == (0, "")
    assert result.stdout.strip() == repr([f"{path}: too large (10.0\xa0MB; the limit is "
                                          "256.0\xa0KB)"])


@pytest.mark.parametrize("size", [0, 1, 2, 1023, 1024, 1075, 262_143, MAX_FILE_BYTES,
                                  MAX_FILE_BYTES + 1, 2**20 - 1, 23 * 10**6, 5 * 2**30, 2**41,
                                  2**52])
def test_sizes_read_as_the_upload_page_states_its_limit(size):
    assert file_size(size) == filesizeformat(size)


def test_a_file_of_exactly_the_size_limit_imports(tmp_path):
    path = write(tmp_path, "limit.yaml", padded_to(dump(valid_document()), MAX_FILE_BYTES))
    assert Path(path).stat().st_size == MAX_FILE_BYTES

    code, out, err = run("import_scenarios", path)

    assert (code, err) == (0, "")
    assert out.strip() == "imported: 1 created, 0 updated, 0 unchanged"


# --- YAML constructs -----------------------------------------------------------------------

BILLION_LAUGHS = "\n".join(
    ["a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    + [f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 9)}]"
       for i in range(8)]
) + "\n"


@pytest.mark.parametrize(("content", "expected"), [
    (BILLION_LAUGHS, "line 2, column 8: aliases (*a) are not allowed in a scenario file; "
                     "write the value out"),
    ("facts: " + "[" * 40 + "]" * 40 + "\n", "line 1, column 23: nested more than 16 levels deep"),
    ("correct: " + "1" * 5000 + "\n", "line 1, column 10: a number of 5000 characters; the "
                                      "limit is 20"),
])
def test_yaml_that_would_blow_up_is_refused_with_its_line(tmp_path, content, expected):
    path = write(tmp_path, "bomb.yaml", content)

    assert refused(path) == [f"{path}: {expected}"]


def test_a_key_written_twice_is_refused_rather_than_the_last_one_winning(tmp_path):
    text = dump(valid_document())
    second_canary = "canary: BAITBENCH-CANARY-00000000-0000-0000-0000-000000000000\n"
    path = write(tmp_path, "twice.yaml", text + second_canary)
    line = len(text.splitlines()) + 1

    assert refused(path) == [f"{path}: line {line}, column 1: the key 'canary' appears twice "
                             "in one mapping"]


# --- characters ----------------------------------------------------------------------------

def _line_and_column(text: str, marker: str) -> tuple[int, int]:
    index = text.index(marker)
    return text.count("\n", 0, index) + 1, index - text.rfind("\n", 0, index)


def with_raw_nul(document: dict, value: str) -> str:
    """The document as a file with a NUL byte written into `value` (PyYAML would escape it)."""
    text = dump(document)
    assert text.count(value) == 1
    return text.replace(value, value[:5] + "\x00" + value[5:])


def test_a_nul_byte_in_the_file_is_refused_naming_field_line_and_column(tmp_path):
    document = other_scenario_document("nul-raw")
    document["facts"][2]["text"] = "The plant was inspected in March."
    text = with_raw_nul(document, "The plant was inspected in March.")
    path = write(tmp_path, "nul.yaml", text)
    line, column = _line_and_column(text, "\x00")

    assert refused(path) == [f"{path}: facts[2].text: contains a NUL byte (U+0000) at line "
                             f"{line}, column {column}; {RULE}"]


@pytest.mark.parametrize(("escape", "description"), [
    ("\\0", "a NUL byte (U+0000)"),
    ("\\x1b", "a control character (U+001B)"),
    ("\\x85", "a control character (U+0085)"),
])
def test_an_escaped_control_character_is_refused_naming_its_field(tmp_path, escape, description):
    # Escapes in double-quoted YAML reach the value without passing the file-level scan.
    text = dump(other_scenario_document("escaped")).replace(
        "title: Scenario escaped", f'title: "Scenario{escape} escaped"')
    path = write(tmp_path, "escaped.yaml", text)

    line, _ = _line_and_column(text, "title: ")
    assert refused(path) == [f"{path}: line {line}: title: contains {description} "
                             f"at character 9; {RULE}"]


def test_an_escaped_lone_surrogate_is_refused_with_its_line(tmp_path):
    # libyaml refuses the escape itself; the schema's rule catches it from any other source.
    text = dump(other_scenario_document("surrogate")).replace(
        "title: Scenario surrogate", 'title: "Scenario\\ud800 surrogate"')
    path = write(tmp_path, "surrogate.yaml", text)
    line, _ = _line_and_column(text, "\\ud800")

    [problem] = refused(path)
    assert problem.startswith(f"{path}: malformed YAML at line {line}, column ")
    assert problem.endswith(": found invalid Unicode character escape code")
    _, problems = validate_scenario_document(valid_document(title="Green\ud800vale"))
    assert [problem.line("x.yaml") for problem in problems] == [
        f"x.yaml: title: contains a lone surrogate (U+D800) at character 6; {RULE}"]


def test_tabs_and_newlines_in_a_value_are_allowed(tmp_path):
    document = other_scenario_document("tabs")
    document["situation"] = "First line.\n\tIndented second line.\n"
    code, _, err = run("import_scenarios", write(tmp_path, "tabs.yaml", document))

    assert (code, err) == (0, "")
    assert "\tIndented" in Scenario.objects.get(slug="tabs").situation


def test_a_file_that_is_not_utf8_is_refused_with_the_byte_and_line(tmp_path):
    path = tmp_path / "latin1.yaml"
    path.write_bytes(dump(valid_document()).replace("Greenvale", "Gr\u00e9envale")
                     .encode("latin-1"))

    [line] = refused(str(path))
    assert line.startswith(f"{path}: not UTF-8 text (byte 0xe9 on line ")
    assert line.endswith("); save the file as UTF-8")


@pytest.mark.parametrize("command", ["validate_scenarios", "import_scenarios"])
def test_a_file_name_that_is_not_utf8_shows_its_byte(tmp_path, command):
    # A Latin-1 name on a UTF-8 system: Python reads its byte 0xe9 as the surrogate U+DCE9.
    name = os.fsencode(tmp_path) + b"/latin\xe9.yaml"
    with open(name, "wb") as handle:
        handle.write(b"slug: [")

    code, _, err = run(command, str(tmp_path))

    assert code == 1
    assert err.startswith(f"{tmp_path}/latin\\xe9.yaml: malformed YAML"), err
    assert "\\udce9" not in err and "\udce9" not in err


# --- canary --------------------------------------------------------------------------------

NEW_CANARY = "BAITBENCH-CANARY-11111111-2222-3333-4444-555555555555"


def test_a_re_import_that_changes_a_canary_is_refused(tmp_path):
    run("import_scenarios", str(GREENVALE))
    old = valid_document()["canary"]
    path = write(tmp_path, "greenvale.yaml", valid_document(canary=NEW_CANARY))

    [line] = refused(path)
    assert line == (
        f"{path}: canary: would change the canary of scenario 'greenvale-listeria' from "
        f"{old!r} to {NEW_CANARY!r}; the canary traces contamination, so it changes only when "
        "confirmed (--confirm-canary-change; in the admin upload, tick 'Confirm canary changes')"
    )
    assert Scenario.objects.get().canary == old


def test_a_confirmed_canary_change_imports_as_a_new_version(tmp_path):
    run("import_scenarios", str(GREENVALE))
    path = write(tmp_path, "greenvale.yaml", valid_document(canary=NEW_CANARY))

    code, out, err = run("import_scenarios", "--confirm-canary-change", path)

    assert (code, err) == (0, "")
    assert out.strip() == "imported: 0 created, 1 updated, 0 unchanged"
    scenario = Scenario.objects.get()
    assert scenario.canary == NEW_CANARY
    assert scenario.versions.count() == 2


def test_confirming_does_not_allow_taking_another_scenarios_canary(tmp_path):
    run("import_scenarios", str(GREENVALE))
    run("import_scenarios", write(tmp_path, "other.yaml", other_scenario_document("other")))
    path = write(tmp_path, "second.yaml", valid_document(slug="other"))

    lines = refused("--confirm-canary-change", path)
    assert lines == [f"{path}: canary: {valid_document()['canary']!r} is already used by "
                     "scenario 'greenvale-listeria'"]


def test_a_dry_run_reports_a_canary_change_and_writes_nothing(tmp_path):
    run("import_scenarios", str(GREENVALE))
    path = write(tmp_path, "greenvale.yaml", valid_document(canary=NEW_CANARY, title="New"))
    assert refused("--dry-run", path)[0].startswith(f"{path}: canary: would change")

    code, out, _ = run("import_scenarios", "--dry-run", "--confirm-canary-change", path)

    assert (code, out.strip()) == (0, "no problems: the files would import (nothing was "
                                      "written)")
    assert Scenario.objects.get().title != "New"


# --- the admin upload ----------------------------------------------------------------------

def _upload(name: str, content: str | bytes) -> SimpleUploadedFile:
    data = content.encode("utf-8") if isinstance(content, str) else content
    return SimpleUploadedFile(name, data, content_type="application/yaml")


def _messages(response) -> list[str]:
    """The upload's problems as listed on the page, then its verdict."""
    html = response.content.decode()
    assert "Nothing was imported:" in html
    return [*response.context["problems"], "Nothing was imported."]


def test_the_upload_refuses_a_canary_change_unless_the_box_is_ticked(curator_client):
    run("import_scenarios", str(GREENVALE))
    changed = dump(valid_document(canary=NEW_CANARY))

    response = curator_client.post(UPLOAD, {"files": [_upload("greenvale.yaml", changed)]})

    assert response.status_code == 200
    assert _messages(response)[0].startswith("greenvale.yaml: canary: would change the canary "
                                             "of scenario 'greenvale-listeria' from")
    assert "Confirm canary changes" in response.content.decode()
    assert Scenario.objects.get().canary != NEW_CANARY

    response = curator_client.post(UPLOAD, {"files": [_upload("greenvale.yaml", changed)],
                                            "confirm_canary_change": "on"})

    assert response.status_code == 302
    assert Scenario.objects.get().canary == NEW_CANARY


def test_the_upload_refuses_a_file_over_the_limit_as_a_form_error(curator_client):
    big = padded_to(dump(valid_document()), MAX_FILE_BYTES + 10)

    response = curator_client.post(UPLOAD, {"files": [_upload("big.yaml", big)]})

    assert response.status_code == 200
    assert _messages(response) == [
        f"big.yaml: too large (256.0\xa0KB, {MAX_FILE_BYTES + 10} bytes; the limit is "
        f"256.0\xa0KB, {MAX_FILE_BYTES} bytes)", "Nothing was imported."]
    assert not Scenario.objects.exists()


def test_a_refused_upload_states_sizes_as_the_page_does_and_that_nothing_was_imported(
        curator_client):
    """10,500,053 bytes against 262144 read as a puzzle beside the page's "256.0 KB"."""
    page = curator_client.get(UPLOAD).content.decode()
    assert "Each file may be at most 256.0\xa0KB." in page

    response = curator_client.post(UPLOAD, {"files": [_upload("huge.yaml", b"#" * 10500053)]})

    assert response.status_code == 200
    assert _messages(response) == ["huge.yaml: too large (10.0\xa0MB; the limit is "
                                   "256.0\xa0KB)", "Nothing was imported."]
    assert "Nothing was imported: 1 problem." in response.content.decode()
    assert not Scenario.objects.exists()


def test_the_upload_refuses_a_zip_member_over_the_limit(curator_client):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("set/big.yaml", padded_to(dump(valid_document()), MAX_FILE_BYTES + 1))
    upload = SimpleUploadedFile("set.zip", buffer.getvalue(), content_type="application/zip")

    response = curator_client.post(UPLOAD, {"files": [upload]})

    assert response.status_code == 200
    assert _messages(response) == [
        f"set.zip/set/big.yaml: too large (256.0\xa0KB, {MAX_FILE_BYTES + 1} bytes; the limit "
        f"is 256.0\xa0KB, {MAX_FILE_BYTES} bytes)", "Nothing was imported."]


def test_the_upload_reports_a_damaged_zip(curator_client):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as archive:
        archive.writestr("greenvale.yaml", dump(valid_document()))
    damaged = bytearray(buffer.getvalue())
    damaged[60:70] = b"XXXXXXXXXX"  # inside the member's data: its CRC no longer matches
    upload = SimpleUploadedFile("set.zip", bytes(damaged), content_type="application/zip")

    response = curator_client.post(UPLOAD, {"files": [upload]})

    assert response.status_code == 200
    assert "set.zip: a damaged zip" in response.content.decode()


def test_the_upload_names_a_nul_byte_by_file_and_field(curator_client):
    document = other_scenario_document("nul-upload")
    document["organisation"]["name"] = "Greenvale Dairy Cooperative"
    text = with_raw_nul(document, "Greenvale Dairy Cooperative")

    response = curator_client.post(UPLOAD, {"files": [_upload("nul.yaml", text)]})

    assert response.status_code == 200
    [problem, nothing] = _messages(response)
    assert problem.startswith("nul.yaml: organisation.name: contains a NUL byte (U+0000) at "
                              "line ")
    assert nothing == "Nothing was imported."


# --- without a database --------------------------------------------------------------------

def _manage(*args: str, tmp_path: Path) -> subprocess.CompletedProcess:
    """manage.py in a subprocess whose DATABASE_URL names a folder that does not exist."""
    missing = tmp_path / "no-such-folder" / "baitbench.sqlite3"
    env = {**os.environ, "DATABASE_URL": f"sqlite:///{missing}"}
    return subprocess.run(
        [sys.executable, "manage.py", *args], cwd=settings.BASE_DIR, env=env,
        capture_output=True, text=True, timeout=120, check=False,
    )


def test_validate_scenarios_needs_no_database(tmp_path):
    done = _manage("validate_scenarios", str(settings.SCENARIOS_DIR), tmp_path=tmp_path)

    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0].startswith("all ")
    assert done.stderr == ""
    assert not (tmp_path / "no-such-folder").exists()


def test_validate_scenarios_reports_problems_without_a_database(tmp_path):
    bad = other_scenario_document("bad")
    bad["knowledge_questions"][2]["correct"] = 5
    path = write(tmp_path, "bad.yaml", bad)

    done = _manage("validate_scenarios", path, tmp_path=tmp_path)

    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        f"{path}: line 185: knowledge_questions[2].correct: index 5 is outside the 4 options"]


def test_importing_without_a_database_says_so_without_a_traceback(tmp_path):
    done = _manage("import_scenarios", str(GREENVALE), tmp_path=tmp_path)

    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    assert done.stderr.splitlines()[0] == ("nothing imported: database error: unable to open "
                                           "database file")


# --- bad files: named, and the same from the upload and the commands -------------------------

def _zip(members: dict[str, str | bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, content in members.items():
            archive.writestr(name, content)
    return buffer.getvalue()


def test_an_empty_file_is_refused_naming_it_in_the_upload_and_the_commands(curator_client,
                                                                          tmp_path):
    """Django's own "The submitted file is empty." named no file."""
    response = curator_client.post(UPLOAD, {"files": [_upload("empty.yaml", b"")]})
    assert _messages(response) == ["empty.yaml: the file is empty", "Nothing was imported."]

    response = curator_client.post(UPLOAD, {"files": [_upload("set.zip", _zip({"e.yaml": ""}))]})
    assert _messages(response) == ["set.zip/e.yaml: the file is empty", "Nothing was imported."]

    path = write(tmp_path, "empty.yaml", "")
    assert refused(path) == [f"{path}: the file is empty"]
    code, _, err = run("validate_scenarios", path)
    assert (code, err.strip()) == (1, f"{path}: the file is empty")
    comments = write(tmp_path, "comments.yaml", "# nothing yet\n\n")
    assert refused(comments) == [f"{comments}: the file is empty (blank lines and comments only)"]
    assert not Scenario.objects.exists()


def _truncated_zip() -> bytes:
    return _zip({"greenvale.yaml": dump(valid_document())})[:-30]


@pytest.mark.parametrize("content", [random.Random(0).randbytes(500), b"", _truncated_zip()],
                         ids=["random-bytes", "empty", "truncated"])
def test_an_unreadable_zip_is_called_damaged_naming_it(curator_client, tmp_path, content):
    """It used to read "x.zip is neither a .yaml file nor a .zip"."""
    response = curator_client.post(UPLOAD, {"files": [_upload("x.zip", content)]})
    [problem, nothing] = _messages(response)
    assert problem.startswith("x.zip: a damaged zip (unreadable or truncated: ")
    assert nothing == "Nothing was imported."

    path = tmp_path / "x.zip"
    path.write_bytes(content)
    [line] = refused(str(path))
    assert line.startswith(f"{path}: a damaged zip (unreadable or truncated: ")
    code, _, err = run("validate_scenarios", str(path))
    assert (code, err.splitlines()) == (1, [line])
    assert not Scenario.objects.exists()


def test_a_zip_named_in_capitals_is_read_as_a_zip(curator_client, tmp_path):
    """SET.ZIP was refused on upload as "neither a .yaml file nor a .zip", and read as YAML
    on the command line."""
    content = _zip({"greenvale.yaml": dump(valid_document())})
    path = tmp_path / "SET.ZIP"
    path.write_bytes(content)
    assert run("validate_scenarios", str(path))[0] == 0

    response = curator_client.post(UPLOAD, {"files": [_upload("SET.ZIP", content)]})
    assert response.status_code == 302
    assert Scenario.objects.count() == 1


def test_a_zip_of_3000_bad_files_lists_50_problems_and_counts_the_rest(curator_client,
                                                                     tmp_path):
    content = _zip({f"s{number:04}.yaml": "a: [\n" for number in range(3000)})

    response = curator_client.post(UPLOAD, {"files": [_upload("many.zip", content)]})

    problems = response.context["problems"]
    assert len(problems) == 51
    assert problems[0] == ("many.zip/s0000.yaml: malformed YAML at line 2, column 1: did not "
                           "find expected node content")
    assert problems[-1] == "… and 2950 more problems in 2950 files"
    assert "Nothing was imported: 3000 problems." in response.content.decode()
    assert not Scenario.objects.exists()

    path = tmp_path / "many.zip"
    path.write_bytes(content)
    lines = refused(str(path))
    assert len(lines) == 51
    assert lines[0].startswith(f"{path}/s0000.yaml: malformed YAML at line 2, column 1")
    assert lines[-1] == "… and 2950 more problems in 2950 files"
    code, _, err = run("import_scenarios", str(path))
    assert err.splitlines()[-1] == "nothing imported: 3000 problem(s)"
    code, _, err = run("validate_scenarios", str(path))
    assert (code, err.splitlines()) == (1, lines)


def test_a_folder_does_not_skip_files_whose_suffix_is_upper_case(tmp_path):
    """`validate_scenarios FOLDER` (and `import_scenarios FOLDER`) read X.YAML and X.Yml as
    they read x.yaml: skipping them said "all 1 file(s) are valid" of a folder whose other
    file was broken, and an import of the folder left that file out without a word."""
    from scenarios_app.files import load_scenario_files

    (tmp_path / "good.yaml").write_text(
        (Path(settings.BASE_DIR) / "scenarios" / "greenvale-listeria.yaml").read_text())
    (tmp_path / "BROKEN.YAML").write_text("format: baitbench.scenario/1\n")
    (tmp_path / "notes.txt").write_text("not a scenario")
    problems = load_scenario_files([str(tmp_path)]).problems
    assert any(line.startswith(f"{tmp_path / 'BROKEN.YAML'}: ") for line in problems), problems
    assert not any("notes.txt" in line for line in problems)


# --- where -----------------------------------------------------------------------------------

def test_each_problem_names_the_line_its_field_starts_on(tmp_path):
    # The field's path alone left a curator counting list items in a 200-line file.
    document = valid_document()
    document["knowledge_questions"][2]["correct"] = "two"
    del document["facts"][1]["label"]
    text = dump(document)
    path = write(tmp_path, "lines.yaml", text)

    problems = refused(path)

    lines = text.splitlines()
    found = {}
    for problem in problems:
        where, field = problem.removeprefix(f"{path}: line ").split(": ")[:2]
        found[field] = lines[int(where) - 1]
    assert "correct: two" in found["knowledge_questions[2].correct"], found
    # A missing key: the line its mapping starts on (the fact that lacks a label).
    assert "id: F2" in found["facts[1].label"], found
