"""Error pages, server-error logging, and refused changes shown as messages.

- The 403 (and failed CSRF check), 404 and 500 pages use the site's layout, say why and offer
  the way back (`templates/403.html`, `403_csrf.html`, `404.html`, `500.html`).
- A server error is logged once, with its traceback, under a short reference that its page
  shows, so that a visitor's report leads to the log line. Django itself logs it only through
  `mail_admins` when DEBUG is off, which in a default deployment reaches no one.
- A 400 says why: a form too large, or the view's own reason (an unknown or malformed query
  parameter, `audits_app.query_params`); for a `.csv` address, as plain text.
- Under `/api/` the same answers are JSON (`{"detail": …}`, as the API's own errors are), so a
  client that mistyped a path gets an answer it can read, not a page.
- A 405 that a view answered with an empty body (Django's `require_POST`) becomes a short page
  with a link to the page one level up (`templates/405.html`), under `/api/` a JSON answer; a
  form sent to a page that is only read (`methods.MethodNotAllowedFirstMiddleware`) is told so.
- A change refused because it would touch a published release (`ImmutableError`) is the user's
  doing, not a server fault: submitted from a form, in the admin or elsewhere, it comes back
  as an error message on the page it was sent from instead of a 500.
"""

from __future__ import annotations

import logging
import re
import secrets
from collections.abc import Callable

from django.contrib import messages
from django.core.signals import got_request_exception
from django.dispatch import receiver
from django.http import (
    HttpRequest,
    HttpResponse,
    HttpResponseBadRequest,
    HttpResponseForbidden,
    HttpResponseNotFound,
    HttpResponseRedirect,
    HttpResponseServerError,
    JsonResponse,
)
from django.template import loader

from baitbench_site.roles import NoRoleWouldHelp

logger = logging.getLogger("baitbench.errors")

NOT_FOUND = "There is no page at this address."
NOT_FOUND_IN_API = "There is no API endpoint at this address; /api/v1/ lists them."
FORBIDDEN = "You do not have permission to see this page."
# Django's own 404 reason from get_object_or_404: a model's class name, not words for a visitor.
_DJANGO_LOOKUP = re.compile(r"No \w+ matches the given query\.")


@receiver(got_request_exception, dispatch_uid="baitbench-log-server-error")
def log_server_error(sender, request: HttpRequest | None = None, **kwargs) -> None:
    """Sent, inside the `except` block, for every exception that becomes a 500."""
    reference = secrets.token_hex(4)
    where = f"{request.method} {request.path}" if request is not None else "outside a request"
    logger.error("server error %s on %s", reference, where, exc_info=True)
    if request is not None:
        request.error_reference = reference  # type: ignore[attr-defined]


def reason(exception: BaseException | None, default: str) -> str:
    """The message an `Http404` or `PermissionDenied` was raised with, when it is one.

    These messages are written for the visitor ("No published release with this code.");
    anything else (the resolver's dict of tried patterns, an empty exception, the words
    `get_object_or_404` makes from a model's name: "No ReadingStudy matches the given query.")
    gets `default`.
    """
    message = exception.args[0] if exception is not None and exception.args else None
    if not isinstance(message, str) or not message.strip() or _DJANGO_LOOKUP.fullmatch(message):
        return default
    return message


def bad_request(request: HttpRequest, exception: BaseException | None = None) -> HttpResponse:
    """A request Django refused before any view (most often a form too large to accept), or
    one a view refused with `BadRequest` (a query parameter it does not accept)."""
    from django.conf import settings
    from django.core.exceptions import RequestDataTooBig, TooManyFieldsSent
    from django.template.defaultfilters import filesizeformat

    if isinstance(exception, RequestDataTooBig):
        limit = filesizeformat(settings.DATA_UPLOAD_MAX_MEMORY_SIZE).replace("\xa0", " ")
        why = (f"What you sent is larger than this site accepts in a form ({limit}): "
               f"nothing was saved. Send a smaller text, or a file where the page offers an "
               f"upload.")
    elif isinstance(exception, TooManyFieldsSent):
        why = "The form sent more fields than this site accepts: nothing was saved."
    else:
        # A view's own refusal (`BadRequest("why")`, as a query parameter's) says why.
        why = reason(exception, "The request could not be understood, so nothing was done.")
    if for_api(request):
        return JsonResponse({"detail": why}, status=400)
    if request.path.endswith(".csv"):  # asked for a file: the reason as one, not a page
        return HttpResponseBadRequest(why + "\n", content_type="text/plain; charset=utf-8")
    body = loader.render_to_string("400.html", {"reason": why, "request_path": request.path},
                                   request)
    return HttpResponseBadRequest(body)


