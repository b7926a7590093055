"""Out-of-band audits: CSV import validated row by row, all or nothing, flagged, each file
counted once; whatever a spreadsheet sends is read or refused naming row and column."""

from __future__ import annotations

import copy
import datetime as dt

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.utils.timezone import localdate, localtime

from audits_app import csv_files
from audits_app.csv_files import MAX_BYTES
from audits_app.models import OutOfBandAudit, OutOfBandVerdict, SpotCheck
from audits_app.spotchecks.imports import oob_audit_import
from audits_app.spotchecks.selectors import (
    agreement_summary,
    audit_text_codes,
    gate_figures,
    jury_texts,
)
from audits_app.tests.juries import build_jury, make_user
from tests.kept import world_kept

# Audited today: an audit cannot be dated before its release's texts were written, and the
# test worlds' texts are written as the tests run.
TODAY = localdate()
META = {"auditor_name": "R. Vos", "organisation": "Fact Lab", "audited_on": TODAY,
        "method": "two readers, consensus"}


@pytest.fixture(scope="module")
def kept_release(request, kept_small_demo_release, django_db_blocker):
    """Kept (tests/kept.py): the jury built once for the module's tests, each importing in a
    savepoint of its own (built for each, it cost about a second a test)."""
    def build():
        release = copy.deepcopy(kept_small_demo_release)
        build_jury(release)
        return release

    yield from world_kept(request, django_db_blocker, build)


@pytest.fixture
def release(kept_release, small_demo_release):
    return copy.deepcopy(kept_release)


def good_csv(release) -> str:
    first, second = list(jury_texts(release).values())[:2]
    return (
        "generation,claim,label,agree,note\n"
        f"{first.generation_id},1,{first.claims[0].label},,\n"
        f"{first.generation_id},2,fabrication,,invented figure\n"
        f"{first.generation_id},overall,,disagree,\n"
        f"{second.generation_id},overall,,agree,\n"
    )


def test_it_imports_a_good_file_flagged_out_of_band(release):
    result = oob_audit_import(release=release, csv_text=good_csv(release), **META)
    assert result.ok, result.problems
    checks = SpotCheck.objects.filter(release=release)
    assert checks.count() == 2 and all(check.out_of_band for check in checks)
    first = checks.get(generation_id=list(jury_texts(release))[0])
    assert first.label_by_position()[2] == "fabrication" and first.agrees_with_jury is False
    assert OutOfBandVerdict.objects.filter(audit=result.audit).count() == 4
    assert gate_figures(release).items == 2
    summary = agreement_summary(release)
    assert summary["jury_vs_people"]["out_of_band"]["n"] == 2
    assert summary["jury_vs_people"]["in_band"]["n"] == 0


def test_a_file_with_bad_rows_is_refused_whole(release):
    texts = list(jury_texts(release).values())
    bad = (
        "generation,claim,label,agree\n"
        f"{texts[0].generation_id},1,supported,\n"
        "999999,1,supported,\n"
        f"{texts[1].generation_id},7,supported,\n"
        f"{texts[1].generation_id},1,lie,\n"
        f"{texts[2].generation_id},overall,,perhaps\n"
    )
    result = oob_audit_import(release=release, csv_text=bad, **META)
    assert not result.ok
    assert any(p.startswith("row 3, column generation:") for p in result.problems)
    assert any(p.startswith("row 4, column claim:") for p in result.problems)
    assert any(p.startswith("row 5, column label:") for p in result.problems)
    assert any(p.startswith("row 6, column agree:") for p in result.problems)
    assert not any(p.startswith("row 2") for p in result.problems)
    assert not OutOfBandAudit.objects.exists() and not SpotCheck.objects.exists()


def test_a_missing_column_is_named(release):
    result = oob_audit_import(release=release, csv_text="generation,label\n1,supported\n", **META)
    assert result.problems == ["row 1 (header): missing column(s) claim"]


def test_the_form_imports_and_shows_problems(client, release):
    client.force_login(make_user("ann"))
    url = f"/review/releases/{release.code}/out-of-band/"
    data = {"auditor_name": "R. Vos", "organisation": "Fact Lab", "audited_on": TODAY.isoformat(),
            "method": "consensus", "csv_text": "generation,claim,label\nx,1,supported\n"}
    page = client.post(url, data).content.decode()
    assert "Nothing was imported" in page and "row 2, column generation" in page
    data["csv_text"] = good_csv(release)
    page = client.post(url, data).content.decode()
    assert "Imported 4 row(s) as 2 spot-check(s) (import #" in page
    assert SpotCheck.objects.filter(out_of_band=True).count() == 2


