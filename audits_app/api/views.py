"""Read-only API views (DESIGN section 8): published data for anyone, drafts and held-out
material for staff. Every answer reads the snapshot through `audits_app.pages.viewer`."""

from __future__ import annotations

from django.http import Http404, HttpResponse
from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_view,
)
from drf_spectacular.views import SpectacularAPIView
from rest_framework.exceptions import ValidationError
from rest_framework.generics import GenericAPIView
from rest_framework.pagination import LimitOffsetPagination
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response

from audits_app import csv_files, query_params
from audits_app.api import serializers
from audits_app.calibration.studies.calibration import weighted_answer
from audits_app.leaderboard import compare, measures
from audits_app.leaderboard.chart import chart_frame
from audits_app.models.archive import PRODUCED_HERE
from audits_app.pages import viewer as public
from audits_app.pages.compare import same_release_message
from audits_app.publication.snapshot_model import Board, ReleaseSnapshot, SnapshotPart
from runs_app.models import Release

NOT_FOUND = OpenApiResponse(description="No published release with this code.")
BAD_PAGE = OpenApiResponse(
    response=OpenApiTypes.OBJECT,
    description="A limit or offset that is not a whole number in range: {limit|offset: why}.")
UNKNOWN_FILTER = OpenApiResponse(
    response=OpenApiTypes.OBJECT,
    description=("A filter value that no text of the release has, or a limit or offset that "
                 "is not a whole number in range: {filter|limit|offset: [why]}."))
SAME_RELEASE = OpenApiResponse(
    response=OpenApiTypes.OBJECT,
    description="The same release given twice: {other: [why]}.")
TEXT_FILTER_PARAMETERS = [
    OpenApiParameter(name, OpenApiTypes.STR, OpenApiParameter.QUERY, required=False,
                     description=f"Only texts with this {name}.")
    for name in public.TEXT_FILTERS
]


class SnapshotPagination(LimitOffsetPagination):
    """At most `max_limit` items an answer: `limit=10**20` asked for every text at once.

    A `limit` or `offset` that is not a whole number in range is a 400 naming it
    (`audits_app.query_params`): DRF's own pagination answered `limit=abc` with the default page.
    """

    max_limit = 1000

    def get_limit(self, request) -> int:
        limit = query_params.whole_number(request.query_params, self.limit_query_param, low=1,
                                          default=self.default_limit)
        return min(limit, self.max_limit)

    def get_offset(self, request) -> int:
        return query_params.whole_number(request.query_params, self.offset_query_param, low=0,
                                         default=0)


class SnapshotListView(query_params.DeclaredParameters, GenericAPIView):
    """A paginated list of snapshot dicts, where a generic view expects a queryset.

    `get_queryset()` returns that list: DRF's browsable renderer asks for it (to build its
    filter form) on every list view, and a view without one answers a browser with a 500.
    The list is built once per request, whoever asks first.
    """

    pagination_class = SnapshotPagination

    def items(self) -> list[dict]:
        raise NotImplementedError

    def get_queryset(self) -> list[dict]:
        if not hasattr(self, "_items"):
            self._items = self.items()
        return self._items

    def get(self, request: Request, *args, **kwargs) -> Response:
        # Parts of a typed snapshot are answered as they were frozen (only this page's).
        page = [item.as_data() if isinstance(item, SnapshotPart) else item
                for item in self.paginate_queryset(self.get_queryset())]
        return self.get_paginated_response(self.get_serializer(page, many=True).data)


class ApiRootView(query_params.DeclaredParameters, GenericAPIView):
    """Where the API starts: its collections, the schema and the documentation."""

    pagination_class = None

    @extend_schema(summary="The API's starting points", responses={200: OpenApiTypes.OBJECT})
    def get(self, request: Request) -> Response:
        def link(name: str) -> str:
            return request.build_absolute_uri(reverse(f"api:{name}"))

        return Response({
            "releases": link("release-list"), "scenarios": link("scenario-list"),
            "reader_trials": link("reader-trials"), "schema": link("schema"),
            "docs": link("docs"),
            "per_release": {"release": "releases/{code}/",
                            "leaderboard": "releases/{code}/leaderboard/",
                            "texts": "releases/{code}/texts/",
                            "texts_csv": "releases/{code}/texts.csv",
                            "calibration": "releases/{code}/calibration/",
                            "contamination": "releases/{code}/contamination/",
                            "arena": "releases/{code}/arena/",
                            "compare": "releases/{code}/compare/{other}/"},
            "model_history": "models/{model_id}/",
        })


