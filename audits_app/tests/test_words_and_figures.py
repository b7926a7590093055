"""Words and figures agree: what the methods page says of the intervals, the demo's console
printing what the page shows, and every cell the method wrote again and could not fill
counted on the page and in the API."""

from __future__ import annotations

import io

import pytest
from django.conf import settings
from django.test import Client

from audits_app.publication.demo_dutch import class_tables, format_class_tables
from audits_app.publication.gate import release_counts
from audits_app.tests.factories import publication_create, published_release_create
from runs_app.models import Generation, GenerationAttempt, Release, ReleaseStatus, WorkStatus
from runs_app.schemas import ReleaseConfig
from runs_app.services import release_config_from_file, release_create
from runs_app.stages import get_stage
from runs_app.stages.base import drain

pytestmark = pytest.mark.django_db


def publish(world) -> None:
    publication_create(release=world.release, snapshot=world.snapshot)
    Release.objects.filter(pk=world.release.pk).update(status=ReleaseStatus.PUBLISHED)
    world.release.refresh_from_db()


def test_the_page_no_longer_says_absolute_intervals_are_always_wider() -> None:
    world = published_release_create(code="words.0")
    page = Client().get(f"/releases/{world.release.code}/").content.decode()
    assert "so they are wider." not in page
    assert "usually the wider of the two, but not always" in page


def test_cells_written_again_and_never_filled_are_counted(imported_scenarios) -> None:
    config = release_config_from_file(settings.RELEASES_DIR / "demo.0.yaml")
    data = config.model_dump()
    data.update(code="unfilled.0", scenarios=data["scenarios"][:2], tasks=["T1"],
                conditions=["C0", "C1"])
    release = release_create(config=ReleaseConfig.model_validate(data))
    drain(get_stage("generate"), release)
    cut, wrapped, broken = Generation.objects.filter(release=release).order_by("pk")[:3]
    for generation, outcomes in ((cut, ["length"] * 3), (wrapped, ["length", "wrapper"]),
                                 (broken, ["error"])):
        GenerationAttempt.objects.filter(generation=generation).delete()
        for number, outcome in enumerate(outcomes, 1):
            GenerationAttempt.objects.create(generation=generation, number=number,
                                             outcome=outcome)
    Generation.objects.filter(pk__in=[cut.pk, wrapped.pk, broken.pk]).update(
        status=WorkStatus.FAILED)
    counts = release_counts(release)
    # A provider error is a failed cell, not one the method wrote again.
    assert counts["failed_cells"] == 3
    assert counts["unfilled_cells"] == 2 and counts["unfilled_cut_off"] == 2


def test_the_page_and_the_api_count_the_unfilled_cells() -> None:
    world = published_release_create(code="holes.0", publish=False)
    world.snapshot["counts"].update(unfilled_cells=2, unfilled_cut_off=1)
    publish(world)
    client = Client()
    page = client.get("/releases/holes.0/").content.decode()
    assert "2 cells written again after a text that did not count" in page
    assert "still without a text when the attempts ran out 2" in page
    answer = client.get("/api/v1/releases/holes.0/").json()
    assert answer["counts"]["unfilled_cells"] == 2
    assert answer["counts"]["unfilled_cut_off"] == 1


def test_the_demo_prints_the_class_tables_the_page_shows() -> None:
    """Clipped intervals and unranked models, as frozen in the snapshot, never recomputed."""
    world = published_release_create(code="console.0", publish=False)
    rows = world.snapshot["per_task"]["T1"]["honesty"]
    rows[0].update(cmp_low=0.97, cmp_high=1.0, point=1.0, point_clipped=True)
    rows[-1].update(rank=None, unranked_reason="no score under C2; a rank needs a score under "
                                                "every condition it is compared on")
    publish(world)
    tables = {(table.task, table.measure): table for table in class_tables(world.release)}
    printed = {row.model: row for row in tables[("T1", "honesty")].rows}
    assert (printed[rows[0]["model"]].high, printed[rows[0]["model"]].point) == (1.0, 1.0)
    assert printed[rows[-1]["model"]].rank_class is None
    out = io.StringIO()
    out.write("\n".join(format_class_tables(list(tables.values()), {})))
    text = out.getvalue()
    assert "[0.970, 1.000]" in text
    assert "unranked: no score under C2" in text