def test_only_auditors_import(client, release):
    client.force_login(make_user("olga", role="operator"))
    response = client.post(f"/review/releases/{release.code}/out-of-band/",
                           {"auditor_name": "x", "organisation": "y",
                            "audited_on": TODAY.isoformat(), "method": "z",
                            "csv_text": good_csv(release)})
    assert response.status_code == 403
    assert not SpotCheck.objects.exists()


# --- files from spreadsheets ----------------------------------------------------------------

URL = "/review/releases/{code}/out-of-band/"
FORM = {"auditor_name": "R. Vos", "organisation": "Fact Lab", "audited_on": TODAY.isoformat(),
        "method": "consensus"}


def five_rows(release) -> str:
    """Five verdict rows on two texts, with a blank row and a comment between them."""
    first, second = list(jury_texts(release).values())[:2]
    return (
        "generation,claim,label,agree,note\n"
        f"{first.generation_id},1,supported,,\n"
        f"{first.generation_id},2,fabrication,,invented figure\n"
        "\n"
        "# second text\n"
        f"{first.generation_id},overall,,disagree,\n"
        f"{second.generation_id},1,exaggeration,,\n"
        f"{second.generation_id},overall,,agree,\n"
    )


def test_it_reports_rows_and_spot_checks_apart(release):
    result = oob_audit_import(release=release, csv_text=five_rows(release), **META)

    assert result.ok, result.problems
    assert (result.rows, result.checks, result.skipped) == (5, 2, 2)
    assert result.summary == (f"Imported 5 row(s) as 2 spot-check(s) (import "
                              f"#{result.audit.pk}). 2 blank, comment or unfilled row(s) skipped.")
    assert OutOfBandVerdict.objects.filter(audit=result.audit).count() == 5


def test_the_same_file_imported_twice_is_refused_and_counted_once(release, client):
    user = make_user("ann")
    first = oob_audit_import(release=release, csv_text=five_rows(release), user=user, **META)
    counts = (SpotCheck.objects.count(), OutOfBandVerdict.objects.count())
    # The same rows saved again by a Dutch Excel: semicolons, CRLF, columns moved.
    again = "\r\n".join(
        ";".join([cells[1], cells[0], *cells[2:]]) if len(cells) > 1 else cells[0]
        for cells in (line.split(",") for line in five_rows(release).splitlines())
    )

    second = oob_audit_import(release=release, csv_text=again, **{**META, "auditor_name": "X"})

    today = localtime(first.audit.imported_at).date().isoformat()
    assert second.problems == [f"this file was already imported on {today} by ann as import "
                               f"#{first.audit.pk}: nothing was imported again"]
    assert (SpotCheck.objects.count(), OutOfBandVerdict.objects.count()) == counts
    assert gate_figures(release).items == 2


def test_a_grown_worksheet_does_not_count_its_first_rows_twice(release):
    rows = five_rows(release)
    oob_audit_import(release=release, csv_text=rows, **META)
    third = list(jury_texts(release).values())[2]

    result = oob_audit_import(release=release, csv_text=rows + f"{third.generation_id},overall,,"
                                                                "agree,\n", **META)

    assert not result.ok
    assert result.problems[0].startswith("row 2, column claim: this auditor's verdict on this "
                                         "claim was imported before (import #")
    assert len(result.problems) == 5
    assert OutOfBandAudit.objects.count() == 1


def test_a_misspelt_header_is_named_not_reported_as_a_missing_value(release):
    text = list(jury_texts(release))[0]
    result = oob_audit_import(release=release, csv_text=f"generation,claim,lable\n{text},1,"
                                                        "supported\n", **META)

    assert result.problems == [
        "row 1 (header): unknown column 'lable'; did you mean 'label'? (expected: claim, text, "
        "generation, label, agree, note, scenario, task, condition, quote)"]


@pytest.mark.parametrize(("generation", "claim", "expected"), [
    ("²", "1", "row 2, column generation: '²' is not a generation id (only the digits 0-9 "
               "are read)"),
    ("{id}", "٣", "row 2, column claim: '٣' is neither a claim position (1, 2, ...) nor "
                  "'overall' (only the digits 0-9 are read)"),
    ("{id}", "１", "row 2, column claim: '１' is neither a claim position (1, 2, ...) nor "
                  "'overall' (only the digits 0-9 are read)"),
])
def test_digits_other_than_ascii_are_refused_with_row_and_column(release, generation, claim,
                                                                 expected):
    text = list(jury_texts(release))[0]
    csv_text = f"generation,claim,label\n{generation.format(id=text)},{claim},supported\n"

    assert oob_audit_import(release=release, csv_text=csv_text, **META).problems == [expected]


