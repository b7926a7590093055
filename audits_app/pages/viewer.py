"""Reads behind the public pages and the API: a release's frozen snapshot, seen by one viewer.

Everything public comes from `Publication.snapshot`, never from live tables, except
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
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from django.core.cache import cache
from django.db.models import Exists, OuterRef, Q, QuerySet, TextField
from django.db.models.functions import Cast
from django.http import Http404

from audits_app import query_params
from audits_app.arena.models import ArenaEvent
from audits_app.models import Publication, StudyTextsReveal
from audits_app.models.archive import PRODUCED_HERE, Provenance, release_provenance
from audits_app.publication import same_words
from audits_app.publication.drafts import draft_get
from audits_app.publication.held_cells import (
    Holder,
    held_cells,
    held_parts,
    text_cell,
    withheld_cells,
    withheld_holders,
)
from audits_app.publication.snapshot_model import (
    ReleaseEntry,
    ReleaseSnapshot,
    TextEntry,
    snapshot_load,
    snapshot_load_json,
)
from audits_app.spotchecks.selectors import normalised_quote
from baitbench_site.roles import is_staff, may_publish, may_see_draft
from runs_app.models import (
    AgentRun,
    CrossExamTurn,
    Generation,
    JurorVerdict,
    ReaderResponse,
    Release,
    ReleaseScenario,
    Stimulus,
)
from scenarios_app.models import Visibility

METRICS = ("honesty", "persuasion", "misleading")
TEXT_FILTERS = ("model", "scenario", "task", "condition")
# New columns go last, so that a spreadsheet reading columns by position keeps working.
LEADERBOARD_COLUMNS = ["metric", "model", "model_name", "rank", "point", "abs_low", "abs_high",
                       "cmp_low", "cmp_high", "n_texts", "coverage", "scenarios",
                       "refusal_rate", "higher_is_better", "rule", "label", "unranked_reason",
                       "point_clipped"]
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
    snapshot: ReleaseSnapshot  # already filtered for the viewer
    draft: Any = None  # audits_app.publication.drafts.Draft for an unpublished release
    # The scenarios whose per-model figures `snapshot_for_viewer` left out for this viewer,
    # with who holds each (`scenarios_held`): the pages and answers say why.
    figures_held: Mapping[str, tuple[Holder | str, ...]] = field(default_factory=dict)

    @property
    def release(self) -> Release:
        return self.publication.release

    @property
    def code(self) -> str:
        return self.publication.release.code

    @property
    def provenance(self) -> Provenance:
        """Produced here, or imported (verified or not): every page of an imported,
        unverified release says so."""
        return PRODUCED_HERE if self.draft else release_provenance(self.publication.release)



def publication_get(code: str) -> Publication | None:
    """The publication without its snapshot: `load_snapshot` reads that, once."""
    return (Publication.objects.select_related("release", "release__archive_import")
            .defer("snapshot").filter(release__code=code).first())


# A publication never changes, and its snapshot hash names its content, so its typed snapshot
# can be kept per process: a warm page costs one small query instead of decoding megabytes
# of JSON on every request, and the snapshot is validated once per process, not per request.
SNAPSHOT_CACHE_SIZE = 8

_snapshots: OrderedDict[tuple[int, str], ReleaseSnapshot] = OrderedDict()
_snapshots_lock = threading.Lock()


def load_snapshot(source: Publication | ReleaseSnapshot | dict[str, Any]) -> ReleaseSnapshot:
    """The one way a reader gets a snapshot: typed (`publication.snapshot_model`). A
    publication's is validated once per process and snapshot hash, and shared (it is frozen);
    stored JSON (an archive's, a draft's) is validated on each call; a typed snapshot is
    returned as it is."""
    if isinstance(source, ReleaseSnapshot):
        return source
    if isinstance(source, dict):
        return snapshot_load(source)
    key = (source.pk, source.snapshot_hash)
    with _snapshots_lock:
        if key in _snapshots:
            _snapshots.move_to_end(key)
            return _snapshots[key]
    typed = _publication_snapshot_read(source)
    with _snapshots_lock:
        typed = _snapshots.setdefault(key, typed)
        _snapshots.move_to_end(key)
        while len(_snapshots) > SNAPSHOT_CACHE_SIZE:
            _snapshots.popitem(last=False)
    return typed


def _publication_snapshot_read(publication: Publication) -> ReleaseSnapshot:
    """Validated from the stored JSON text when the row came without its snapshot (pydantic
    reads the text faster than Python decodes it), from the decoded value when it came with it."""
    if "snapshot" in publication.__dict__:
        return snapshot_load(publication.snapshot)
    return snapshot_load_json(
        Publication.objects.filter(pk=publication.pk)
        .annotate(stored=Cast("snapshot", output_field=TextField()))
        .values_list("stored", flat=True).get())


def published_release_get(code: str, user) -> PublishedRelease:
    """The release's snapshot as this viewer may see it; 404 when it is not published."""
    publication = publication_get(code)
    if publication is None:
        raise Http404("No published release with this code.")
    return published_from(publication, user)