@extend_schema_view(get=extend_schema(
    summary="Published releases",
    responses={200: serializers.ReleaseSummarySerializer(many=True), 400: BAD_PAGE}))
class ReleaseListView(SnapshotListView):
    serializer_class = serializers.ReleaseSummarySerializer

    def items(self) -> list[dict]:
        return public.published_releases(self.request.user)


class ReleaseDetailView(query_params.DeclaredParameters, GenericAPIView):
    serializer_class = serializers.ReleaseDetailSerializer
    pagination_class = None

    @extend_schema(summary="One release", responses={200: serializers.ReleaseDetailSerializer,
                                                     404: NOT_FOUND})
    def get(self, request: Request, code: str) -> Response:
        publication = public.publication_get(code)
        if publication is None:
            return Response(self.get_serializer(_draft(request, code)).data)
        snapshot = public.published_from(publication, request.user).snapshot
        release = snapshot.release
        data = {
            "code": publication.release.code, "title": release.title,
            "language": release.language, "published": True,
            "published_at": publication.published_at, "config_hash": publication.config_hash,
            "snapshot_hash": publication.snapshot_hash, "config": release.config,
            "models": _data(snapshot.models), "scenarios": _data(snapshot.scenarios),
            "method": snapshot.method.as_data(), "counts": snapshot.counts.as_data(),
            "gate_override_reason": publication.gate_override_reason,
            "provenance": public.release_provenance(publication.release),
            "population_weights": weighted_answer(publication.release,
                                                  public.model_names(snapshot)),
        }
        return Response(self.get_serializer(data).data)


def _draft(request: Request, code: str) -> dict:
    """An unpublished release's description (its writers are in its config), for those who
    may see its draft pages (`may_see_draft`: staff, but not an auditor without another role,
    nor anyone with a spot-check of it still to do); anyone else gets a 404, as on the pages.
    The same people get its leaderboard computed now (`LeaderboardView`), as its draft page
    shows it; its texts are answered once published."""
    release = Release.objects.filter(code=code).first() if public.is_staff(request.user) else None
    if release is None or not public.may_see_draft(request.user, release):
        raise Http404("No published release with this code.")
    return {"code": release.code, "title": release.title, "language": release.language,
            "published": False, "published_at": None, "config_hash": release.config_hash,
            "snapshot_hash": None, "config": release.config, "models": [], "scenarios": [],
            "method": None, "gate_override_reason": "", "provenance": public.PRODUCED_HERE,
            "population_weights": None}


class LeaderboardView(query_params.DeclaredParameters, GenericAPIView):
    serializer_class = serializers.LeaderboardSerializer
    pagination_class = None

    @extend_schema(summary="Ranks, point estimates, absolute and comparison intervals",
                   responses={200: serializers.LeaderboardSerializer, 404: NOT_FOUND})
    def get(self, request: Request, code: str) -> Response:
        # Whoever may see the release's draft page and answer (`_draft`) gets its figures
        # computed now, marked `published: false`, as the page shows them; anyone else a 404.
        published = public.release_view_get(code, request.user)
        snapshot = published.snapshot
        names = public.model_names(snapshot)

        def named(rows: list[SnapshotPart]) -> list[dict]:
            return [{**row.as_data(), "model_name": names.get(row.model, row.model)}
                    for row in rows]

        boards = snapshot.leaderboards
        keys = public.measure_keys(snapshot)
        # Scenarios whose per-model rows the viewer's snapshot left out, and why.
        held = [{"scenario": slug, "reason": public.figures_held_because(holders)}
                for slug, holders in published.figures_held.items()]
        data = {
            "release": published.code, "published": published.draft is None,
            "provenance": published.provenance.as_dict(),
            "rule": snapshot.method.rule,
            "measures": [_measure(snapshot, key) for key in keys],
            "metrics": {key: {**_board_data(boards[key]), "rows": named(boards[key].rows)}
                        for key in keys},
            "per_task": {task: {metric: named(rows) for metric, rows in tables.items()}
                         for task, tables in snapshot.per_task.items()},
            "refusal_rates": named(snapshot.refusal_rates),
            "control": (snapshot.control.as_data() if snapshot.control
                        else {"persuasion": None, "misleading": None}),
            "anchors": _data(snapshot.anchors),
            "anchors_overall": _data(snapshot.anchors_overall),
            "thresholds": {key: named(getattr(snapshot, key))
                           for key in ("c2_vs_c0", "c1_minus_c3")},
            "versus_control": {"per_scenario": named(snapshot.versus_control),
                               "held": held,
                               "overall": named(snapshot.versus_control_overall)},
            "without_text": {
                "per_scenario": named(snapshot.baseline_without_text),
                "held": held,
                "overall": named(snapshot.baseline_without_text_overall)},
            "chart": chart_frame(snapshot).model_dump(mode="json"),
            "caveat": measures.RANKING_ONLY,
            "population_weights": weighted_answer(published.release, names),
        }
        return Response(self.get_serializer(data).data)


