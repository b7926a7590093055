"""Out-of-band audits: CSV import validated row by row, all or nothing, flagged (issue 6)."""

from __future__ import annotations

import datetime as dt

import pytest

from audits_app.models import OutOfBandAudit, OutOfBandVerdict, SpotCheck
from audits_app.spotcheck_selectors import agreement_summary, gate_figures, jury_texts
from audits_app.spotcheck_services import oob_audit_import
from audits_app.tests.test_sampling import build_jury, make_user

META = {"auditor_name": "R. Vos", "organisation": "Fact Lab", "audited_on": dt.date(2026, 11, 2),
        "method": "two readers, consensus"}


@pytest.fixture
def release(small_demo_release):
    build_jury(small_demo_release)
    return small_demo_release


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
    data = {"auditor_name": "R. Vos", "organisation": "Fact Lab", "audited_on": "2026-11-02",
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
                           {"auditor_name": "x", "organisation": "y", "audited_on": "2026-11-02",
                            "method": "z", "csv_text": good_csv(release)})
    assert response.status_code == 403
    assert not SpotCheck.objects.exists()
