"""The release that archive tests export, forge and import."""

from __future__ import annotations

import copy
import io

import pytest
from cryptography.hazmat.primitives.serialization import load_pem_private_key
from django.conf import settings
from django.core.management import call_command

from audits_app.archive.signing import key_id, key_pair_create, signing_key
from audits_app.publication.services import release_publish
from audits_app.tests.archives import HELD_OUT, PUBLIC, ArchiveKey
from audits_app.tests.factories import scenario_document
from audits_app.tests.stats_world import build_world, stats_release_create
from runs_app.models import Release, ReleaseStatus
from scenarios_app.services import scenario_apply
from tests.kept import world_kept


@pytest.fixture(scope="module")
def kept_calibrated(request, kept_small_demo_release, django_db_blocker):
    """Kept (tests/kept.py): built once for a module's tests, which only read it or change a
    row or two in their own savepoint (it cost a generate stage and a few hundred rows, some
    three seconds, per test)."""
    from audits_app.tests.calibration_world import calibrated_create

    yield from world_kept(request, django_db_blocker, lambda: calibrated_create(
        copy.deepcopy(kept_small_demo_release)))


@pytest.fixture
def calibrated(kept_calibrated, small_demo_release):
    """small_demo_release with every text read by two simulated positions and by two people
    (audits_app/tests/calibration_world.py): the release and its texts."""
    return copy.deepcopy(kept_calibrated)


def published_create(code: str = "arc.0", before_publishing=None) -> Release:
    """Release arc.0: demo.0's models on one public and one held-out scenario, T1 and T4
    under C0 and C2, run through every stage and published (the scenarios imported);
    `before_publishing(release)` adds to it what it should hold when it is published."""
    from runs_app.schemas import ReleaseConfig
    from runs_app.services import release_config_from_file, release_create

    scenario_apply(document=scenario_document(HELD_OUT, visibility="held-out"))
    data = release_config_from_file(settings.RELEASES_DIR / "demo.0.yaml").model_dump()
    data.update(code=code, scenarios=[PUBLIC, HELD_OUT], tasks=["T1", "T4"],
                conditions=["C0", "C2"], bootstrap={"seed": 3, "resamples": 200, "level": 0.95},
                arena={"held_share": 0}, reading_studies={"held_share": 0})  # every text public
    release_create(config=ReleaseConfig.model_validate(data))
    call_command("run_release", code, "--sync", stdout=io.StringIO(), stderr=io.StringIO())
    release = Release.objects.get(code=code)
    if before_publishing is not None:
        before_publishing(release)
    release_publish(release=release)
    release.refresh_from_db()
    return release


@pytest.fixture(scope="module")
def kept_published(request, kept_scenarios, django_db_blocker):
    """Kept (tests/kept.py): run once for a module's tests, each seeing it as built."""
    yield from world_kept(request, django_db_blocker, published_create)


@pytest.fixture
def published(kept_published, imported_scenarios):
    """Release arc.0 (`published_create`), published."""
    return copy.deepcopy(kept_published)


@pytest.fixture(scope="module")
def kept_audited(request, kept_scenarios, django_db_blocker):
    """Kept: release aud.0, as arc.0 but published with every kind of audit record
    (audits_app/tests/audit_records.py)."""
    from audits_app.tests.audit_records import audited_create

    yield from world_kept(request, django_db_blocker, audited_create)


@pytest.fixture
def audited(kept_audited, imported_scenarios):
    """Release aud.0 (`audit_records.audited_create`), published."""
    return copy.deepcopy(kept_audited)


@pytest.fixture(scope="module")
def kept_stats_release(request, kept_scenarios, django_db_blocker):
    """Kept (tests/kept.py): stats.0 (audits_app/tests/stats_world.py), a draft."""
    yield from world_kept(request, django_db_blocker, stats_release_create)


@pytest.fixture
def stats_release(kept_stats_release, imported_scenarios):
    return copy.deepcopy(kept_stats_release)


@pytest.fixture(scope="module")
def kept_scored_stats(request, kept_stats_release, django_db_blocker):
    """Kept: stats.0 with `build_world` run and its status scored."""
    def build():
        release = copy.deepcopy(kept_stats_release)
        build_world(release)
        Release.objects.filter(pk=release.pk).update(status=ReleaseStatus.SCORED)
        release.refresh_from_db()
        return release

    yield from world_kept(request, django_db_blocker, build)


@pytest.fixture
def scored_stats_release(kept_scored_stats, stats_release):
    """stats.0 with every text generated, all scored but none, and its status scored."""
    return copy.deepcopy(kept_scored_stats)


def _archive_key(directory, name: str) -> ArchiveKey:
    path = directory / f"{name}.pem"
    line = key_pair_create(path, name=name)
    private = load_pem_private_key(path.read_bytes(), password=None)
    return ArchiveKey(path=path, line=line, key_id=key_id(private.public_key()),
                      private=private)


@pytest.fixture
def archive_key(tmp_path, settings) -> ArchiveKey:
    """This instance's signing key, new, set as BAITBENCH_ARCHIVE_SIGNING_KEY sets it."""
    key = _archive_key(tmp_path, "here.example")
    settings.ARCHIVE_SIGNING_KEY_FILE = str(key.path)
    assert signing_key() is not None
    return key


@pytest.fixture
def other_key(tmp_path) -> ArchiveKey:
    """Another instance's key, trusted here only when a test says so."""
    return _archive_key(tmp_path, "elsewhere.example")