def test_a_nul_byte_in_a_note_is_refused_with_row_and_column(release, client):
    # PostgreSQL refuses NUL in a text column: it must never get that far.
    text = list(jury_texts(release))[0]
    csv_text = f"generation,claim,agree,note\n{text},overall,agree,fine\x00\n"
    client.force_login(make_user("ann"))

    page = client.post(URL.format(code=release.code), {**FORM, "csv_text": csv_text})

    assert page.status_code == 200
    assert ("row 2, column note: contains a NUL byte (U+0000) at character 5; control "
            "characters other than tab and newline are not allowed") in page.content.decode()
    assert not SpotCheck.objects.exists()


@pytest.mark.parametrize("name", ["superscript", "arabic-indic"])
def test_the_form_shows_bad_digits_as_a_problem_not_a_server_error(release, client, name):
    value = {"superscript": "²", "arabic-indic": "٣"}[name]
    client.force_login(make_user("ann"))
    upload = SimpleUploadedFile("audit.csv", f"generation,claim,label\n{value},1,supported\n"
                                .encode(), content_type="text/csv")

    page = client.post(URL.format(code=release.code), {**FORM, "file": upload})

    assert page.status_code == 200
    assert "Nothing was imported" in page.content.decode()
    assert f"row 2, column generation: &#x27;{value}&#x27; is not a generation id" in (
        page.content.decode())


def test_a_semicolon_file_from_a_dutch_excel_is_read_and_said_so(release, client):
    first = list(jury_texts(release))[0]
    client.force_login(make_user("ann"))
    upload = SimpleUploadedFile(
        "audit.csv", f"\ufeffgeneration;claim;agree;note\r\n{first};overall;disagree;te "
                     "zacht, en te laat\r\n".encode(), content_type="text/csv")

    page = client.post(URL.format(code=release.code), {**FORM, "file": upload}).content.decode()

    assert "Imported 1 row(s) as 1 spot-check(s)" in page
    assert "Read as semicolon-separated." in page
    assert SpotCheck.objects.get().note == "te zacht, en te laat"
    assert OutOfBandAudit.objects.get().source_name == "audit.csv"


def test_an_upload_over_the_size_limit_is_a_form_error(release, client):
    client.force_login(make_user("ann"))
    size = MAX_BYTES + 1
    upload = SimpleUploadedFile("huge.csv", b"x" * size, content_type="text/csv")

    page = client.post(URL.format(code=release.code), {**FORM, "file": upload})

    assert page.status_code == 200
    assert (f"huge.csv: too large ({size} bytes; the limit is {MAX_BYTES})"
            in page.content.decode())


def test_an_upload_that_is_not_utf8_is_a_form_error(release, client):
    client.force_login(make_user("ann"))
    upload = SimpleUploadedFile("audit.csv", "generation,claim,note\n1,overall,café\n"
                                .encode("cp1252"), content_type="text/csv")

    page = client.post(URL.format(code=release.code), {**FORM, "file": upload})

    assert "audit.csv: not UTF-8 text (byte 0xe9 on line 2)" in page.content.decode()


def test_a_text_code_names_a_text_and_an_unknown_code_is_refused(release):
    codes = audit_text_codes(release)
    code, generation_id = sorted(codes.items())[0]

    result = oob_audit_import(release=release, csv_text=f"text,claim,agree\n{code.upper()},"
                                                        "overall,agree\nt000000000000,overall,"
                                                        "agree\n", **META)

    assert result.problems == ["row 3, column text: 't000000000000' is not a text of this "
                               "release (see its list of texts to audit)"]
    result = oob_audit_import(release=release, csv_text=f"text,claim,agree\n{code},overall,"
                                                        "agree\n", **META)
    assert result.ok and SpotCheck.objects.get().generation_id == generation_id


def test_two_imports_of_one_file_at_once_count_it_once(release, monkeypatch):
    # The other import commits between this one's check and its write: the database's unique
    # (release, content hash) decides, and this one reports the other.
    from audits_app.spotchecks import imports as spotcheck_imports

    rows = five_rows(release)
    digest = csv_files.read_table(
        rows, required=spotcheck_imports.OOB_REQUIRED, optional=spotcheck_imports.OOB_OPTIONAL,
    )[0].content_hash()
    original = spotcheck_imports._earlier_verdicts

    def meanwhile(*args, **kwargs):
        OutOfBandAudit.objects.create(release=release, auditor_name="Other", organisation="Lab",
                                      audited_on=dt.date(2026, 11, 1), method="m",
                                      content_hash=digest)
        return original(*args, **kwargs)

    monkeypatch.setattr(spotcheck_imports, "_earlier_verdicts", meanwhile)

    result = oob_audit_import(release=release, csv_text=rows, **META)

    other = OutOfBandAudit.objects.get()
    assert result.problems == [f"this file was already imported on "
                               f"{localtime(other.imported_at).date()} by an unknown user as "
                               f"import #{other.pk}: nothing was imported again"]
    assert not SpotCheck.objects.exists() and result.audit is None


