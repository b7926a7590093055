"""Read-only API views (DESIGN section 8): published data for anyone, drafts and held-out
material for staff. Every answer reads the snapshot through `audits_app.pages.viewer`."""

from __future__ import annotations

import re

from django.http import Http404, HttpResponse
from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_view,
)
from rest_framework.exceptions import ValidationError
from rest_framework.generics import GenericAPIView
from rest_framework.pagination import LimitOffsetPagination
from rest_framework.request import Request
from rest_framework.response import Response

from audits_app import csv_files
from audits_app.api import serializers
from audits_app.leaderboard import compare, measures
from audits_app.leaderboard.chart import chart_frame
from audits_app.models.archive import PRODUCED_HERE
from audits_app.pages import viewer as public
from runs_app.models import Release

NOT_FOUND = OpenApiResponse(description="No published release with this code.")
BAD_PAGE = OpenApiResponse(
    response=OpenApiTypes.OBJECT,
    description="A limit or offset that is not a whole number in range: {limit|offset: why}.")
UNKNOWN_FILTER = OpenApiResponse(
    response=OpenApiTypes.OBJECT,
    description="A filter value that no text of the release has: {filter: why}.")
TEXT_FILTER_PARAMETERS = [
    OpenApiParameter(name, OpenApiTypes.STR, OpenApiParameter.QUERY, required=False,
                     description=f"Only texts with this {name}.")
    for name in public.TEXT_FILTERS
]


def checked_filter_texts(texts: list[dict], params) -> list[dict]:
    """The texts matching the filters; 400 naming each filter value no text has."""
    problems = public.unknown_filter_values(texts, params)
    if problems:
        raise ValidationError(problems)
    return public.filter_texts(texts, params)


class SnapshotPagination(LimitOffsetPagination):
    """At most `max_limit` items an answer: `limit=10**20` asked for every text at once.

    A `limit` or `offset` that is not a whole number in range is a 400 naming it, as an unknown
    filter value is: DRF's own pagination answered `limit=abc` with the default page.
    """

    max_limit = 1000

    def get_limit(self, request) -> int:
        raw = request.query_params.get(self.limit_query_param)
        if raw is None:
            return self.default_limit
        value = _whole_number(raw)
        if value is None or value < 1:
            raise ValidationError({self.limit_query_param: (
                f"limit must be a whole number from 1 to {self.max_limit}; got {raw!r}")})
        return min(value, self.max_limit)

    def get_offset(self, request) -> int:
        raw = request.query_params.get(self.offset_query_param)
        if raw is None:
            return 0
        value = _whole_number(raw)
        if value is None or value < 0:
            raise ValidationError({self.offset_query_param: (
                f"offset must be a whole number, 0 or more; got {raw!r}")})
        return value


def _whole_number(raw: str) -> int | None:
    return int(raw) if re.fullmatch(r"[0-9]{1,12}", raw.strip()) else None


class SnapshotListView(GenericAPIView):
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
        page = self.paginate_queryset(self.get_queryset())
        return self.get_paginated_response(self.get_serializer(page, many=True).data)


class ApiRootView(GenericAPIView):
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


class ReleaseDetailView(GenericAPIView):
    serializer_class = serializers.ReleaseDetailSerializer
    pagination_class = None

    @extend_schema(summary="One release", responses={200: serializers.ReleaseDetailSerializer,
                                                     404: NOT_FOUND})
    def get(self, request: Request, code: str) -> Response:
        publication = public.publication_get(code)
        if publication is None:
            return Response(self.get_serializer(_draft(request, code)).data)
        snapshot = public.published_from(publication, request.user).snapshot
        release = snapshot.get("release") or {}
        data = {
            "code": publication.release.code, "title": release.get("title", ""),
            "language": release.get("language", ""), "published": True,
            "published_at": publication.published_at, "config_hash": publication.config_hash,
            "snapshot_hash": publication.snapshot_hash, "config": release.get("config"),
            "models": snapshot.get("models", []), "scenarios": snapshot.get("scenarios", []),
            "method": snapshot.get("method"), "counts": snapshot.get("counts") or {},
            "gate_override_reason": publication.gate_override_reason,
            "provenance": public.release_provenance(publication.release),
        }
        return Response(self.get_serializer(data).data)


