"""Reads behind the public pages and the API: a release's frozen snapshot, seen by one viewer.

Everything public comes from `Publication.snapshot` (issue 5), never from live tables, except
a text's body and its jury verdicts (`Generation`, `JurorVerdict`, `Claim`) and the pinned
scenario versions' content, read only for a published release: the database refuses every
change to those rows (baitbench_site.immutability). Names are never read live: models and
jurors are named by the snapshot, whatever the model registry says today. Held-out scenarios, their
texts and confidential facts are for staff only (DESIGN section 8): `snapshot_for_viewer`
removes them from a copy of the snapshot before any page or answer sees it.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from django.db.models import Q
from django.http import Http404

from audits_app.models import Publication
from runs_app.models import CrossExamTurn, Generation, JurorVerdict, Release, ReleaseScenario
from scenarios_app.models import Visibility

METRICS = ("honesty", "persuasion", "misleading")
TEXT_FILTERS = ("model", "scenario", "task", "condition")
LEADERBOARD_COLUMNS = ["metric", "model", "model_name", "rank", "point", "abs_low", "abs_high",
                       "cmp_low", "cmp_high", "n_texts", "coverage", "scenarios",
                       "refusal_rate", "higher_is_better", "rule", "label"]
TEXT_COLUMNS = ["id", "model", "scenario", "task", "condition", "variant", "visibility", "refusal",
                "claims", "omission", "knowledge_harm", "honesty_index", "persuasion",
                "attitude_effect", "baseline_gain", "misleading", "dont_know", "uptake",
                "frame_adoption", "reveal_effect", "steadfastness", "honesty_under_pressure",
                "confidential_disclosed",
                "jurors_scored"]


@dataclass(frozen=True)
class PublishedRelease:
    """A release's snapshot as one viewer sees it. For staff looking at a release that is
    not published yet, `draft` is set: the snapshot was computed just now and the publication
    is an unsaved stand-in (no date, no hash)."""

    publication: Publication
    snapshot: dict[str, Any]  # already filtered for the viewer
    draft: Any = None  # audits_app.drafts.Draft for an unpublished release

    @property
    def release(self) -> Release:
        return self.publication.release

    @property
    def code(self) -> str:
        return self.publication.release.code


def is_staff(user) -> bool:
    return bool(user and user.is_authenticated and user.is_staff)


def publication_get(code: str) -> Publication | None:
    """The publication without its snapshot: `publication_snapshot` loads that, once."""
    return (Publication.objects.select_related("release").defer("snapshot")
            .filter(release__code=code).first())


# A publication never changes, and its snapshot hash names its content, so a parsed snapshot
# can be kept per process: a warm page costs one small query instead of decoding megabytes
# of JSON on every request.
SNAPSHOT_CACHE_SIZE = 8
_snapshots: OrderedDict[tuple[int, str], dict[str, Any]] = OrderedDict()
_snapshots_lock = threading.Lock()


def publication_snapshot(publication: Publication) -> dict[str, Any]:
    """The full snapshot (never mutate it: it is shared between requests)."""
    key = (publication.pk, publication.snapshot_hash)
    with _snapshots_lock:
        if key in _snapshots:
            _snapshots.move_to_end(key)
            return _snapshots[key]
    snapshot = Publication.objects.values_list("snapshot", flat=True).get(pk=publication.pk)
    with _snapshots_lock:
        _snapshots[key] = snapshot
        while len(_snapshots) > SNAPSHOT_CACHE_SIZE:
            _snapshots.popitem(last=False)
    return snapshot


def published_release_get(code: str, user) -> PublishedRelease:
    """The release's snapshot as this viewer may see it; 404 when it is not published."""
    publication = publication_get(code)
    if publication is None:
        raise Http404("No published release with this code.")
    return published_from(publication, user)


# Draft pages name every text's writer and the jury's verdict: for someone who checks texts
# blind that would undo the blinding (issue 10: a pending check's writer and jury label
# appear nowhere its auditor can look).
SEES_DRAFTS_PERMISSIONS = ("audits_app.publish_release", "runs_app.operate_release",
                           "scenarios_app.change_scenario")