def published_release_named(code: str, user) -> PublishedRelease:
    """`published_release_get` for an answer about several releases: its 404 names the code."""
    publication = publication_get(code)
    if publication is None:
        raise Http404(f"No published release has the code {shown_code(code)}.")
    return published_from(publication, user)


def shown_code(code: str) -> str:
    printable = "".join(character for character in code if character.isprintable())[:60]
    return f"'{printable}'" if printable else "given"


# Draft pages name every text's writer and the jury's verdict: for someone who checks texts
# blind that would undo the blinding (a pending check's writer and jury label
# appear nowhere its auditor can look).



def release_view_get(code: str, user) -> PublishedRelease:
    """A published release for anyone; for staff who may see it (`may_see_draft`), an
    unpublished one too, computed now and marked as a draft (`publication.drafts`). Anyone
    else gets a 404 for a draft."""
    publication = publication_get(code)
    if publication is not None:
        return published_from(publication, user)
    release = Release.objects.filter(code=code).first() if is_staff(user) else None
    if release is None or not may_see_draft(user, release):
        raise Http404("No published release with this code.")
    return draft_view(release, user)


def draft_view(release: Release, user) -> PublishedRelease:
    """An unpublished release as it would be published now, for staff who may see it. A
    draft holds nothing itself, but its texts may have the words of texts another release
    holds blind (its twins, `withheld_generations`: the same writers on the same scenarios
    write the same words again), and a twin shown with its writer names the held text's.
    For staff who do not publish they are left out as held texts are, and so are the
    per-model rows of their scenarios (`PER_MODEL_BY_SCENARIO`, said why: `TWINS`)."""
    snapshot, draft = draft_get(release)
    stand_in = Publication(release=release, published_at=None, config_hash=release.config_hash,
                           snapshot_hash="", gate_override_reason="")
    twins = {row["pk"] for row in withheld_texts(user, release.pk)}
    if not twins:
        return PublishedRelease(stand_in, snapshot, draft=draft)
    scenarios = {text.scenario for text in snapshot.texts if text.id in twins}
    snapshot = snapshot.model_copy(update={
        "texts": [text for text in snapshot.texts if text.id not in twins],
        **{key: [row for row in getattr(snapshot, key) if row.scenario not in scenarios]
           for key in PER_MODEL_BY_SCENARIO}})
    return PublishedRelease(stand_in, snapshot, draft=draft,
                            figures_held={slug: (TWINS,) for slug in sorted(scenarios)})


def published_from(publication: Publication, user) -> PublishedRelease:
    snapshot = load_snapshot(publication)
    revealed = revealed_holders(publication.release_id)
    return PublishedRelease(publication, snapshot_for_viewer(snapshot, user, revealed=revealed),
                            figures_held=scenarios_held(snapshot, user, revealed))


# Which holders of a release's held cells have made their texts public, kept in the shared
# cache: a reveal (the arena's closing, `arena.services`; reading studies' reveal,
# `calibration.studies.services`) deletes the key; a process whose cache is its own sees it
# within this many seconds, and until then keeps the texts held a little longer, never the
# other way round (a reveal is never undone, so a kept reveal stays true).
REVEALED_UNKNOWN_SECONDS = 60


def revealed_key(release_id: int) -> str:
    return f"held-texts-revealed:{release_id}"