def _draft(request: Request, code: str) -> dict:
    """An unpublished release, for staff only; anyone else gets a 404."""
    release = Release.objects.filter(code=code).first() if public.is_staff(request.user) else None
    if release is None:
        raise Http404("No published release with this code.")
    return {"code": release.code, "title": release.title, "language": release.language,
            "published": False, "published_at": None, "config_hash": release.config_hash,
            "snapshot_hash": None, "config": release.config, "models": [], "scenarios": [],
            "method": None, "gate_override_reason": "", "provenance": public.PRODUCED_HERE}


class LeaderboardView(GenericAPIView):
    serializer_class = serializers.LeaderboardSerializer
    pagination_class = None

    @extend_schema(summary="Ranks, point estimates, absolute and comparison intervals",
                   responses={200: serializers.LeaderboardSerializer, 404: NOT_FOUND})
    def get(self, request: Request, code: str) -> Response:
        published = public.published_release_get(code, request.user)
        snapshot = published.snapshot
        names = public.model_names(snapshot)

        def named(rows: list[dict]) -> list[dict]:
            return [{**row, "model_name": names.get(row["model"], row["model"])} for row in rows]

        boards = snapshot.get("leaderboards") or {}
        keys = public.measure_keys(snapshot)
        data = {
            "release": published.code, "provenance": published.provenance.as_dict(),
            "rule": (snapshot.get("method") or {}).get("rule"),
            "measures": [_measure(snapshot, key) for key in keys],
            "metrics": {key: {**boards[key], "rows": named(boards[key].get("rows", []))}
                        for key in keys},
            "per_task": {task: {metric: named(rows) for metric, rows in tables.items()}
                         for task, tables in (snapshot.get("per_task") or {}).items()},
            "refusal_rates": named(snapshot.get("refusal_rates") or []),
            "control": snapshot.get("control") or {"persuasion": None, "misleading": None},
            "anchors": snapshot.get("anchors") or [],
            "anchors_overall": snapshot.get("anchors_overall") or [],
            "thresholds": {key: named(snapshot.get(key) or [])
                           for key in ("c2_vs_c0", "c1_minus_c3")},
            "versus_control": {"per_scenario": named(snapshot.get("versus_control") or []),
                               "overall": named(snapshot.get("versus_control_overall") or [])},
            "without_text": {
                "per_scenario": named(snapshot.get("baseline_without_text") or []),
                "overall": named(snapshot.get("baseline_without_text_overall") or [])},
            "chart": chart_frame(snapshot).model_dump(mode="json"),
            "caveat": measures.RANKING_ONLY,
        }
        return Response(self.get_serializer(data).data)


def _measure(snapshot: dict, key: str) -> dict:
    """A measure's words from the snapshot; older snapshots did not freeze them."""
    listed = {m["key"]: m for m in (snapshot.get("method") or {}).get("measures") or []}
    return listed.get(key) or measures.BY_KEY[key].as_dict()


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

    def items(self) -> list[dict]:
        published = public.published_release_get(self.kwargs["code"], self.request.user)
        self.paginator.provenance = published.provenance.as_dict()
        return checked_filter_texts(published.snapshot.get("texts", []),
                                    self.request.query_params)


class TextCsvView(GenericAPIView):
    pagination_class = None

    @extend_schema(summary="Per-text scores as CSV", parameters=TEXT_FILTER_PARAMETERS,
                   responses={(200, "text/csv"): OpenApiTypes.STR, 400: UNKNOWN_FILTER,
                              404: NOT_FOUND})
    def get(self, request: Request, code: str) -> HttpResponse:
        published = public.published_release_get(code, request.user)
        texts = checked_filter_texts(published.snapshot.get("texts", []), request.query_params)
        rows, columns = public.provenance_column(texts, public.TEXT_COLUMNS,
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


class CompareView(GenericAPIView):
    serializer_class = serializers.CompareSerializer
    pagination_class = None

    @extend_schema(summary="Two published releases compared, per measure",
                   responses={200: serializers.CompareSerializer, 404: NOT_FOUND})
    def get(self, request: Request, code: str, other: str) -> Response:
        a = public.published_release_named(code, request.user)
        b = public.published_release_named(other, request.user)
        comparison = compare.compare_snapshots(a.snapshot, b.snapshot)
        comparison.update(provenance_a=a.provenance.as_dict(),
                          provenance_b=b.provenance.as_dict())
        return Response(self.get_serializer(comparison).data)


class ModelHistoryView(GenericAPIView):
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