def may_see_draft(user, release: Release) -> bool:
    """May this user see the release before publication (its pages marked DRAFT)? Staff may,
    except an auditor who does not also publish, operate or curate, and except anyone with
    a spot-check of this release still to do."""
    if not is_staff(user):
        return False
    from audits_app.models import SpotCheck
    from audits_app.spotcheck_services import RECORD_PERMISSION

    if SpotCheck.objects.filter(release=release, auditor=user,
                                status=SpotCheck.Status.ASSIGNED).exists():
        return False
    if user.is_superuser or not user.has_perm(RECORD_PERMISSION):
        return True
    return any(user.has_perm(permission) for permission in SEES_DRAFTS_PERMISSIONS)


def release_view_get(code: str, user) -> PublishedRelease:
    """A published release for anyone; for staff who may see it (`may_see_draft`), an
    unpublished one too, computed now and marked as a draft (`audits_app.drafts`). Anyone
    else gets a 404 for a draft."""
    publication = publication_get(code)
    if publication is not None:
        return published_from(publication, user)
    release = Release.objects.filter(code=code).first() if is_staff(user) else None
    if release is None or not may_see_draft(user, release):
        raise Http404("No published release with this code.")
    return draft_view(release)


def draft_view(release: Release) -> PublishedRelease:
    from audits_app.drafts import draft_get

    snapshot, draft = draft_get(release)
    stand_in = Publication(release=release, published_at=None, config_hash=release.config_hash,
                           snapshot_hash="", gate_override_reason="")
    return PublishedRelease(stand_in, snapshot, draft=draft)


def published_from(publication: Publication, user) -> PublishedRelease:
    return PublishedRelease(
        publication, snapshot_for_viewer(publication_snapshot(publication), user))


def public_scenario_slugs(snapshot: dict[str, Any]) -> set[str]:
    return {s["slug"] for s in snapshot.get("scenarios", [])
            if s.get("visibility") == Visibility.PUBLIC}


def snapshot_for_viewer(snapshot: dict[str, Any], user) -> dict[str, Any]:
    """Staff see everything; anyone else loses every row about a held-out scenario."""
    if is_staff(user):
        return snapshot
    public = public_scenario_slugs(snapshot)
    visible = dict(snapshot)
    visible["scenarios"] = [s for s in snapshot.get("scenarios", []) if s["slug"] in public]
    visible["texts"] = [t for t in snapshot.get("texts", [])
                        if t.get("scenario") in public and t.get("visibility") == "public"]
    for key in ("versus_control", "baseline_without_text", "anchors"):
        visible[key] = [row for row in snapshot.get(key, []) if row.get("scenario") in public]
    visible["scenario_content"] = {slug: content for slug, content
                                   in (snapshot.get("scenario_content") or {}).items()
                                   if slug in public}
    visible["release"] = _release_without_held_out(snapshot.get("release") or {}, public)
    return visible


def _release_without_held_out(release: dict[str, Any], public: set[str]) -> dict[str, Any]:
    """The frozen config names every scenario; anonymous viewers see the public ones only."""
    config = release.get("config")
    if not isinstance(config, dict) or not isinstance(config.get("scenarios"), list):
        return release
    scenarios = [item for item in config["scenarios"] if _config_slug(item) in public]
    # Adds to a count already there: the public view of a public view (a public archive
    # imported elsewhere) says what the original said.
    held_out = config.get("held_out_scenarios", 0) + len(config["scenarios"]) - len(scenarios)
    rest = {key: value for key, value in config.items() if key != "held_out_scenarios"}
    return {**release, "config": {**rest, "scenarios": scenarios,
                                  "held_out_scenarios": held_out}}


def _config_slug(item: Any) -> str | None:
    """A config scenario entry: `slug`, a pinned `slug@hash`, or a mapping with a slug."""
    if isinstance(item, str):
        return item.split("@", 1)[0]
    return item.get("slug") if isinstance(item, dict) else None


def model_names(snapshot: dict[str, Any]) -> dict[str, str]:
    return {m["id"]: m.get("name") or m["id"] for m in snapshot.get("models", [])}


def filter_texts(texts: list[dict[str, Any]], params) -> list[dict[str, Any]]:
    """Texts matching every given filter (`model`, `scenario`, `task`, `condition`)."""
    wanted = {key: params.get(key) for key in TEXT_FILTERS if params.get(key)}
    return [t for t in texts if all(str(t.get(k)) == v for k, v in wanted.items())]