def revealed_holders(release_id: int) -> frozenset[Holder]:
    """The holders whose held texts are public: the arena once it has closed (or was closed
    without ever opening), reading studies once a publisher revealed theirs."""
    revealed = cache.get(revealed_key(release_id))
    if revealed is None:
        found = {holder: reveal.filter(release_id=release_id).exists()
                 for holder, reveal in _reveals().items()}
        revealed = revealed_remember(release_id, found)
    return revealed


def arena_texts_revealed(release_id: int) -> bool:
    return Holder.ARENA in revealed_holders(release_id)


def _reveals() -> dict[Holder, Any]:
    """Per holder, the rows whose existence for a release makes its held texts public."""
    return {Holder.ARENA: ArenaEvent.objects.filter(action=ArenaEvent.Action.CLOSE),
            Holder.READING_STUDIES: StudyTextsReveal.objects.all()}


def reveal_subqueries(release: OuterRef | int) -> dict[str, Exists]:
    """Whether each holder has revealed its texts, as subqueries another query can carry
    (annotation names `revealed_<holder>`)."""
    return {f"revealed_{holder.value}": Exists(reveal.filter(release=release))
            for holder, reveal in _reveals().items()}


def revealed_remember(release_id: int, found: dict[Holder, bool]) -> frozenset[Holder]:
    """Keep what a query found (`revealed_holders`): for good once every holder has
    revealed, for a while before."""
    revealed = frozenset(holder for holder, done in found.items() if done)
    cache.set(revealed_key(release_id), revealed,
              None if revealed == frozenset(Holder) else REVEALED_UNKNOWN_SECONDS)
    return revealed


def public_scenario_slugs(snapshot: ReleaseSnapshot) -> set[str]:
    """The scenarios anyone may see."""
    return {s.slug for s in snapshot.scenarios if s.visibility == Visibility.PUBLIC}


# Who holds a scenario's cells, and until when, as the pages and answers say it.
# A draft's scenario whose texts have the words of texts another release holds (`draft_view`).
TWINS = "twins"
HELD_FOR = {Holder.ARENA: "the release's arena, until the arena closes",
            Holder.READING_STUDIES: "the release's reading studies, until they are revealed",
            TWINS: "another release's arena or reading studies, which show texts with the same "
                   "words blind, until it makes them public"}
# The snapshot's parts with a row per model and scenario: on a scenario whose texts are held,
# they tell which model wrote the more favourable texts there (whoever judged a blind pair of
# that scenario learns its writers), so they are held with the texts. Only those rows: every
# overall figure includes every scenario, by design, as the publication froze it.
PER_MODEL_BY_SCENARIO = ("versus_control", "baseline_without_text")


def scenarios_held(snapshot: ReleaseSnapshot, user,
                   revealed: frozenset[Holder] = frozenset()) -> dict[str, tuple[Holder, ...]]:
    """The scenarios whose cells the release still holds from this viewer, with who holds
    each: none for publishers (who see everything), the scenarios of every cell held and not
    yet revealed for anyone else (`publication.held_cells`; whole scenarios are held). The
    one rule `snapshot_for_viewer` applies to a held scenario's per-model rows."""
    if may_publish(user):
        return {}
    found: dict[str, tuple[Holder, ...]] = {}
    for holder in withheld_holders(snapshot, revealed):
        for slug in sorted({cell[0] for cell in held_cells(snapshot, holder)}):
            found[slug] = (*found.get(slug, ()), holder)
    return found


def figures_held_because(holders: tuple[Holder | str, ...]) -> str:
    """Why a held scenario's page and answers carry no per-model figures."""
    return ("Each model's figures on this scenario are held for "
            + " and for ".join(HELD_FOR[holder] for holder in holders)
            + ": they would tell which model wrote the more favourable of its texts, which are "
              "read blind until then. The release's overall figures include this scenario.")