def for_api(request: HttpRequest) -> bool:
    return request.path.startswith("/api/")


def page_not_found(request: HttpRequest, exception: BaseException | None = None) -> HttpResponse:
    if for_api(request):
        return JsonResponse({"detail": reason(exception, NOT_FOUND_IN_API)}, status=404)
    body = loader.render_to_string("404.html", {
        "reason": reason(exception, NOT_FOUND), "request_path": request.path}, request)
    return HttpResponseNotFound(body)


def permission_denied(request: HttpRequest,
                      exception: BaseException | None = None) -> HttpResponse:
    if for_api(request):
        return JsonResponse({"detail": reason(exception, FORBIDDEN)}, status=403)
    body = loader.render_to_string("403.html", {
        "reason": reason(exception, FORBIDDEN), "request_path": request.path,
        # "an administrator can give you the role" only where a role would let the user in.
        "role_would_help": not isinstance(exception, NoRoleWouldHelp)}, request)
    return HttpResponseForbidden(body)


def csrf_failure(request: HttpRequest, reason: str = "") -> HttpResponse:
    """CSRF_FAILURE_VIEW: Django's reasons ("CSRF cookie not set.") are safe to show."""
    body = loader.render_to_string("403_csrf.html", {
        "reason": reason, "request_path": request.path}, request)
    return HttpResponseForbidden(body)


def server_error(request: HttpRequest) -> HttpResponse:
    reference = getattr(request, "error_reference", None)
    if for_api(request):
        return JsonResponse({"detail": "The server failed on this request.",
                             "reference": reference}, status=500)
    # Rendered without the request, so without context processors: whatever failed (the
    # database, the session) is not touched again while saying that it failed.
    body = loader.get_template("500.html").render(
        {"reference": reference})
    return HttpResponseServerError(body)


class MethodNotAllowedMiddleware:
    """An empty 405 would show a blank page: say what the address is for, and the way back.
    The Allow header is kept; a 405 that already says something is left alone."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if response.status_code != 405 or response.content or getattr(
                response, "streaming", False):
            return response
        if for_api(request):
            response.content = b'{"detail": "This endpoint does not take this method."}'
            response["Content-Type"] = "application/json"
            return response
        back = request.path.rstrip("/").rsplit("/", 1)[0] + "/"
        allowed = [method.strip() for method in response.get("Allow", "").split(",")]
        response.content = loader.render_to_string("405.html", {
            "request_path": request.path, "back": back, "method": request.method,
            "readable": "GET" in allowed}, request).encode()
        response["Content-Type"] = "text/html; charset=utf-8"
        return response


class RefusedChangeMiddleware:
    """A POST refused with `ImmutableError` goes back where it came from, with the reason."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest,
                          exception: Exception) -> HttpResponse | None:
        from runs_app.models import ImmutableError

        if not isinstance(exception, ImmutableError) or request.method != "POST":
            return None
        # The view's transaction has been rolled back by now: nothing was written.
        text = "; ".join(exception.messages)
        logger.info("refused change on %s %s: %s", request.method, request.path, text)
        messages.error(request, f"Not saved: {text}.")
        return HttpResponseRedirect(back_url(request))


def back_url(request: HttpRequest) -> str:
    """The page the refused form came from; an admin delete goes back to the object's page."""
    if request.path.endswith("/delete/"):
        return request.path.removesuffix("delete/") + "change/"
    return request.get_full_path()
