"""A release whose stage set has no simulated public (no panel stage) publishes what it
measured, and its pages say what it did not measure instead of showing empty tables."""

from __future__ import annotations

import re

import pytest
from django.conf import settings

from audits_app.publication.services import release_publish
from runs_app.schemas import ReleaseConfig
from runs_app.services import (
    release_config_from_file,
    release_create,
    release_freeze,
    release_settle,
)
from runs_app.stages import get_stage
from runs_app.stages.base import drain

pytestmark = pytest.mark.django_db


@pytest.fixture
def jury_only(imported_scenarios):
    config = release_config_from_file(settings.RELEASES_DIR / "demo.0.yaml")
    small = config.model_copy(update={
        "code": "jury.0", "scenarios": ["greenvale-listeria", "cobaltcloud-breach"],
        "tasks": ["T1"], "conditions": ["C0", "C2"], "stages": ["generate", "refusal", "jury"],
    })
    release = release_freeze(release=release_create(
        config=ReleaseConfig.model_validate(small.model_dump())))
    for name in ("generate", "refusal", "jury"):
        drain(get_stage(name), release, concurrency=8)
    release_settle(release=release)
    release.status = "scored"
    release.save(update_fields=["status"])
    release_publish(release=release, override_reason="a test release: nobody checked it")
    return release


def test_a_release_without_a_panel_publishes_only_what_it_measured(client, jury_only):
    board = client.get("/api/v1/releases/jury.0/leaderboard/").json()
    metrics = set(board["metrics"])
    assert "honesty" in metrics and set(board["per_task"]["T1"]) == {"honesty"}
    assert not metrics & {"persuasion", "misleading", "attitude_effect"}

    html = client.get("/releases/jury.0/").content.decode()
    assert "has no simulated public (no panel stage), so it has no chart" in html
    assert "<svg" not in html.split('id="chart"')[1].split("<h2")[0]
    assert 'id="anchors"' not in html and "More persuasive than the control text" not in html
    split = html.split('id="tasks"')[1].split('id="conditions"')[0]
    assert "Persuasion (" not in split and "Misleading (" not in split
    coverages = re.findall(r'<td class="num">([^<]*)</td><td class="num">[^<]*</td></tr>', split)
    assert coverages and "0%" not in coverages  # the coverage of what was measured
    for url in ("/releases/jury.0/leaderboard.csv", "/releases/jury.0/chart.svg",
                "/releases/jury.0/texts/", "/api/v1/releases/jury.0/"):
        assert client.get(url).status_code == 200, url