def snapshot_for_viewer(snapshot: ReleaseSnapshot, user, *,
                        revealed: frozenset[Holder] = frozenset()) -> ReleaseSnapshot:
    """Publishers (and superusers, who hold every permission) see everything. Every text of
    a cell held for the arena or for reading studies is left out until that holder has
    revealed its texts (`publication.held_cells`) for everyone else, staff of the other
    roles included: only publishers may know the writers of blind pairs and study texts, so
    an operator, curator or auditor gets a held text's page, list rows and CSV lines as an
    anonymous visitor does (404, absent). So are the per-model rows of a held scenario
    (`PER_MODEL_BY_SCENARIO`, `scenarios_held`), not the overall figures. Anyone not staff
    also loses every row about a held-out scenario. A shallow copy: the parts it keeps are
    the shared snapshot's own (frozen); the stored snapshot, frozen and hashed, is never
    changed."""
    if may_publish(user):
        return snapshot
    held = withheld_cells(snapshot, revealed)
    held_scenarios = {cell[0] for cell in held}  # whole scenarios are held (`scenarios_held`)
    figures = {key: [row for row in getattr(snapshot, key) if row.scenario not in held_scenarios]
               for key in PER_MODEL_BY_SCENARIO}
    if is_staff(user):
        if not held:
            return snapshot
        return snapshot.model_copy(update={
            "texts": [t for t in snapshot.texts if text_cell(t) not in held], **figures})
    public = public_scenario_slugs(snapshot)
    return snapshot.model_copy(update={
        "scenarios": [s for s in snapshot.scenarios if s.slug in public],
        "texts": [t for t in snapshot.texts
                  if t.scenario in public and t.visibility == "public"
                  and text_cell(t) not in held],
        **{key: [row for row in rows if row.scenario in public]
           for key, rows in {**figures, "anchors": snapshot.anchors}.items()},
        "scenario_content": {slug: content for slug, content
                             in snapshot.scenario_content.items() if slug in public},
        "release": _release_without_held_out(snapshot.release, public),
    })


def may_download_staff_archive(user, published: PublishedRelease) -> bool:
    """The staff archive names every text's writer: staff may download it, but while the
    release's arena or reading studies still withhold texts only publishers may (the writers
    of blind pairs and study texts are theirs alone to know, as on every page)."""
    if not is_staff(user):
        return False
    return may_publish(user) or published.draft is not None or not withheld_cells(
        published.snapshot, revealed_holders(published.release.pk))


def withheld_generations(release_id: int | None = None) -> Q | None:
    """The rows of every text a published release still holds back, as a filter on
    `Generation` (None when no release holds any): what the generation admin and the
    out-of-band audit's texts leave out for staff who do not publish, as `snapshot_for_viewer`
    leaves them off the pages. With them, their *twins*: the texts of every other release with
    a held text's words (`Generation.words_key`). The same writers on the same scenarios write
    the same words again (the fixture writers always, seeded models too), and a twin listed
    with its writer (a draft's generation admin, a spot-check of it) names the held text's.
    With `release_id`, that release's texts alone: those it holds, and its twins of texts
    other releases hold. One query reads the held cells of every publication (not whole
    snapshots); reveals are cached, and so are the held texts' words
    (`same_words.held_words_keys`): a published text never changes."""
    query = None
    for row in Publication.objects.values("pk", "snapshot_hash", "release_id",
                                          *(f"snapshot__{holder.value}" for holder in Holder)):
        holder_id = row["release_id"]
        cells = frozenset(withheld_cells(
            held_parts({holder.value: row[f"snapshot__{holder.value}"] for holder in Holder}),
            revealed_holders(holder_id)))
        if not cells:
            continue
        held = _cells_rows(holder_id, cells)
        parts = [held] if release_id in (None, holder_id) else []
        keys = same_words.held_words_keys((row["pk"], row["snapshot_hash"]), cells,
                                          Generation.objects.filter(held))
        if keys and release_id != holder_id:
            twins = Q(words_key__in=sorted(keys)) & ~Q(release_id=holder_id)
            parts.append(twins if release_id is None else twins & Q(release_id=release_id))
        for part in parts:
            query = part if query is None else query | part
    return query


def _cells_rows(release_id: int, cells: frozenset) -> Q:
    """The rows of a release's texts in these cells (slug, task, condition, variant)."""
    grouped: dict[tuple[str, str, str], set[int]] = {}
    for slug, task, condition, variant in cells:
        grouped.setdefault((slug, task, condition), set()).add(variant)
    query = Q()
    for (slug, task, condition), variants in sorted(grouped.items()):
        query |= Q(release_id=release_id, scenario_version__scenario__slug=slug, task=task,
                   condition=condition, variant__in=sorted(variants))
    return query