def _measure(snapshot: ReleaseSnapshot, key: str) -> dict:
    """A measure's words from the snapshot; older snapshots did not freeze them."""
    listed = {measure.key: measure for measure in snapshot.method.measures}
    return listed[key].as_data() if key in listed else measures.BY_KEY[key].as_dict()


def _board_data(board: Board) -> dict:
    """A board as frozen, but its rows (named by the caller). Its pairs are JSON objects
    already (`PairRow`), passed on as they are: dumping M(M-1)/2 of them again cost a
    quarter of the answer's first build at 200 models (bench/snapshot.py)."""
    data = board.model_dump(mode="json", exclude_unset=True, exclude={"rows", "pairs"})
    return {**data, "pairs": board.pairs} if "pairs" in board.model_fields_set else data


def _data(parts: list[SnapshotPart]) -> list[dict]:
    """Parts of the snapshot as the JSON they were frozen as."""
    return [part.as_data() for part in parts]


class TextPagination(SnapshotPagination):
    """A page of texts says where the release's figures come from beside its `results`, as
    the CSV's `provenance` column does: an answer travels without the page that warned."""

    provenance: dict = PRODUCED_HERE.as_dict()

    def get_paginated_response(self, data) -> Response:
        response = super().get_paginated_response(data)
        response.data["provenance"] = self.provenance
        return response

    def get_paginated_response_schema(self, schema: dict) -> dict:
        found = super().get_paginated_response_schema(schema)
        found["properties"]["provenance"] = {
            "type": "object", "description": (
                "Where the release's figures come from: imported, verified, key_id, reason "
                "(as in the release's answer). An imported, unverified release says so on "
                "every page of its texts."),
            "properties": {"imported": {"type": "boolean"}, "verified": {"type": "boolean"},
                           "key_id": {"type": "string"}, "reason": {"type": "string"}}}
        return found


@extend_schema_view(get=extend_schema(
    summary="Per-text scores", parameters=TEXT_FILTER_PARAMETERS,
    responses={200: serializers.TextScoreSerializer(many=True),
               400: OpenApiResponse(response=OpenApiTypes.OBJECT, description=(
                   "A filter value that no text of the release has, or a limit or offset "
                   "that is not a whole number in range: {filter|limit|offset: why}.")),
               404: NOT_FOUND}))
class TextListView(SnapshotListView):
    serializer_class = serializers.TextScoreSerializer
    pagination_class = TextPagination
    query_parameters = public.TEXT_FILTERS

    def items(self) -> list[dict]:
        published = public.published_release_get(self.kwargs["code"], self.request.user)
        self.paginator.provenance = published.provenance.as_dict()
        return public.checked_filter_texts(published.snapshot.texts, self.request.query_params,
                                           published.figures_held)


