"""The typed snapshot: old snapshots load, values keep their types, problems name their place."""

from __future__ import annotations

import copy
import json

import pytest

from audits_app.publication.snapshot_model import (
    SNAPSHOT_SCHEMA_VERSION,
    SnapshotError,
    snapshot_load,
    snapshot_load_json,
)
from audits_app.tests.factories import published_release_create

pytestmark = pytest.mark.django_db


@pytest.fixture
def snapshot() -> dict:
    data = copy.deepcopy(published_release_create(publish=False).snapshot)
    data["schema_version"] = SNAPSHOT_SCHEMA_VERSION
    return data


def test_a_snapshot_round_trips_unchanged(snapshot):
    assert snapshot_load(snapshot).as_data() == snapshot


def test_a_snapshot_frozen_before_the_model_loads_with_nothing_made_up(snapshot):
    old = copy.deepcopy(snapshot)
    for key in ("schema_version", "arena", "chart", "jurors"):
        old.pop(key, None)
    typed = snapshot_load(old)
    assert typed.schema_version == 0
    assert typed.arena.cells == [] and typed.jurors == []
    assert typed.as_data() == old  # defaults are read, never written back


def test_a_boolean_is_never_read_as_a_number(snapshot):
    snapshot["texts"][0]["honesty_index"] = True
    snapshot["leaderboards"]["honesty"]["rows"][0]["rank"] = "1"
    with pytest.raises(SnapshotError) as error:
        snapshot_load(snapshot)
    lines = str(error.value).splitlines()
    assert "snapshot.texts.0.honesty_index: Input should be a valid number" in lines
    assert "snapshot.leaderboards.honesty.rows.0.rank: Input should be a valid integer" in lines


def test_a_pair_is_checked_though_kept_as_its_json_object(snapshot):
    pairs = snapshot["leaderboards"]["honesty"]["pairs"]
    assert pairs, "the world's honesty board has pairs"
    pairs[0]["later"] = "kept"
    assert snapshot_load(snapshot).leaderboards["honesty"].pairs[0] == pairs[0]
    pairs[0]["diff"], pairs[-1]["significant"] = False, "yes"
    with pytest.raises(SnapshotError) as error:
        snapshot_load(snapshot)
    lines = str(error.value).splitlines()
    assert "snapshot.leaderboards.honesty.pairs.0.diff: Input should be a valid number" in lines
    assert (f"snapshot.leaderboards.honesty.pairs.{len(pairs) - 1}.significant: "
            f"Input should be a valid boolean") in lines


def test_the_json_text_reads_as_the_data_does(snapshot):
    """A publication's snapshot is read from its stored text (`pages.viewer.load_snapshot`):
    the same model, the same refusals, word for word."""
    snapshot["method"]["level"] = 1
    assert snapshot_load_json(json.dumps(snapshot)).as_data() == snapshot_load(
        snapshot).as_data() == snapshot
    snapshot["texts"][0]["honesty_index"] = True
    with pytest.raises(SnapshotError) as from_text:
        snapshot_load_json(json.dumps(snapshot))
    with pytest.raises(SnapshotError) as from_data:
        snapshot_load(snapshot)
    assert str(from_text.value) == str(from_data.value)
    snapshot["texts"][0]["honesty_index"] = 0.5
    snapshot["schema_version"] = SNAPSHOT_SCHEMA_VERSION + 1
    with pytest.raises(SnapshotError, match="newer than this code reads"):
        snapshot_load_json(json.dumps(snapshot))
    with pytest.raises(SnapshotError, match="snapshot: not JSON"):
        snapshot_load_json("{")


def test_a_snapshot_from_newer_code_or_of_another_shape_is_refused(snapshot):
    snapshot["schema_version"] = SNAPSHOT_SCHEMA_VERSION + 1
    with pytest.raises(SnapshotError, match="newer than this code reads"):
        snapshot_load(snapshot)
    with pytest.raises(SnapshotError, match="expected a JSON object, got list"):
        snapshot_load([snapshot])


def test_fields_it_does_not_name_are_kept(snapshot):
    snapshot["something_later"] = {"kept": [1, 2]}
    assert snapshot_load(snapshot).as_data()["something_later"] == {"kept": [1, 2]}


def test_a_whole_number_stays_whole_so_the_snapshot_dumps_as_stored(snapshot):
    snapshot["leaderboards"]["honesty"]["rows"][0]["point"] = 1
    snapshot["method"]["level"] = 1
    dumped = snapshot_load(snapshot).as_data()
    assert json.dumps(dumped, sort_keys=True) == json.dumps(snapshot, sort_keys=True)


def test_the_parts_the_pages_read_are_typed(snapshot):
    typed = snapshot_load(snapshot)
    assert typed.leaderboards["honesty"].rows[0].model == snapshot["leaderboards"][
        "honesty"]["rows"][0]["model"]
    assert [row.model for row in typed.refusal_rates] == [
        row["model"] for row in snapshot["refusal_rates"]]
    assert {row.scenario for row in typed.versus_control} == {
        row["scenario"] for row in snapshot["versus_control"]}
    assert typed.model_names() == {model["id"]: model["name"] for model in snapshot["models"]}


def test_a_publication_is_validated_once_per_process_and_hash(monkeypatch, client):
    from audits_app.pages import viewer

    world = published_release_create()
    calls = []
    for loader in ("snapshot_load", "snapshot_load_json"):
        real = getattr(viewer, loader)
        monkeypatch.setattr(viewer, loader,
                            lambda data, real=real: calls.append(1) or real(data))
    publication = viewer.publication_get(world.release.code)
    first = viewer.load_snapshot(publication)
    again = viewer.load_snapshot(viewer.publication_get(world.release.code))
    assert first is again and calls == [1]
    assert first.as_data() == world.snapshot
    for path in ("/releases/pub.0/", "/releases/pub.0/texts/", "/api/v1/releases/pub.0/",
                 "/api/v1/releases/pub.0/leaderboard/", "/releases/pub.0/"):
        assert client.get(path).status_code == 200, path
    assert calls == [1]  # pages and answers read the one typed snapshot