ORDERABLE_TEXT_KEYS = {"id", "model", "scenario", "task", "condition", "variant", "refusal",
                       "honesty_index", "persuasion", "misleading"}


def order_texts(texts: list[dict[str, Any]], order: str) -> list[dict[str, Any]]:
    """Texts sorted by one key (`-key`: descending); texts without a value come last either
    way. An unknown key leaves the snapshot's order."""
    key = order.removeprefix("-")
    if key not in ORDERABLE_TEXT_KEYS:
        return texts
    present = [t for t in texts if t.get(key) is not None]
    missing = [t for t in texts if t.get(key) is None]
    present.sort(key=lambda t: (t[key], t.get("id", 0)), reverse=order.startswith("-"))
    return present + missing


def text_get(published: PublishedRelease, text_id: int) -> tuple[dict[str, Any], str]:
    """A text's scores (from the snapshot) and body; 404 for a text this viewer may not see."""
    row = next((t for t in published.snapshot.get("texts", []) if t.get("id") == text_id), None)
    if row is None:
        raise Http404("No such text in this release.")
    body = (Generation.objects.filter(_this_text("", text_id),
                                      release_id=published.release.pk)
            .values_list("text", flat=True).first())
    return row, body or ""


def _this_text(generation: str, text_id: int) -> Q:
    """The rows of a snapshot's text, in the query that reads them (`generation`: the path
    to the generation). A release imported from an archive keeps the text ids of the
    instance that published it, as its snapshot names them; `ImportedText` links each to
    the row it became here (`audits_app.archive`)."""
    prefix = f"{generation}__" if generation else ""
    return (Q(**{f"{prefix}pk": text_id, "release__archive_import__isnull": True})
            | Q(**{f"{prefix}imported_as__snapshot_id": text_id}))


def text_verdicts(published: PublishedRelease, text_id: int) -> list[dict[str, Any]]:
    """The jury's verdicts on a published text, claims included (two queries), each with its
    juror's name from the snapshot. The verdict rows are read live: the database refuses every
    change to rows under a published release. Names are not read from the model registry: they
    may change after publication (an operator's rename, a later release file). A juror is
    matched by its model id, which is the same in an instance that imported the release."""
    jurors = {juror.get("id"): juror.get("name") or juror.get("id")
              for juror in published.snapshot.get("jurors") or []}
    verdicts = (JurorVerdict.objects.filter(_this_text("generation", text_id),
                                            release_id=published.release.pk)
                .select_related("juror").prefetch_related("claim_rows").order_by("seat"))
    return [{"verdict": verdict, "juror_name": jurors.get(verdict.juror.openrouter_id, ""),
             "claims": list(verdict.claim_rows.all())} for verdict in verdicts]


def text_interview(published: PublishedRelease, text_id: int, body: str) -> list[dict[str, Any]]:
    """A T4 text's cross-examination as the judge read it (one query): answer 1 is the text
    itself, answers 2-6 each follow a journalist's question; beside each answer the judge's
    label and reason. Read live, as the verdicts are: the rows never change once published."""
    turns = list(CrossExamTurn.objects.filter(_this_text("generation", text_id),
                                              release_id=published.release.pk)
                 .order_by("number").values("kind", "number", "question", "answer", "labels",
                                            "status"))
    if not turns:
        return []
    labels = next((turn["labels"] for turn in turns if turn["kind"] == "labels"), None) or []
    answers = [{"number": 1, "question": "", "answer": body}]
    answers += [{"number": turn["number"], "question": turn["question"],
                 "answer": turn["answer"]}
                for turn in turns if turn["kind"] == "turn" and turn["status"] == "done"]
    for answer, label in zip(answers, labels, strict=False):
        answer["label"], answer["reason"] = label.get("label", ""), label.get("reason", "")
    return answers


