"""The arena in the admin: publishers record ethics reviews; nobody changes or deletes one, or
an opening; auditors and curators see neither the pairs nor the votes (they name the writers)."""

from __future__ import annotations

import hashlib

import pytest
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile

from audits_app.arena.demo import demo_letter
from audits_app.arena.models import ArenaEvent, EthicsReview
from audits_app.arena.tests.conftest import staff_user

pytestmark = pytest.mark.django_db

ADD = "/admin/audits_app/ethicsreview/add/"


def review_form(release, document: SimpleUploadedFile, **overrides) -> dict:
    return {"release": release.pk, "reviewing_body": "University Ethics Board",
            "reference": "ERB-7", "decided_on": "2026-11-02", "decision": "approved",
            "note": "", "document": document, **overrides}


def letter(name: str = "approval.pdf", content: bytes | None = None) -> SimpleUploadedFile:
    return SimpleUploadedFile(name, demo_letter() if content is None else content,
                              content_type="application/pdf")


def test_a_publisher_records_a_review_with_its_letter(client, release, publisher):
    client.force_login(publisher)

    response = client.post(ADD, review_form(release, letter()))

    assert response.status_code == 302, response.content.decode()[:2000]
    review = EthicsReview.objects.get()
    assert review.recorded_by == publisher and review.approves
    assert review.document_sha256 == hashlib.sha256(demo_letter()).hexdigest()
    assert review.document.read().startswith(b"%PDF-")


@pytest.mark.parametrize("document, message", [
    (letter("approval.docx"), "is not a .pdf file"),
    (letter(content=b"PK\x03\x04 a zip renamed"), "does not start like a PDF"),
])
def test_a_letter_that_is_not_a_pdf_is_refused_with_a_reason(client, release, publisher,
                                                             document, message):
    client.force_login(publisher)

    response = client.post(ADD, review_form(release, document))

    assert response.status_code == 200 and message in response.content.decode()
    assert not EthicsReview.objects.exists()


def test_a_decision_dated_in_the_future_is_refused(client, release, publisher):
    client.force_login(publisher)

    response = client.post(ADD, review_form(release, letter(), decided_on="2999-01-01"))

    assert "is in the future" in response.content.decode()
    assert not EthicsReview.objects.exists()


@pytest.mark.parametrize("role", ["auditor", "curator", "operator"])
def test_other_roles_can_neither_record_nor_change_a_review(client, open_arena, role):
    client.force_login(staff_user(f"someone-{role}", role))
    review = EthicsReview.objects.get()
    change = f"/admin/audits_app/ethicsreview/{review.pk}/change/"

    assert client.get(ADD).status_code == 403
    assert client.post(ADD, review_form(open_arena, letter())).status_code == 403
    page = client.get(change)
    assert page.status_code == 200 and 'name="_save"' not in page.content.decode()
    assert client.post(change, {"reference": "changed"}).status_code == 403
    assert EthicsReview.objects.get().reference == "ERB-2026-014"


def test_nobody_deletes_a_review_or_an_opening_not_even_a_superuser(client, open_arena):
    client.force_login(User.objects.create_superuser("root", password="pw"))
    review, event = EthicsReview.objects.get(), ArenaEvent.objects.get()

    for model, row in (("ethicsreview", review), ("arenaevent", event)):
        assert client.get(f"/admin/audits_app/{model}/{row.pk}/delete/").status_code == 403
        listing = client.get(f"/admin/audits_app/{model}/").content.decode()
        assert "delete_selected" not in listing
        response = client.post(f"/admin/audits_app/{model}/", {
            "action": "delete_selected", "_selected_action": [row.pk], "post": "yes"})
        assert response.status_code in (200, 302)
    assert EthicsReview.objects.count() == 1 and ArenaEvent.objects.count() == 1
    assert client.get("/admin/audits_app/arenaevent/add/").status_code == 403


@pytest.mark.parametrize("model", ["arenapair", "arenavote", "arenavoter", "simulatedpairvote",
                                   "recognisabilityrun", "arenaresult"])
