from __future__ import annotations

import pytest
from django.test import Client

from scenarios_app.tests.factories import make_staff


@pytest.fixture
def curator_client(db) -> Client:
    client = Client()
    client.force_login(make_staff("cora-curator", "curator"))
    return client


@pytest.fixture
def auditor_client(db) -> Client:
    client = Client()
    client.force_login(make_staff("aldo-auditor", "auditor"))
    return client