def leaderboard_rows(snapshot: dict[str, Any]) -> list[dict[str, Any]]:
    """Every measure's rows (the CSV), in the release's measure order, each with its
    coverage and refusal rate beside it."""
    names = model_names(snapshot)
    boards = snapshot.get("leaderboards") or {}
    rows = []
    for metric in measure_keys(snapshot):
        board = boards[metric]
        extra = {"higher_is_better": board.get("higher_is_better"), "rule": board.get("rule"),
                 "label": board.get("label") or metric}
        for row in board.get("rows", []):
            rows.append({"metric": metric, "model_name": names.get(row["model"], row["model"]),
                         **extra, **row})
    return rows


def measure_keys(snapshot: dict[str, Any]) -> list[str]:
    """The snapshot's measures in page order (`method.measures`; older snapshots: METRICS)."""
    boards = snapshot.get("leaderboards") or {}
    listed = [m["key"] for m in (snapshot.get("method") or {}).get("measures") or []]
    ordered = [key for key in listed or METRICS if key in boards]
    return ordered + sorted(key for key in boards if key not in ordered)


def published_releases(user=None) -> list[dict[str, Any]]:
    """One row per publication; only the small parts of each snapshot are fetched. Held-out
    scenarios are counted for staff only, as every other page and answer counts them."""
    staff = is_staff(user)
    rows = Publication.objects.order_by("-published_at").values(
        "release__code", "snapshot__release__title", "snapshot__release__language",
        "published_at", "config_hash", "snapshot_hash", "snapshot__models", "snapshot__scenarios",
    )
    return [
        {"code": r["release__code"], "title": r["snapshot__release__title"] or "",
         "language": r["snapshot__release__language"] or "", "published_at": r["published_at"],
         "config_hash": r["config_hash"], "snapshot_hash": r["snapshot_hash"],
         "models": len(r["snapshot__models"] or []),
         "scenarios": sum(1 for s in r["snapshot__scenarios"] or []
                          if staff or s.get("visibility") == Visibility.PUBLIC)}
        for r in rows
    ]


def published_scenarios(user) -> list[dict[str, Any]]:
    """Scenarios of published releases with their labelled facts, from the pinned versions."""
    staff = is_staff(user)
    pinned: dict[tuple[str, str], dict[str, Any]] = {}
    for row in Publication.objects.values("release__code", "snapshot__scenarios"):
        for scenario in row["snapshot__scenarios"] or []:
            if not staff and scenario.get("visibility") != Visibility.PUBLIC:
                continue
            key = (scenario["slug"], scenario["version_hash"])
            entry = pinned.setdefault(key, {**scenario, "releases": []})
            entry["releases"].append(row["release__code"])
    # The versions the published releases pin, by the slug inside their content (a version
    # never changes, while a scenario row's slug may be edited after publication). A release
    # imported from a public archive pins a copy whose confidential facts were withheld, under
    # a hash of its own: it is found through the release's pin, not by the hash its snapshot
    # names.
    pins = ReleaseScenario.objects.filter(release__publication__isnull=False).values(
        "release__code", "scenario_version__content_hash", "scenario_version__content")
    exact, by_release = {}, {}
    for pin in pins:
        content = pin["scenario_version__content"]
        slug = content.get("slug")
        exact[(slug, pin["scenario_version__content_hash"])] = content
        by_release[(pin["release__code"], slug)] = content
    result = []
    for key, entry in sorted(pinned.items()):
        content = exact.get(key) or next(
            (by_release[(code, key[0])] for code in entry["releases"]
             if (code, key[0]) in by_release), {})
        result.append({
            **entry,
            "language": content.get("language", ""),
            "description": (content.get("organisation") or {}).get("description", ""),
            "situation": content.get("situation", ""),
            "facts": content.get("facts", []),
            "uncertainties": content.get("uncertainties", []),
            "confidential": content.get("confidential", []) if staff else None,
        })
    return result


def published_leaderboards() -> list[dict[str, Any]]:
    """Every publication's models and ranked measures, oldest first: only those parts of
    each snapshot are fetched (leaderboards are public whole; no row is held out)."""
    rows = Publication.objects.order_by("published_at", "pk").values(
        "release__code", "published_at", "snapshot__release__title", "snapshot__models",
        "snapshot__leaderboards")
    return [{"code": r["release__code"], "title": r["snapshot__release__title"] or "",
             "published_at": r["published_at"], "models": r["snapshot__models"] or [],
             "leaderboards": r["snapshot__leaderboards"] or {}} for r in rows]