def test_pairs_and_votes_are_for_publishers_only_and_read_only(client, open_arena, publisher,
                                                              auditor, model):
    client.force_login(auditor)
    assert client.get(f"/admin/audits_app/{model}/").status_code == 403

    client.force_login(publisher)
    assert client.get(f"/admin/audits_app/{model}/").status_code == 200
    assert client.get(f"/admin/audits_app/{model}/add/").status_code == 403


@pytest.mark.parametrize("role", ["auditor", "curator", "operator", "publisher"])
def test_a_reviews_page_links_its_letter_where_it_downloads(client, open_arena, role):
    """Media is not served: the letter's link is the arena's own download, for every role
    that sees the review, and it answers with the PDF."""
    client.force_login(staff_user(f"someone-{role}", role))
    review = EthicsReview.objects.get()

    page = client.get(f"/admin/audits_app/ethicsreview/{review.pk}/change/").content.decode()

    document = f"/arena/{open_arena.code}/ethics/{review.pk}/document/"
    assert f'href="{document}"' in page and review.document.url not in page
    assert b"".join(client.get(document).streaming_content).startswith(b"%PDF-")


@pytest.mark.parametrize("role", ["auditor", "curator", "operator", "publisher"])
def test_who_opened_the_arena_is_plain_text_to_those_who_may_not_open_users(client, open_arena,
                                                                            role):
    client.force_login(staff_user(f"someone-{role}", role))
    event = ArenaEvent.objects.get()
    review = EthicsReview.objects.get()
    user_page = f"/admin/auth/user/{event.by.pk}/change/"
    may_open = client.get(user_page).status_code == 200

    for page in (f"/admin/audits_app/arenaevent/{event.pk}/change/",
                 f"/admin/audits_app/ethicsreview/{review.pk}/change/"):
        shown = client.get(page)
        assert shown.status_code == 200
        assert event.by.username in shown.content.decode()
        assert (f'href="{user_page}"' in shown.content.decode()) == may_open


def test_a_superuser_still_gets_the_link_to_the_user(client, open_arena):
    client.force_login(User.objects.create_superuser("root", password="pw"))
    event = ArenaEvent.objects.get()

    page = client.get(f"/admin/audits_app/arenaevent/{event.pk}/change/").content.decode()

    assert f'href="/admin/auth/user/{event.by.pk}/change/"' in page
    assert page.count(f">{event.by.username}<") == 1  # the link, not the name beside it too


def another_release_with_a_study(release, publisher):
    """A second release, marked published (its publication never made), with a reading study."""
    from audits_app.models import ReadingStudy
    from runs_app.models import Release, ReleaseStatus

    other = Release.objects.create(code="other.0", language=release.language,
                                   status=ReleaseStatus.PUBLISHED, config=release.config,
                                   config_hash=release.config_hash)
    return other, ReadingStudy.objects.create(release=other, title="Elsewhere", seed=1,
                                              language=release.language, created_by=publisher)


def field_errors(response, field: str) -> str:
    form = response.context["adminform"].form
    return " ".join(form.errors.get(field, []))


def test_a_study_of_another_release_is_refused_on_its_field(client, release, publisher):
    """Not a server error from the service: the form says which study belongs where."""
    _, study = another_release_with_a_study(release, publisher)
    client.force_login(publisher)

    response = client.post(ADD, review_form(release, letter(), study=study.pk))

    assert response.status_code == 200
    assert (f"reading study {study.pk} belongs to release other.0, not {release.code}"
            in field_errors(response, "study"))
    assert not EthicsReview.objects.exists()


def test_a_release_without_its_publication_is_refused_on_its_field(client, release, publisher):
    other, study = another_release_with_a_study(release, publisher)
    client.force_login(publisher)

    response = client.post(ADD, review_form(other, letter(), study=study.pk))

    assert response.status_code == 200
    assert "release other.0 is not published" in field_errors(response, "release")
    assert field_errors(response, "study") == ""
    assert not EthicsReview.objects.exists()