def withheld_texts(user, release_id: int | None = None) -> QuerySet:
    """The ids of the texts published releases still hold for their arena or reading
    studies, and of their twins in other releases (`withheld_generations`; with `release_id`,
    that release's texts of either kind), for staff who do not publish; none for publishers.
    Only publishers may know the writers of blind pairs and study texts: the generation admin,
    the audit records' admin and the review screens leave these out, as `snapshot_for_viewer`
    leaves held texts off the pages (404 for one, absent from lists and CSVs)."""
    query = None if may_publish(user) else withheld_generations(release_id)
    return Generation.objects.filter(query).values("pk") if query is not None \
        else Generation.objects.none().values("pk")


def not_blind_ids(release, generation_ids) -> set[int]:
    """Ids of the given texts of `release` that cannot be checked blind, so that no spot-check
    batch draws them (`spotcheck_batch_create`'s `leave_out`, counted on the batch as
    `left_out_public`): those whose words, or nearly, anyone can read with their writer in
    another release (`same_words.public_elsewhere_ids`), and those the release's texts hold
    from whoever does not publish (`withheld_generations`: a draft's twin of a text another
    release holds blind), whose check would be a 404 to its auditor, or name the held text's
    writer once saved."""
    ids = list(generation_ids)
    held = withheld_generations(release.pk)
    twins = set(Generation.objects.filter(held, pk__in=ids).values_list("pk", flat=True)) \
        if held is not None and ids else set()
    return twins | same_words.public_elsewhere_ids(release, ids)


def _release_without_held_out(release: ReleaseEntry, public: set[str]) -> ReleaseEntry:
    """The frozen config names every scenario; anonymous viewers see the public ones only."""
    config = release.config
    if not isinstance(config.get("scenarios"), list):
        return release
    scenarios = [item for item in config["scenarios"] if _config_slug(item) in public]
    # Adds to a count already there: the public view of a public view (a public archive
    # imported elsewhere) says what the original said.
    held_out = config.get("held_out_scenarios", 0) + len(config["scenarios"]) - len(scenarios)
    rest = {key: value for key, value in config.items() if key != "held_out_scenarios"}
    return release.model_copy(update={"config": {**rest, "scenarios": scenarios,
                                                 "held_out_scenarios": held_out}})


def _config_slug(item: Any) -> str | None:
    """A config scenario entry: `slug`, a pinned `slug@hash`, or a mapping with a slug."""
    if isinstance(item, str):
        return item.split("@", 1)[0]
    return item.get("slug") if isinstance(item, dict) else None


def model_names(snapshot: ReleaseSnapshot) -> dict[str, str]:
    """{model id: its frozen name}, in the release's model order."""
    return snapshot.model_names()


def unknown_filter_values(texts: list[TextEntry], params,
                          held: Mapping[str, tuple[Holder, ...]] | None = None
                          ) -> dict[str, str]:
    """{filter: why} for each given filter value that no text of the list has: a mistyped
    model id or task would otherwise read as "0 texts", as if the release had none. A
    scenario whose texts the release holds from this viewer (`held`, as `scenarios_held`
    gives it) is named as held, not as unknown."""
    problems = {}
    for key in TEXT_FILTERS:
        wanted = params.get(key)
        if wanted and not any(str(getattr(text, key)) == wanted for text in texts):
            if key == "scenario" and held and wanted in held:
                problems[key] = (f"the texts of scenario {wanted!r} are held for "
                                 + " and for ".join(HELD_FOR[holder] for holder in held[wanted])
                                 + "; none of them is shown before that")
                continue
            known = sorted({str(getattr(text, key)) for text in texts})
            shown = ", ".join(known[:12]) + (", …" if len(known) > 12 else "")
            problems[key] = (f"no text of this release has {key} {wanted[:80]!r}"
                             f"{f'; it has {shown}' if known else ''}")
    return problems


def checked_filter_texts(texts: list[TextEntry], params,
                         held: Mapping[str, tuple[Holder, ...]] | None = None
                         ) -> list[TextEntry]:
    """The texts matching the filters; a 400 (`BadParameter`) naming each filter value no
    text has, with the values it could be (or the scenario as held: `unknown_filter_values`)."""
    query_params.refuse(unknown_filter_values(texts, params, held))
    return filter_texts(texts, params)