class TextCsvView(query_params.DeclaredParameters, GenericAPIView):
    pagination_class = None
    query_parameters = (*public.TEXT_FILTERS, "limit", "offset")

    @extend_schema(summary="Per-text scores as CSV", parameters=[
        *TEXT_FILTER_PARAMETERS,
        OpenApiParameter("limit", OpenApiTypes.INT, OpenApiParameter.QUERY, required=False,
                         description="At most this many texts (default: every text)."),
        OpenApiParameter("offset", OpenApiTypes.INT, OpenApiParameter.QUERY, required=False,
                         description="Skip this many texts first.")],
                   responses={(200, "text/csv"): OpenApiTypes.STR, 400: UNKNOWN_FILTER,
                              404: NOT_FOUND})
    def get(self, request: Request, code: str) -> HttpResponse:
        published = public.published_release_get(code, request.user)
        texts = public.checked_filter_texts(published.snapshot.texts, request.query_params,
                                            published.figures_held)
        # Every text by default; `limit` and `offset` read as the JSON list reads them.
        offset = query_params.whole_number(request.query_params, "offset", low=0, default=0)
        limit = query_params.whole_number(request.query_params, "limit", low=1)
        texts = texts[offset:None if limit is None else offset + limit]
        rows, columns = public.provenance_column(_data(texts), public.TEXT_COLUMNS,
                                                 published.provenance)
        response = HttpResponse(csv_files.csv_text(rows, columns),
                                content_type="text/csv; charset=utf-8")
        response["Content-Disposition"] = f'attachment; filename="{code}-texts.csv"'
        return response


@extend_schema_view(get=extend_schema(
    summary="Scenarios of published releases, with their labelled facts",
    responses={200: serializers.ScenarioSerializer(many=True), 400: BAD_PAGE}))
class ScenarioListView(SnapshotListView):
    serializer_class = serializers.ScenarioSerializer

    def items(self) -> list[dict]:
        return public.published_scenarios(self.request.user)


class CompareView(query_params.DeclaredParameters, GenericAPIView):
    serializer_class = serializers.CompareSerializer
    pagination_class = None

    @extend_schema(summary="Two published releases compared, per measure",
                   responses={200: serializers.CompareSerializer, 400: SAME_RELEASE,
                              404: NOT_FOUND})
    def get(self, request: Request, code: str, other: str) -> Response:
        if code == other:  # as on the pages: a release has no moves against itself
            raise ValidationError({"other": [same_release_message(code)]})
        a = public.published_release_named(code, request.user)
        b = public.published_release_named(other, request.user)
        comparison = compare.compare_snapshots(a.snapshot, b.snapshot)
        comparison.update(provenance_a=a.provenance.as_dict(),
                          provenance_b=b.provenance.as_dict())
        return Response(self.get_serializer(comparison).data)


class ModelHistoryView(query_params.DeclaredParameters, GenericAPIView):
    serializer_class = serializers.ModelHistorySerializer
    pagination_class = None

    @extend_schema(summary="A model across every published release and measure",
                   responses={200: serializers.ModelHistorySerializer,
                              404: OpenApiResponse(description="No published release ranks "
                                                               "this model.")})
    def get(self, request: Request, model_id: str) -> Response:
        releases = public.published_leaderboards()
        history = compare.model_history(model_id, releases)
        if history is None:
            raise Http404("No published release ranks this model.")
        provenance = {release["code"]: release["provenance"].as_dict() for release in releases}
        history = {**history, "entries": [{**entry, "provenance": provenance[entry["release"]]}
                                          for entry in history["entries"]]}
        return Response(self.get_serializer(history).data)


class SchemaView(query_params.DeclaredParameters, SpectacularAPIView):
    """The OpenAPI schema (drf-spectacular), refusing an unknown parameter as every API
    answer does: it reads `lang` and `version`, and `format` picks YAML or JSON. A refusal
    is JSON in DRF's error shape whatever the format: the schema's renderers would write the
    error object's Python repr (`- string: ... code: invalid`), not a message."""

    query_parameters = ("lang", "version")

    def handle_exception(self, exc: Exception) -> Response:
        response = super().handle_exception(exc)
        self.request.accepted_renderer = JSONRenderer()
        self.request.accepted_media_type = JSONRenderer.media_type
        return response
