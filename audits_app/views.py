"""Public pages: published releases and their leaderboards."""

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render


def release_list(request: HttpRequest) -> HttpResponse:
    return render(request, "audits_app/release_list.html", {"releases": []})