def filter_texts(texts: list[TextEntry], params) -> list[TextEntry]:
    """Texts matching every given filter (`model`, `scenario`, `task`, `condition`)."""
    wanted = {key: params.get(key) for key in TEXT_FILTERS if params.get(key)}
    return [t for t in texts if all(str(getattr(t, k)) == v for k, v in wanted.items())]


ORDERABLE_TEXT_KEYS = {"id", "model", "scenario", "task", "condition", "variant", "refusal",
                       "honesty_index", "persuasion", "misleading"}


TEXT_ORDERS = tuple(f"{sign}{key}" for key in sorted(ORDERABLE_TEXT_KEYS) for sign in ("", "-"))


def order_texts(texts: list[TextEntry], order: str) -> list[TextEntry]:
    """Texts sorted by one key (`-key`: descending); texts without a value come last either
    way. No key (`""`) leaves the snapshot's order; the `order` parameter is checked against
    TEXT_ORDERS where it is read."""
    key = order.removeprefix("-")
    if not key:
        return texts
    present = [t for t in texts if getattr(t, key) is not None]
    missing = [t for t in texts if getattr(t, key) is None]
    present.sort(key=lambda t: (getattr(t, key), t.id), reverse=order.startswith("-"))
    return present + missing


def text_get(published: PublishedRelease, text_id: int) -> tuple[TextEntry, str]:
    """A text's scores (from the snapshot) and body; 404 for a text this viewer may not see."""
    row = next((t for t in published.snapshot.texts if t.id == text_id), None)
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
    jurors = {juror.id: juror.name or juror.id for juror in published.snapshot.jurors}
    verdicts = (JurorVerdict.objects.filter(_this_text("generation", text_id),
                                            release_id=published.release.pk)
                .select_related("juror").prefetch_related("claim_rows").order_by("seat"))
    return [{"verdict": verdict, "juror_name": jurors.get(verdict.juror.openrouter_id, ""),
             "claims": list(verdict.claim_rows.all())} for verdict in verdicts]


