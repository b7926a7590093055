"""The arena's small named world: a published release of demo.0's four fixture writers.

Two public scenarios and one held-out, T1 under C0-C3: texts written by the fixture provider,
scores written directly (as `audits_app.tests.test_selectors.build_world` does: candid the most
honest, spinner the most persuasive, refuser refusing damage control), then published through
the real publish service. The arena is neither prepared nor approved: tests do that.
"""

from __future__ import annotations

import copy
import csv
import io
import json
import re
import shutil
import zipfile
from collections.abc import Callable
from datetime import timedelta

import pytest
from django.conf import settings
from django.contrib.auth.models import Group, User
from django.core.cache import cache
from django.core.files.base import ContentFile
from django.db.models import F
from django.test import override_settings

from audits_app.arena.demo import demo_letter
from audits_app.arena.models import ArenaShowing, EthicsReview
from audits_app.arena.services import arena_open, ethics_review_record
from audits_app.publication.services import release_publish
from audits_app.tests.factories import scenario_document
from audits_app.tests.stats_world import build_world
from runs_app.models import Release, ReleaseStatus
from tests.kept import world_kept

PUBLIC = ["greenvale-listeria", "cobaltcloud-breach"]
HELD_OUT = "northmere-gas-outage"
WRITERS = ["fixture/candid", "fixture/advocate", "fixture/spinner", "fixture/refuser"]
# Every public address of arena.0: its pages, its download and its API answer.
ARENA_URLS = ["/arena/", "/arena/arena.0/", "/arena/arena.0/pair/",
              "/arena/arena.0/results/", "/arena/arena.0/results.csv",
              "/api/v1/releases/arena.0/arena/"]


@pytest.fixture(autouse=True)
def fresh_cache(settings, tmp_path):
    """Rate-limit counts, cached ratings and the navigation's codes must not leak between
    tests; uploaded letters go to a scratch folder."""
    settings.MEDIA_ROOT = tmp_path / "media"
    cache.clear()
    yield
    cache.clear()


def published_arena_release(code: str = "arena.0", *, held_share: float = 1.0,
                            study_share: float = 0.0,
                            before_publish: Callable[[Release], None] | None = None,
                            publish: bool = True) -> Release:
    """`before_publish` may change the scored release's rows before it is published;
    `publish=False` leaves it scored, for a test to publish."""
    from runs_app.schemas import ReleaseConfig
    from runs_app.services import release_config_from_file, release_create
    from scenarios_app.services import scenario_apply

    scenario_apply(document=scenario_document(HELD_OUT, visibility="held-out"))
    data = release_config_from_file(settings.RELEASES_DIR / "demo.0.yaml").model_dump()
    data.update(code=code, scenarios=[*PUBLIC, HELD_OUT], tasks=["T1"],
                conditions=["C0", "C1", "C2", "C3"],
                bootstrap={"seed": 7, "resamples": 200, "level": 0.95},
                # Every cell the arena's unless a test says otherwise: all pairs possible.
                arena={"held_share": held_share},
                reading_studies={"held_share": study_share})
    data["gate"]["max_unscored_share"] = 0.2  # build_world leaves one reading in nine unscored
    release = release_create(config=ReleaseConfig.model_validate(data))
    build_world(release)
    Release.objects.filter(pk=release.pk).update(status=ReleaseStatus.SCORED)
    release.refresh_from_db()
    if before_publish is not None:
        before_publish(release)
    if publish:
        release_publish(release=release)
    return Release.objects.get(pk=release.pk)


def same_words_as_public(holder, found: dict[str, int]) -> Callable[[Release], None]:
    """A `before_publish` that gives one text `holder` will hold (candid's, in the first held
    cell) the words of candid's text in a cell outside the holder's (one nobody holds when
    there is one), in other case, spacing and punctuation: a writer who wrote the same words
    in two cells. Their ids go into `found` (`held`, `public`)."""
    from audits_app.publication.held_cells import held_cells_draw
    from runs_app.models import Generation

    def change(release: Release) -> None:
        draws = held_cells_draw(release.parsed_config(), PUBLIC)
        held = draws[holder]
        taken = {cell for cells in draws.values() for cell in cells}
        candid = Generation.objects.filter(release=release, model__openrouter_id=WRITERS[0])
        by_cell = {(g.scenario_version.scenario.slug, g.task, g.condition, g.variant): g
                   for g in candid.select_related("scenario_version__scenario")}
        target = by_cell[held[0]]
        outside = [cell for cell in by_cell if cell not in held and cell[0] in PUBLIC]
        source = by_cell[min(outside, key=lambda cell: (cell in taken, cell))]
        words = "  ".join(source.text.upper().split()).replace(".", ";")
        Generation.objects.filter(pk=target.pk).update(text=words)
        found.update(held=target.pk, public=source.pk)

    return change


def arena_release_create() -> Release:
    # Only the three scenarios it uses: importing every shipped file costs a second.
    from scenarios_app.services import scenarios_import

    imported = scenarios_import(paths=[str(settings.SCENARIOS_DIR / f"{slug}.yaml")
                                       for slug in [*PUBLIC, HELD_OUT]])
    assert imported.ok, imported.problems
    return published_arena_release()


@pytest.fixture(scope="module")
def kept_arena_release(request, django_db_setup, django_db_blocker, tmp_path_factory):
    """Kept (tests/kept.py): published once for a module's tests, each seeing it as built."""
    def build() -> Release:
        with override_settings(MEDIA_ROOT=tmp_path_factory.mktemp("media")):
            return arena_release_create()

    yield from world_kept(request, django_db_blocker, build)


