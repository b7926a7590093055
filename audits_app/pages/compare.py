"""Two published releases compared, and one model across every release (DESIGN section 8).

Both read frozen snapshots only (`leaderboard.compare` does the work), as each viewer may see
them: a comparison shown to the public leaves out held-out scenarios, as the release pages do.
"""

from __future__ import annotations

import re

from django.core.exceptions import BadRequest
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render

from audits_app import csv_files, query_params
from audits_app.leaderboard import compare
from audits_app.pages import viewer as public
from baitbench_site.methods import require_safe


def two_releases(code_a: str, code_b: str) -> None:
    """Refuse a release compared with itself (a 400 that says so): it has no moves, and a
    page of "no change" everywhere reads as a finding about two releases."""
    if code_a == code_b:
        raise BadRequest(same_release_message(code_a))


def same_release_message(code: str) -> str:
    shown = public.shown_code(code)
    named = f"both codes are {shown}" if shown != "given" else "both codes are the same"
    return (f"A release cannot be compared with itself ({named}): choose two different "
            f"releases.")


def release_comparison(request: HttpRequest, code_a: str, code_b: str) -> dict:
    """The comparison of two published releases as this viewer may see them (404 if either
    is not published, 400 if they are the same)."""
    two_releases(code_a, code_b)
    a = public.published_release_named(code_a, request.user)
    b = public.published_release_named(code_b, request.user)
    return {"release_a": a, "release_b": b, **compare.compare_snapshots(a.snapshot, b.snapshot)}


@require_safe
@query_params.reads()
def compare_detail(request: HttpRequest, code_a: str, code_b: str) -> HttpResponse:
    context = release_comparison(request, code_a, code_b)
    context["releases"] = public.published_releases(request.user)
    return render(request, "audits_app/compare.html", context)


@require_safe
@query_params.reads()
def compare_csv(request: HttpRequest, code_a: str, code_b: str) -> HttpResponse:
    comparison = release_comparison(request, code_a, code_b)
    text = csv_files.csv_text(compare.compare_csv_rows(comparison), compare.COMPARE_COLUMNS)
    response = HttpResponse(text, content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{code_a}-vs-{code_b}.csv"'
    return response


@require_safe
@query_params.reads("a", "b")
def compare_choose(request: HttpRequest) -> HttpResponse:
    """The release list's form: two codes in, the comparison's address out. With neither,
    the release list, where the form is; with one, a 400 naming the one missing (it quietly
    went to the release list, as if the address had been understood)."""
    code_a, code_b = request.GET.get("a", "").strip(), request.GET.get("b", "").strip()
    if not code_a and not code_b:
        return redirect("audits:release-list")
    if not code_a or not code_b:
        missing, given = ("b", code_a) if code_a else ("a", code_b)
        raise BadRequest(f"Choose two releases to compare: {missing} is missing (only "
                         f"{public.shown_code(given)} was given). The form on the release "
                         f"list sends both.")
    two_releases(code_a, code_b)
    for code in (code_a, code_b):  # a code with "/" (or "..") has no comparison address
        public.published_release_named(code, request.user)
    return redirect("audits:compare", code_a=code_a, code_b=code_b)


@require_safe
@query_params.reads()
def model_detail(request: HttpRequest, model_id: str) -> HttpResponse:
    boards = public.published_leaderboards()
    history = compare.model_history(model_id, boards)
    if history is None:
        raise Http404("No published release ranks this model.")
    unverified = [row["code"] for row in boards
                  if row["provenance"].unverified and row["code"] in history["releases"]]
    return render(request, "audits_app/model_detail.html", {
        "model": history, "tables": compare.history_tables(history), "unverified": unverified})


@require_safe
@query_params.reads()
def model_csv(request: HttpRequest, model_id: str) -> HttpResponse:
    history = compare.model_history(model_id, public.published_leaderboards())
    if history is None:
        raise Http404("No published release ranks this model.")
    text = csv_files.csv_text(history["entries"], compare.HISTORY_COLUMNS)
    response = HttpResponse(text, content_type="text/csv; charset=utf-8")
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", model_id)
    response["Content-Disposition"] = f'attachment; filename="{safe}.csv"'
    return response