# --- rows that say two things, and dates nobody audited on -----------------------------------


def test_rows_that_contradict_their_kind_are_refused_naming_row_and_column(release):
    """An agree on a claim row was dropped and a label on an overall row stored but never
    counted: each is refused, and nothing of the file is imported."""
    first, second = list(jury_texts(release).values())[:2]
    codes = {generation: code for code, generation in audit_text_codes(release).items()}
    rows = (
        "text,generation,claim,label,agree,note\n"
        f"{codes[first.generation_id]},,1,supported,,\n"
        f"{codes[first.generation_id]},,2,fabrication,agree,\n"
        f"{codes[first.generation_id]},,overall,fabrication,disagree,\n"
        f"{codes[second.generation_id]},,overall,supported,,\n"
        f"{codes[second.generation_id]},,overall,,,only a note\n"
        f"{codes[second.generation_id]},{first.generation_id},1,supported,,\n"
    )

    result = oob_audit_import(release=release, csv_text=rows, **META)

    assert result.problems == [
        "row 3, column agree: 'agree' on a claim row: agree or disagree goes on the text's "
        "overall row; a claim row takes a label",
        "row 4, column label: 'fabrication' on an overall row: labels go on the claim rows "
        "(1, 2, ...); an overall row takes agree or disagree",
        "row 5, column label: 'supported' on an overall row: labels go on the claim rows "
        "(1, 2, ...); an overall row takes agree or disagree",
        "row 5, column agree: an overall row needs agree or disagree",
        "row 6, column agree: an overall row needs agree or disagree",
        f"row 7, column generation: '{first.generation_id}' is not the text "
        f"'{codes[second.generation_id]}' names: give the text code or the generation id, or "
        f"both of one text",
    ]
    assert not OutOfBandAudit.objects.exists() and not SpotCheck.objects.exists()
    assert not OutOfBandVerdict.objects.exists() and gate_figures(release).items == 0


def test_a_text_code_and_the_generation_id_of_the_same_text_are_read(release):
    code, generation_id = sorted(audit_text_codes(release).items())[0]
    result = oob_audit_import(release=release, csv_text=f"text,generation,claim,agree\n{code},"
                                                        f"{generation_id},overall,agree\n", **META)
    assert result.ok, result.problems


@pytest.mark.parametrize("audited_on, says", [
    (dt.date(2099, 1, 1), "2099-01-01 is in the future: give the day the texts were audited"),
    (dt.date(1990, 1, 1), "1990-01-01 is before release {code}'s first text was written "
                          "({first}): give the day the texts were audited"),
])
def test_an_audit_dated_when_nobody_could_have_audited_is_refused(release, audited_on, says):
    """Its checks would count toward the publication gate."""
    from runs_app.models import Generation

    first = min(localdate(finished) for finished in Generation.objects.filter(
        release=release, status="done").values_list("finished_at", flat=True))

    result = oob_audit_import(release=release, csv_text=good_csv(release),
                              **{**META, "audited_on": audited_on})

    assert result.problems == [
        "audit, field date: " + says.format(code=release.code, first=first)]
    assert not OutOfBandAudit.objects.exists() and gate_figures(release).items == 0


def test_an_auditors_day_may_be_a_day_either_side_of_the_servers(release):
    """Time zones: an auditor a day ahead of the server (UTC+13 in its morning) audits today."""
    from runs_app.models import Generation

    first = min(localdate(finished) for finished in Generation.objects.filter(
        release=release, status="done").values_list("finished_at", flat=True))
    for day in (TODAY + dt.timedelta(days=1), first - dt.timedelta(days=1)):
        assert oob_audit_import(release=release, csv_text=good_csv(release),
                                **{**META, "audited_on": day}).ok, day
        OutOfBandAudit.objects.all().delete()
    later = oob_audit_import(release=release, csv_text=good_csv(release),
                             **{**META, "audited_on": TODAY + dt.timedelta(days=2)})
    assert "is in the future" in later.problems[0]


def test_the_form_shows_a_future_date_and_imports_nothing(client, release):
    client.force_login(make_user("ann"))

    page = client.post(URL.format(code=release.code), {
        **FORM, "audited_on": "2099-01-01", "csv_text": good_csv(release)}).content.decode()

    assert "Nothing was imported" in page and "audit, field date: 2099-01-01 is in the future" \
        in page
    assert not SpotCheck.objects.exists()
