"""The publisher's page: prepare (in the background), open and close with a reason."""

from __future__ import annotations

import pytest
from django_q.models import OrmQ

from audits_app.arena import tasks
from audits_app.arena.models import ArenaEvent, ArenaPair
from audits_app.arena.tests.conftest import approve

pytestmark = pytest.mark.django_db

MANAGE = "/arena/arena.0/manage/"


def test_a_publisher_prepares_opens_and_closes_from_the_page(client, release, publisher):
    client.force_login(publisher)
    approve(release, publisher)

    refused = client.post(MANAGE, {"action": "open", "reason": "Ready"})
    assert refused.status_code == 400 and "prepare the arena first" in refused.content.decode()

    assert client.post(MANAGE, {"action": "prepare"}).status_code == 302
    assert OrmQ.objects.count() == 1 and not ArenaPair.objects.exists()
    assert "Queued" in client.get(MANAGE).content.decode()
    assert tasks.prepare_arena("arena.0", publisher.pk) == ArenaPair.objects.count() > 0

    assert client.post(MANAGE, {"action": "open", "reason": ""}).status_code == 400
    assert client.post(MANAGE, {"action": "open", "reason": "Board approved"}).status_code == 302
    assert client.post(MANAGE, {"action": "close", "reason": "Pilot over"}).status_code == 302
    assert list(ArenaEvent.objects.order_by("at", "pk").values_list("action", "reason", "by")) == [
        ("open", "Board approved", publisher.pk), ("close", "Pilot over", publisher.pk)]


def test_other_staff_may_look_but_not_act(client, open_arena, auditor):
    client.force_login(auditor)

    assert client.get(MANAGE).status_code == 200
    assert client.post(MANAGE, {"action": "close", "reason": "No"}).status_code == 403
    assert ArenaEvent.objects.count() == 1


def test_anonymous_visitors_are_sent_to_log_in(client, open_arena):
    assert client.get(MANAGE).status_code == 302
    assert client.get("/arena/arena.0/ethics/1/document/").status_code == 302


def test_staff_download_the_decision_letter(client, open_arena, auditor):
    from audits_app.arena.demo import demo_letter
    from audits_app.arena.models import EthicsReview

    client.force_login(auditor)
    review = EthicsReview.objects.get()

    response = client.get(f"/arena/arena.0/ethics/{review.pk}/document/")

    assert response.status_code == 200 and response["Content-Type"] == "application/pdf"
    assert b"".join(response.streaming_content) == demo_letter()
