"""What auditors get for an out-of-band audit: the texts under codes that do not tell the
writer, a worksheet and a template that import back; auditors only."""

from __future__ import annotations

import csv
import io

import pytest
from django.utils.timezone import localdate

from audits_app.models import SpotCheck
from audits_app.spotchecks.imports import oob_audit_import
from audits_app.spotchecks.selectors import audit_text_codes, jury_texts
from audits_app.statistics.agreement import LABELS
from audits_app.tests.juries import JURORS, build_jury, make_user
from runs_app.models import Generation, LlmModel

META = {"auditor_name": "R. Vos", "organisation": "Fact Lab",
        "audited_on": localdate(), "method": "worksheet"}  # not before the texts were written


@pytest.fixture
def release(small_demo_release):
    build_jury(small_demo_release)
    return small_demo_release


def urls(code: str) -> dict[str, str]:
    base = f"/review/releases/{code}/out-of-band"
    return {"texts": f"{base}/texts/", "worksheet": f"{base}/texts.csv",
            "template": f"{base}/template.csv"}


def writers(release) -> set[str]:
    """Every way a page could name a writing model."""
    models = LlmModel.objects.filter(generations__release=release).distinct()
    return ({model.openrouter_id for model in models} | {model.display_name for model in models}
            | set(JURORS))


def rows_of(response) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(response.content.decode())))


def test_the_list_names_every_scored_text_by_code_and_never_its_writer(client, release):
    client.force_login(make_user("ann"))

    page = client.get(urls(release.code)["texts"]).content.decode()

    codes = audit_text_codes(release)
    assert len(codes) == len(jury_texts(release)) > 0
    assert all(f"<code>{code}</code>" in page for code in codes)
    assert not any(name in page for name in writers(release))
    assert not any(f"<td>{label}</td>" in page for label in LABELS)


def test_the_worksheet_lists_claims_without_labels_in_an_order_that_hides_the_writer(client,
                                                                                   release):
    client.force_login(make_user("ann"))

    response = client.get(urls(release.code)["worksheet"])

    assert response["Content-Type"].startswith("text/csv")
    rows = rows_of(response)
    assert list(rows[0]) == ["text", "scenario", "task", "condition", "claim", "quote", "label",
                             "agree", "note"]
    assert not any(name in response.content.decode() for name in writers(release))
    assert {row["label"] for row in rows} == {""}
    texts = jury_texts(release)
    codes = audit_text_codes(release)
    for code, generation_id in codes.items():
        mine = [row for row in rows if row["text"] == code]
        assert [row["claim"] for row in mine] == [
            *(str(claim.position) for claim in texts[generation_id].claims), "overall"]
    order = [(row["scenario"], row["task"], row["condition"], row["text"]) for row in rows]
    assert order == sorted(order)
    assert not set(codes) & {str(generation_id) for generation_id in codes.values()}


def test_a_filled_in_worksheet_imports_and_its_unfilled_rows_are_skipped(client, release):
    client.force_login(make_user("ann"))
    rows = rows_of(client.get(urls(release.code)["worksheet"]))
    code = rows[0]["text"]
    for row in rows:
        if row["text"] == code:
            row["label"] = "supported" if row["claim"] != "overall" else ""
            row["agree"] = "agree" if row["claim"] == "overall" else ""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(rows[0]))
    writer.writeheader()
    writer.writerows(rows)

    result = oob_audit_import(release=release, csv_text=buffer.getvalue(), **META)

    filled = sum(1 for row in rows if row["text"] == code)
    assert result.ok, result.problems
    assert (result.rows, result.checks, result.skipped) == (filled, 1, len(rows) - filled)
    check = SpotCheck.objects.get()
    assert check.generation_id == audit_text_codes(release)[code]
    assert check.agrees_with_jury is True


def test_the_template_explains_itself_and_imports_once_its_example_is_uncommented(client,
                                                                                  release):
    client.force_login(make_user("ann"))

    template = client.get(urls(release.code)["template"])

    assert template["Content-Disposition"] == (
        f'attachment; filename="{release.code}-out-of-band.csv"')
    text = template.content.decode()
    assert text.splitlines()[0] == "text,claim,label,agree,note"
    assert oob_audit_import(release=release, csv_text=text, **META).problems == [
        "the file has a header but no rows (7 blank or comment row(s)): nothing to import"]
    result = oob_audit_import(release=release, csv_text=text.replace("# t", "t"), **META)
    assert result.ok, result.problems
    assert (result.rows, result.checks) == (2, 1)


def test_a_text_opens_blind_with_its_claims_numbered(client, release):
    client.force_login(make_user("ann"))
    code, generation_id = sorted(audit_text_codes(release).items())[0]
    generation = Generation.objects.get(pk=generation_id)

    page = client.get(f"{urls(release.code)['texts']}{code}/").content.decode()

    assert 'id="claim-1"' in page
    assert generation.scenario_version.scenario.title in page
    assert not any(name in page for name in writers(release))
    assert not any(f"<td>{label}</td>" in page for label in LABELS)
    assert client.get(f"{urls(release.code)['texts']}t000000000000/").status_code == 404


@pytest.mark.parametrize("page", ["texts", "worksheet", "template", "text"])
def test_only_auditors_see_the_texts_to_audit(client, release, page):
    code = sorted(audit_text_codes(release))[0]
    url = urls(release.code).get(page) or f"{urls(release.code)['texts']}{code}/"

    assert client.get(url).status_code == 302  # to the login page
    for role in ("operator", "curator", "publisher"):
        client.force_login(make_user(f"someone-{role}", role=role))
        assert client.get(url).status_code == 403
    client.force_login(make_user("ann"))
    assert client.get(url).status_code == 200