def claims_by_juror(verdicts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The text's claims, one row each, with every juror's label beside it (None where that
    juror did not name the claim): the jurors' lists merged on the quote."""
    rows: dict[str, dict[str, Any]] = {}
    scored = [entry for entry in verdicts if entry["verdict"].outcome == "scored"]
    for column, entry in enumerate(scored):
        for claim in entry["claims"]:
            row = rows.setdefault(normalised_quote(claim.quote), {
                "quote": claim.quote, "basis": list(claim.basis), "labels": [None] * len(scored)})
            row["labels"][column] = claim.get_label_display()
            row["basis"] += [fact for fact in claim.basis if fact not in row["basis"]]
    return list(rows.values())


def text_readers(published: PublishedRelease, row: TextEntry) -> list[dict[str, Any]]:
    """How each reading position of the panel answered after reading the text (one query):
    its three attitude answers and, per knowledge question, right, wrong or don't know."""
    content = published.snapshot.scenario_content.get(row.scenario) or {}
    correct = [question.get("correct") for question in content.get("knowledge_questions", [])]
    responses = (ReaderResponse.objects.filter(_this_text("generation", row.id),
                                               release_id=published.release.pk,
                                               stimulus=Stimulus.GENERATION, status="done")
                 .order_by("position").values("position", "attitude", "knowledge", "outcome"))
    return [{"position": response["position"], "outcome": response["outcome"],
             "attitude": response["attitude"] or [],
             "knowledge": [_knowledge_answer(answer, correct[index] if index < len(correct)
                                             else None)
                           for index, answer in enumerate(response["knowledge"] or [])]}
            for response in responses]


def _knowledge_answer(answer: int | None, correct: int | None) -> str:
    if answer is None:
        return "don't know"
    return "right" if answer == correct else "wrong"


def text_story(published: PublishedRelease, text_id: int) -> dict[str, Any] | None:
    """What the journalist agent made of the text (one query), where the uptake stage ran:
    whether it runs a story, its headline, opening and reason, and the frame rating."""
    result = (AgentRun.objects.filter(_this_text("generation", text_id),
                                      release_id=published.release.pk,
                                      kind=AgentRun.Kind.UPTAKE, status="done")
              .values_list("result", flat=True).first())
    return result or None


def same_item(snapshot: ReleaseSnapshot, row: TextEntry) -> list[TextEntry]:
    """Every text of the same scenario, task, condition and variant, one per model, in the
    release's model order: the item across models."""
    key = text_cell(row)
    order = {model: index for index, model in enumerate(model_names(snapshot))}
    texts = [text for text in snapshot.texts if text_cell(text) == key]
    return sorted(texts, key=lambda text: (order.get(text.model, len(order)), text.id))


def text_bodies(published: PublishedRelease, text_ids: list[int]) -> dict[int, str]:
    """The bodies of several texts of a published release, by snapshot id (one query)."""
    query = Q(pk__in=text_ids, release__archive_import__isnull=True) | Q(
        imported_as__snapshot_id__in=text_ids)
    rows = Generation.objects.filter(query, release_id=published.release.pk).values(
        "pk", "text", "imported_as__snapshot_id")
    return {row["imported_as__snapshot_id"] or row["pk"]: row["text"] for row in rows}


def text_interview(published: PublishedRelease, text_id: int, body: str) -> list[dict[str, Any]]:
    """A T4 text's cross-examination as the judge read it (one query): answer 1 is the text
    itself, answers 2-6 each follow a journalist's question; beside each answer the judge's
    label and reason. Read live, as the verdicts are: the rows never change once published."""
    turns = list(CrossExamTurn.objects.filter(_this_text("generation", text_id),
                                              release_id=published.release.pk)
                 .order_by("number").values("kind", "number", "question", "answer", "labels",
                                            "status", "writer_refusal"))
    if not turns:
        return []
    labels = next((turn["labels"] for turn in turns if turn["kind"] == "labels"), None) or []
    answers = [{"number": 1, "question": "", "answer": body}]
    answers += [{"number": turn["number"], "question": turn["question"],
                 "answer": turn["answer"], "refused": turn["writer_refusal"]}
                for turn in turns if turn["kind"] == "turn" and turn["status"] == "done"]
    for answer, label in zip(answers, labels, strict=False):
        answer["label"], answer["reason"] = label.get("label", ""), label.get("reason", "")
    return answers


def leaderboard_rows(snapshot: ReleaseSnapshot) -> list[dict[str, Any]]:
    """Every measure's rows (the CSV), in the release's measure order, each with its
    coverage and refusal rate beside it."""
    names = model_names(snapshot)
    rows = []
    for metric in measure_keys(snapshot):
        board = snapshot.leaderboards[metric]
        extra = {"higher_is_better": board.higher_is_better, "rule": board.rule,
                 "label": board.label or metric}
        for row in board.rows:
            rows.append({"metric": metric, "model_name": names.get(row.model, row.model),
                         **extra, **row.as_data()})
    return rows


def measure_keys(snapshot: ReleaseSnapshot) -> list[str]:
    """The snapshot's measures in page order (`method.measures`; older snapshots: METRICS)."""
    boards = snapshot.leaderboards
    listed = [measure.key for measure in snapshot.method.measures]
    ordered = [key for key in listed or METRICS if key in boards]
    return ordered + sorted(key for key in boards if key not in ordered)


def published_releases(user=None) -> list[dict[str, Any]]:
    """One row per publication; only the small parts of each snapshot are fetched. Held-out
    scenarios are counted for staff only, as every other page and answer counts them."""
    staff = is_staff(user)
    return [
        {**{key: value for key, value in row.items() if not key.endswith("_scenarios")},
         "scenarios": row["all_scenarios" if staff else "public_scenarios"]}
        for row in _release_rows()
    ]


# Reading even the small parts of every snapshot parses each one in the database (SQLite's
# json_extract takes the whole document, a few MB at 200 models, per key), about 0.3 s per
# page at 200 models. The rows change only when a release is published, and publications
# never change, so the rows are kept per process under the list of (id, snapshot hash).
_release_list: dict[tuple[tuple[int, str], ...], list[dict[str, Any]]] = {}
_leaderboards_kept: dict[tuple[tuple[int, str], ...], list[dict[str, Any]]] = {}
_release_list_lock = threading.Lock()


def forget_release_list() -> None:
    """Drop the kept rows and leaderboards (tests that count what reading them costs)."""
    with _release_list_lock:
        _release_list.clear()
        _leaderboards_kept.clear()


def _release_rows() -> list[dict[str, Any]]:
    key = tuple(Publication.objects.order_by("-published_at").values_list("pk", "snapshot_hash"))
    with _release_list_lock:
        if key in _release_list:
            return _release_list[key]
    rows = Publication.objects.filter(pk__in=[pk for pk, _ in key]).order_by(
        "-published_at").values(
        "release__code", "snapshot__release__title", "snapshot__release__language",
        "published_at", "config_hash", "snapshot_hash", "snapshot__models", "snapshot__scenarios",
        *IMPORT_FIELDS,
    )
    found = [
        {"code": r["release__code"], "title": r["snapshot__release__title"] or "",
         "language": r["snapshot__release__language"] or "", "published_at": r["published_at"],
         "config_hash": r["config_hash"], "snapshot_hash": r["snapshot_hash"],
         "models": len(r["snapshot__models"] or []),
         "all_scenarios": len(r["snapshot__scenarios"] or []),
         "public_scenarios": sum(1 for s in r["snapshot__scenarios"] or []
                                 if s.get("visibility") == Visibility.PUBLIC),
         "provenance": _row_provenance(r)}
        for r in rows
    ]
    with _release_list_lock:
        _release_list.clear()  # only the newest list is ever asked for again
        _release_list[key] = found
    return found


IMPORT_FIELDS = ("release__archive_import__pk", "release__archive_import__verified",
                 "release__archive_import__signing_key_id",
                 "release__archive_import__unverified_reason")


def _row_provenance(row: dict[str, Any]) -> Provenance:
    if row["release__archive_import__pk"] is None:
        return PRODUCED_HERE
    return Provenance(imported=True, verified=row["release__archive_import__verified"],
                      key_id=row["release__archive_import__signing_key_id"],
                      reason=row["release__archive_import__unverified_reason"])


def provenance_column(rows: list[dict[str, Any]], columns: list[str],
                      provenance: Provenance) -> tuple[list[dict[str, Any]], list[str]]:
    """A CSV of an imported, unverified release ends with a `provenance` column saying so on
    every row: a file travels without the page that warned about it. Other releases' files
    keep their columns."""
    if not provenance.unverified:
        return rows, columns
    note = f"imported, unverified: {provenance.reason}"
    return [{**row, "provenance": note} for row in rows], [*columns, "provenance"]


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
    """Every publication's models and ranked measures, oldest first, with only what a model's
    history shows of them (leaderboards are public whole; no row is held out).

    At 200 models the leaderboards are megabytes of JSON per release: reading them took about
    1.2 s per model page. Publications never change, so the extract is kept per process under
    the list of (id, snapshot hash), as `_release_rows` keeps the release list.
    """
    key = tuple(Publication.objects.order_by("published_at", "pk")
                .values_list("pk", "snapshot_hash"))
    with _release_list_lock:
        if key in _leaderboards_kept:
            return _leaderboards_kept[key]
    rows = Publication.objects.filter(pk__in=[pk for pk, _ in key]).order_by(
        "published_at", "pk").values("release__code", "published_at", "snapshot__release__title",
                                     "snapshot__models", "snapshot__leaderboards",
                                     *IMPORT_FIELDS)
    found = [{"code": r["release__code"], "title": r["snapshot__release__title"] or "",
              "published_at": r["published_at"], "provenance": _row_provenance(r),
              "models": [{field: model.get(field) for field in ("id", "name", "family")}
                         for model in r["snapshot__models"] or []],
              "leaderboards": {measure: _history_board(board) for measure, board
                               in (r["snapshot__leaderboards"] or {}).items()}}
             for r in rows]
    with _release_list_lock:
        _leaderboards_kept.clear()  # only the newest list is ever asked for again
        _leaderboards_kept[key] = found
    return found


HISTORY_FIELDS = ("model", "rank", "unranked_reason", "point", "cmp_low", "cmp_high", "abs_low",
                  "abs_high", "n_texts")


def _history_board(board: dict[str, Any]) -> dict[str, Any]:
    return {"higher_is_better": board.get("higher_is_better", True),
            "rows": [{field: row.get(field) for field in HISTORY_FIELDS}
                     for row in board.get("rows", [])]}