@pytest.fixture
def release(kept_arena_release, db):
    """arena.0, published (`published_arena_release`); the arena neither prepared nor open."""
    return copy.deepcopy(kept_arena_release)


def staff_user(username: str, *roles: str) -> User:
    user = User.objects.create_user(username, password="pw", is_staff=True)
    user.groups.set(Group.objects.filter(name__in=roles))
    return User.objects.get(pk=user.pk)  # a fresh permission cache


@pytest.fixture
def publisher(db):
    """Pat, a publisher: the one who opened the arena when the test has one open."""
    return User.objects.filter(username="pat").first() or staff_user("pat", "publisher")


@pytest.fixture
def auditor(db):
    return staff_user("audrey", "auditor")


def approve(release: Release, user, decision: str = EthicsReview.Decision.APPROVED,
            reference: str = "ERB-2026-014") -> EthicsReview:
    return ethics_review_record(
        release=release, user=user, reviewing_body="University Ethics Board",
        reference=reference, decided_on=release.publication.published_at.date(),
        decision=decision, document=ContentFile(demo_letter(), name="approval.pdf"),
    )


@pytest.fixture(scope="module")
def kept_open_arena(request, kept_arena_release, django_db_blocker, tmp_path_factory):
    """arena.0 approved and opened by Pat, once for a module's tests (tests/kept.py): opening
    measures how recognisable the writers are and draws the pairs, most of a vote test's time.
    With the folder its ethics letter was written to."""
    media = tmp_path_factory.mktemp("media")

    def build() -> tuple[Release, object]:
        with override_settings(MEDIA_ROOT=media):
            release = Release.objects.get(pk=kept_arena_release.pk)
            publisher = staff_user("pat", "publisher")
            approve(release, publisher)
            arena_open(release=release, user=publisher,
                       reason="Approved by the board; pilot week.")
        return Release.objects.get(pk=release.pk), media

    yield from world_kept(request, django_db_blocker, build)


@pytest.fixture
def open_arena(kept_open_arena, release):
    """arena.0, approved and open (`kept_open_arena`); its ethics letter in the test's media
    folder (`fresh_cache`)."""
    opened, media = kept_open_arena
    shutil.copytree(media, settings.MEDIA_ROOT, dirs_exist_ok=True)
    return copy.deepcopy(opened)


# --- a voter's round trip through the pages --------------------------------------------------

TOKEN = re.compile(r'name="pair" value="([^"]+)"')


def consent(client, code: str = "arena.0"):
    client.arena_next = None  # a new voter has no pair yet
    return client.post(f"/arena/{code}/consent/", {"agree": "on"})


def next_pair(client, code: str = "arena.0") -> tuple[str, str]:
    """The pair page's HTML and its vote token: the one the last vote answered with, as a
    browser shows it, or else the pair page's."""
    response = getattr(client, "arena_next", None) or client.get(f"/arena/{code}/pair/")
    client.arena_next = None
    assert response.status_code == 200, response.content[:500]
    html = response.content.decode()
    return html, TOKEN.search(html).group(1)


def read_for(seconds: float = 60) -> None:
    """Pretend the voter took this long over every pair shown so far (a quicker answer is a
    rate anomaly and becomes a shadow vote)."""
    ArenaShowing.objects.update(shown_at=F("shown_at") - timedelta(seconds=seconds))


def vote(client, token: str, code: str = "arena.0", **answers):
    """Send the vote form. A recorded vote answers with the next pair (200), which
    `next_pair` then shows, or with a redirect to the pair page when no pair follows."""
    response = client.post(f"/arena/{code}/vote/",
                           {"pair": token, "favourable": "left", **answers})
    recorded_with_pair = response.status_code == 200 and TOKEN.search(response.content.decode())
    client.arena_next = response if recorded_with_pair else None
    return response



def vote_next(client, code: str = "arena.0", seconds: float = 60, **answers):
    """Take the next pair, read it for `seconds`, and answer (as instructed on a check)."""
    _, token = next_pair(client, code)
    showing = ArenaShowing.objects.order_by("-pk").first()
    read_for(seconds)
    if showing.attention:
        answers = {**answers, "favourable": showing.attention}
    return vote(client, token, code, **answers)


def answer_pairs(client, count: int, code: str = "arena.0") -> list[str]:
    """The pages of `count` pairs in a row, each answered (as instructed on a check) so that
    the next is drawn: the pair page shows a pair still to answer again, never a new one."""
    pages = []
    for _ in range(count):
        page, token = next_pair(client, code)
        pages.append(page)
        showing = ArenaShowing.objects.order_by("-pk").first()
        read_for(60)
        vote(client, token, code, favourable=showing.attention or "left")
    return pages


def public_text_ids(client, code: str) -> set[int]:
    """Every text id an anonymous reader can reach: the text list (every page of it), the
    API's texts, the texts CSV and the public archive."""
    found: set[int] = set()
    url = f"/api/v1/releases/{code}/texts/"
    while url:
        answer = client.get(url).json()
        found |= {item["id"] for item in answer["results"]}
        url = answer.get("next")
    rows = csv.DictReader(io.StringIO(client.get(f"/api/v1/releases/{code}/texts.csv")
                                      .content.decode()))
    found |= {int(row["id"]) for row in rows}
    response = client.get(f"/releases/{code}/archive.zip")
    assert response.status_code == 200
    archive = zipfile.ZipFile(io.BytesIO(response.content))
    found |= {json.loads(line)["id"] for line in
              archive.read("texts.jsonl").decode().splitlines()}
    snapshot = json.loads(archive.read("snapshot.json"))
    found |= {text["id"] for text in snapshot["texts"]}
    return found
