"""The site's URLs plus two views that fail on purpose, for the error-handling tests."""

from django.http import HttpRequest, HttpResponse
from django.urls import path

from baitbench_site.urls import handler403, handler404, handler500, urlpatterns  # noqa: F401
from runs_app.models import ImmutableError

INTERNALS = "connection string postgres://secret@db"


def fails(request: HttpRequest) -> HttpResponse:
    raise RuntimeError(f"unexpected state near {INTERNALS}")


def refuses(request: HttpRequest) -> HttpResponse:
    if request.method == "POST":
        raise ImmutableError("release pub.0 is published and cannot change")
    return HttpResponse("the form")


urlpatterns = [path("fails/", fails), path("api/v1/fails/", fails), path("refuses/", refuses),
               *urlpatterns]
