"""The method's own checks in the API: a release's calibration against human readers and its
contamination check, and the reader trials. Read-only; a held-out scenario's findings come
without their content for anyone but staff."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from audits_app import query_params
from audits_app.calibration.figures import calibration_table, snapshot_calibration
from audits_app.calibration.trial_report import reader_trials, release_contamination, trial_table
from audits_app.pages import viewer as public
from audits_app.pages.method import calibration_note, unused_human_readers

NOT_FOUND = OpenApiResponse(description="No published release with this code.")


class CalibrationView(query_params.DeclaredParameters, APIView):
    @extend_schema(summary="The simulated public against human readers (calibration)",
                   responses={200: OpenApiTypes.OBJECT, 404: NOT_FOUND})
    def get(self, request: Request, code: str) -> Response:
        published = public.published_release_get(code, request.user)
        summary = snapshot_calibration(published.snapshot)
        if summary is None:
            answer = {"release": code, "calibrated": False, "note": calibration_note(published)}
            if unused := unused_human_readers(published):
                answer["human_readers"] = unused
            return Response(answer)
        names = public.model_names(published.snapshot)
        return Response({"release": code, "calibrated": True, "readers": summary.get("readers"),
                         "level": summary.get("level"),
                         "measures": calibration_table(summary, names)})


class ContaminationView(query_params.DeclaredParameters, APIView):
    @extend_schema(summary="The release's contamination check: probes, scan and findings",
                   responses={200: OpenApiTypes.OBJECT, 404: NOT_FOUND})
    def get(self, request: Request, code: str) -> Response:
        published = public.published_release_get(code, request.user)
        found = release_contamination(published.release, staff=public.is_staff(request.user))
        return Response({"release": code, "checked": found is not None, **(found or {})})


class ReaderTrialListView(query_params.DeclaredParameters, APIView):
    @extend_schema(summary="Reader trials: every candidate's criteria, speed and price",
                   responses={200: OpenApiTypes.OBJECT})
    def get(self, request: Request) -> Response:
        return Response({"results": [
            {"trial": trial.pk, "language": trial.language, "panel": trial.panel,
             "scoring_version": trial.scoring_version, "reported_at": trial.reported_at,
             "scenarios": trial.report.get("scenarios") or [],
             "thresholds": trial.report.get("thresholds") or {},
             "preferred": trial.report.get("preferred") or [],
             "candidates": [{key: value for key, value in row.items() if key != "criteria"}
                            for row in trial_table(trial.report)]}
            for trial in reader_trials()]})
