"""Review screens, blind until a verdict is saved. Views parse input, call one service, and render.

Blind by default: until an auditor has saved a verdict on an item, its page carries neither the
writing model nor the jury's labels, facts or techniques (the jury's claims are shown as spans to
label, without their labels). A text a published release holds for its arena or reading studies
is absent from every review screen for whoever does not publish, a checked one too
(`_held_from`), until its holder reveals it."""

from __future__ import annotations

import re
from functools import wraps

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.html import escape, format_html
from django.utils.safestring import SafeString, mark_safe

from audits_app import csv_files
from audits_app.calibration.readers_import import human_readers_import
from audits_app.calibration.selectors import calibration_summary
from audits_app.models import SpotCheck, SpotCheckBatch
from audits_app.pages.viewer import not_blind_ids, withheld_texts
from audits_app.publication import same_words
from audits_app.review.forms import (
    TECHNIQUES,
    BatchForm,
    CorrectionForm,
    OutOfBandForm,
    ReaderImportForm,
    SpotCheckForm,
)
from audits_app.spotchecks import selectors, services
from audits_app.spotchecks.imports import oob_audit_import
from baitbench_site.methods import require_form, require_POST, require_safe
from baitbench_site.roles import RECORD_PERMISSION, NoRoleWouldHelp, is_auditor
from runs_app.models import Generation, Release, ReleaseStatus


def auditor_required(view):
    """Staff with the auditor role; anyone else gets 403 (not a login loop)."""
    @wraps(view)
    @login_required
    def wrapper(request: HttpRequest, *args, **kwargs) -> HttpResponse:
        if not is_auditor(request.user):
            raise PermissionDenied("the review screens are for auditors")
        return view(request, *args, **kwargs)
    return wrapper


def staff_required(view):
    @wraps(view)
    @login_required
    def wrapper(request: HttpRequest, *args, **kwargs) -> HttpResponse:
        if not request.user.is_staff:
            raise PermissionDenied("staff only")
        return view(request, *args, **kwargs)
    return wrapper


@require_safe
@auditor_required
def queue(request: HttpRequest) -> HttpResponse:
    batches: dict[int, dict] = {}
    held = _held_everywhere(request)
    withdrawn = _withdrawn(request)
    for check in selectors.auditor_queue(request.user, leave_out=held):
        batch = check.item.batch
        entry = batches.setdefault(batch.pk, {"batch": batch, "checks": [], "done": 0,
                                              "open": 0, "withdrawn": 0})
        check.withdrawn = check.generation_id in withdrawn
        entry["checks"].append(check)
        entry["done"] += check.is_done
        entry["open"] += not check.withdrawn
        entry["withdrawn"] += check.withdrawn
    held_checks = SpotCheck.objects.filter(auditor=request.user, item__isnull=False,
                                           generation_id__in=held).count() if held else 0
    return render(request, "review/queue.html", {
        "batches": list(batches.values()), "held_checks": held_checks,
        "next": selectors.next_pending(request.user, leave_out=held | withdrawn),
        "releases": [_release_actions(release, request.user)
                     for release in Release.objects.exclude(status="draft").order_by("code")],
    })


def _release_actions(release: Release, user) -> dict:
    """What the queue offers for a release: only what the views behind the links allow this
    user (a published release takes no new spot-checks, audits or reader results)."""
    open_ = not release.is_published
    return {
        "release": release,
        "batch": open_ and user.has_perm("audits_app.add_spotcheckbatch"),
        "audit": open_ and user.has_perm(RECORD_PERMISSION),
        "readers": open_ and user.has_perm("audits_app.add_humanreaderresult"),
    }


def marked_text(text: str, claims: list[selectors.JuryClaim]) -> SafeString:
    """The text, escaped, with each jury claim's first occurrence wrapped in a numbered <mark>."""
    spans: list[tuple[int, int, int]] = []
    for claim in claims:
        pattern = r"\s+".join(re.escape(part) for part in claim.quote.split())
        found = re.search(pattern, text, flags=re.IGNORECASE) if pattern else None
        if found and not any(start < found.end() and found.start() < end
                             for start, end, _ in spans):
            spans.append((found.start(), found.end(), claim.position))
    pieces, cursor = [], 0
    for start, end, position in sorted(spans):
        pieces.append(escape(text[cursor:start]))
        pieces.append(format_html(
            '<mark id="claim-{0}" title="Claim {0}"><sup>[{0}]</sup>{1}</mark>',
            position, text[start:end]))
        cursor = end
    pieces.append(escape(text[cursor:]))
    return mark_safe("".join(str(piece) for piece in pieces))


def _facts(generation) -> list[dict]:
    document = generation.scenario_version.content
    return [{"id": fact["id"], "label": fact["label"], "text": fact["text"]}
            for fact in document.get("facts", [])]


def _fact_choices(facts: list[dict]) -> list[tuple[str, str]]:
    """A checkbox per fact that reads as the fact, not as its bare id."""
    return [(fact["id"], f"{fact['id']} ({fact['label']}): {fact['text']}") for fact in facts]


def _own_check(request: HttpRequest, pk: int) -> SpotCheck:
    # Another auditor's check is a 404: its existence, writer and labels are not theirs to see.
    check = get_object_or_404(
        SpotCheck.objects.select_related("generation__model", "generation__scenario_version",
                                         "release", "item__batch"),
        pk=pk, auditor=request.user,
    )
    # So is a check of a text its release now holds for the arena or reading studies, to
    # whoever does not publish, until the holder reveals it: the auditor who checked it
    # before publication would otherwise read it here with its writer while the arena shows
    # it blind (as the public pages, where it is a 404 too).
    if check.generation_id in _held_from(request, check.release):
        raise Http404("No such spot-check.")
    return check


def _form_kwargs(check: SpotCheck, claims: list, facts: list[dict]) -> dict:
    return {"claims": claims, "facts": _fact_choices(facts),
            "revealed": check.is_done, "overall_answered": check.agrees_with_jury is not None}


@require_form
@auditor_required
def check_detail(request: HttpRequest, pk: int) -> HttpResponse:
    check = _own_check(request, pk)
    if check.release.is_published and not check.is_done:
        # Published first: the check can no longer be recorded, so the blind form is not shown.
        return render(request, "review/check_closed.html", {"check": check},
                      status=409 if request.method == "POST" else 200)
    if not check.is_done and same_words.public_elsewhere_ids(check.release,
                                                            [check.generation_id]):
        # Its words became public elsewhere, with the writer, after it was drawn (a release
        # published since): it can no longer be checked blind, so neither text nor form shows.
        return render(request, "review/check_withdrawn.html", {"check": check},
                      status=409 if request.method == "POST" else 200)
    text = selectors.jury_texts(check.release, [check.generation_id]).get(check.generation_id)
    claims = text.claims if text else []
    facts = _facts(check.generation)
    form_kwargs = _form_kwargs(check, claims, facts)
    if request.method == "POST":
        if not request.user.has_perm(RECORD_PERMISSION):
            raise PermissionDenied("recording spot-checks needs the record_spotcheck permission")
        # Disabled (already final) fields take their stored values from `initial`.
        form = SpotCheckForm(request.POST, initial=_initial(check), **form_kwargs)
        if form.is_valid():
            services.spotcheck_record(
                check=check, user=request.user, claim_labels=form.claim_labels(),
                facts_conveyed=form.cleaned_data["facts_conveyed"],
                techniques=form.all_techniques(), agrees_with_jury=form.agrees(),
                note=form.cleaned_data["note"],
            )
            if "next" in request.POST:
                following = selectors.next_pending(request.user, after=check,
                                                   leave_out=_skipped(request))
                return redirect(f"/review/checks/{following.pk}/" if following else "/review/")
            return redirect(f"/review/checks/{check.pk}/")
    else:
        form = SpotCheckForm(initial=_initial(check), **form_kwargs)
    return _check_page(request, check, text, form)


@auditor_required
@require_POST
def check_correct(request: HttpRequest, pk: int) -> HttpResponse:
    """A correction of a revealed check: a new row beside it, never an edit of it."""
    check = _own_check(request, pk)
    services.spotcheck_correction_allowed(check=check, user=request.user)
    text = selectors.jury_texts(check.release, [check.generation_id]).get(check.generation_id)
    claims = text.claims if text else []
    form = CorrectionForm(request.POST, claims=claims,
                          facts=_fact_choices(_facts(check.generation)))
    if form.is_valid():
        try:
            services.spotcheck_correct(
                check=check, user=request.user, claim_labels=form.claim_labels(),
                facts_conveyed=form.cleaned_data["facts_conveyed"],
                techniques=form.all_techniques(), agrees_with_jury=form.agrees(),
                note=form.cleaned_data["note"], reason=form.cleaned_data["reason"],
            )
        except services.CorrectionError as problem:
            form.add_error(None, str(problem))
        else:
            return redirect(f"/review/checks/{check.pk}/#corrections")
    verdict = SpotCheckForm(initial=_initial(check), **_form_kwargs(check, claims,
                                                                   _facts(check.generation)))
    return _check_page(request, check, text, verdict, correction=form, status=400)


def _check_page(request: HttpRequest, check: SpotCheck, text, form: SpotCheckForm, *,
                correction: CorrectionForm | None = None, status: int = 200) -> HttpResponse:
    claims = text.claims if text else []
    revealed = check.is_done
    context = {
        "check": check, "generation": check.generation, "facts": _facts(check.generation),
        "uncertainties": check.generation.scenario_version.content.get("uncertainties", []),
        "scenario": check.generation.scenario_version.content,
        "marked": marked_text(check.generation.text, claims),
        "claim_fields": [(claim, form[f"claim_{claim.position}"]) for claim in claims],
        "form": form, "revealed": revealed, "progress": selectors.queue_progress(
            check, leave_out=_held_from(request, check.release)),
        "following": selectors.next_pending(request.user, after=check,
                                            leave_out=_skipped(request))
        if revealed else None,
        "corrections": list(check.corrections.select_related("made_by")),
    }
    if revealed and text is not None:
        context["jury"] = _jury_context(text, check)
        if not check.release.is_published:
            correction = correction or CorrectionForm(
                initial=_correction_initial(check), claims=claims,
                facts=_fact_choices(context["facts"]))
            context["correction"] = correction
            context["correction_claims"] = [
                (claim, correction[f"claim_{claim.position}"]) for claim in claims]
    return render(request, "review/check.html", context, status=status)


def _correction_initial(check: SpotCheck) -> dict:
    """The correction form starts from the check as it stands (after earlier corrections)."""
    state = services.spotcheck_state(check)
    known = {value for value, _ in TECHNIQUES}
    initial = {f"claim_{int(entry['position'])}": entry["label"]
               for entry in state["claim_labels"]}
    initial.update({
        "facts_conveyed": state["facts_conveyed"],
        "techniques": [t for t in state["techniques"] if t in known],
        "other_techniques": ", ".join(t for t in state["techniques"] if t not in known),
        "note": state["note"],
        "overall": {True: "agree", False: "disagree"}.get(state["agrees_with_jury"], ""),
    })
    return initial


def _initial(check: SpotCheck) -> dict:
    initial = {f"claim_{position}": label for position, label in check.label_by_position().items()}
    known = {value for value, _ in TECHNIQUES}
    initial.update({
        "facts_conveyed": check.facts_conveyed,
        "techniques": [t for t in check.techniques if t in known],
        "other_techniques": ", ".join(t for t in check.techniques if t not in known),
        "note": check.note,
        "overall": {True: "agree", False: "disagree"}.get(check.agrees_with_jury, ""),
    })
    return initial


def _jury_context(text: selectors.JuryText, check: SpotCheck) -> dict:
    mine = check.label_by_position()
    differ = sum(1 for claim in text.claims
                 if mine.get(claim.position) and mine[claim.position] != claim.label)
    return {
        "model": check.generation.model,
        "differ": differ,
        "jury_class": text.jury_class,
        "disagreed": text.disagreed,
        "jurors": sorted(text.jurors.items()),
        "claims": [{"claim": claim, "label": claim.label, "mine": mine.get(claim.position),
                    "by_seat": sorted(claim.labels.items())} for claim in text.claims],
        "facts": sorted(text.facts_conveyed.items()),
        "techniques": sorted(text.techniques.items()),
    }


@require_safe
@staff_required
def release_agreement(request: HttpRequest, code: str) -> HttpResponse:
    release = get_object_or_404(Release, code=code)
    return render(request, "review/agreement.html", {
        "release": release, "summary": selectors.agreement_summary(release),
        "gate": selectors.gate_figures(release), "config_gate": release.parsed_config().gate,
        "calibration": calibration_summary(release),
    })


@require_form
@auditor_required
def batch_create(request: HttpRequest, code: str) -> HttpResponse:
    release = get_object_or_404(Release, code=code)
    if not request.user.has_perm("audits_app.add_spotcheckbatch"):
        raise PermissionDenied("creating batches needs the auditor role")
    if release.is_published:
        raise NoRoleWouldHelp(f"release {release.code} is published: no new spot-checks")
    form = BatchForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            batch = services.spotcheck_batch_create(
                release=release, size=data["size"], share=data["share"], seed=data["seed"],
                disagreement_weight=data["disagreement_weight"],
                double_code_share=data["double_code_share"], auditors=list(data["auditors"]),
                name=data["name"], user=request.user,
                leave_out=not_blind_ids,
            )
        except services.BatchError as problem:
            form.add_error(None, str(problem))
        else:
            # Redirected, so that reloading the answer shows the batch and makes no second one.
            return redirect("review:batch", code=release.code, batch_id=batch.pk)
    return render(request, "review/batch_form.html", {"release": release, "form": form})


@require_safe
@auditor_required
def batch_detail(request: HttpRequest, code: str, batch_id: int) -> HttpResponse:
    batch = get_object_or_404(SpotCheckBatch.objects.select_related("release"),
                              pk=batch_id, release__code=code)
    return render(request, "review/batch_created.html",
                  {"release": batch.release, "batch": batch})


@require_form
@auditor_required
def oob_import(request: HttpRequest, code: str) -> HttpResponse:
    release = get_object_or_404(Release, code=code)
    if release.is_published:
        return _closed_to_imports(request, release, "review/oob_import.html")
    form = OutOfBandForm(request.POST or None, request.FILES or None)
    result = None
    if request.method == "POST":
        if not request.user.has_perm(RECORD_PERMISSION):
            raise PermissionDenied("recording audits needs the record_spotcheck permission")
        if form.is_valid():
            data = form.cleaned_data
            result = oob_audit_import(
                release=release, auditor_name=data["auditor_name"],
                organisation=data["organisation"], audited_on=data["audited_on"],
                method=data["method"], csv_text=form.csv_content(),
                source_name=getattr(data.get("file"), "name", ""), user=request.user,
            )
    return render(request, "review/oob_import.html",
                  {"release": release, "form": form, "result": result})


@require_form
@auditor_required
def readers_import(request: HttpRequest, code: str) -> HttpResponse:
    release = get_object_or_404(Release, code=code)
    if release.is_published:
        return _closed_to_imports(request, release, "review/readers_import.html")
    form = ReaderImportForm(request.POST or None, request.FILES or None)
    result = None
    if request.method == "POST":
        if not request.user.has_perm("audits_app.add_humanreaderresult"):
            raise PermissionDenied("importing reader results needs the auditor role")
        if form.is_valid():
            result = human_readers_import(
                release=release, csv_text=form.csv_content(),
                source_name=getattr(form.cleaned_data.get("file"), "name", ""))
    return render(request, "review/readers_import.html",
                  {"release": release, "form": form, "result": result})


def _closed_to_imports(request: HttpRequest, release: Release, template: str) -> HttpResponse:
    """A published release takes nothing new (DESIGN section 8): its import page says so
    instead of offering a form the import would refuse; a post is answered 403."""
    return render(request, template, {
        "release": release, "form": None, "result": None,
        "closed": f"Release {release.code} is published: its evidence is frozen in the "
                  f"published snapshot and nothing can be added to it. Results for a "
                  f"published release go into a new release."},
        status=403 if request.method == "POST" else 200)


# --- out-of-band audits: what to audit, blind -------------------------------------------------

WORKSHEET_COLUMNS = ("text", "scenario", "task", "condition", "claim", "quote", "label", "agree",
                     "note")
TEMPLATE_COLUMNS = ("text", "claim", "label", "agree", "note")


def csv_download(text: str, name: str) -> HttpResponse:
    response = HttpResponse(text, content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response


def _held_from(request: HttpRequest, release: Release) -> frozenset[int]:
    """The texts the release still holds for its arena or reading studies, and its texts
    with the words of a text another release holds (a draft's twin of an arena text), unless
    this person publishes: the rule every public page follows (`viewer.withheld_texts`). Held
    texts are left off the audit's list, worksheet and template and the review queue, and
    their pages (the audit's, a spot-check's) are a 404, as on the public pages: an auditor
    who met one in the arena or a study would otherwise find it here under its cell, with
    its jury's claims (a spot-check's page with its writer too), and the public list's gaps
    would name its writer. Read once a request per release (a check's page asks twice: for
    the check itself and for its place in the queue)."""
    known: dict[int, frozenset[int]] = request.__dict__.setdefault("held_texts", {})
    if release.pk not in known:
        known[release.pk] = frozenset(withheld_texts(request.user, release.pk)
                                      .values_list("pk", flat=True))
    return known[release.pk]


def _held_everywhere(request: HttpRequest) -> frozenset[int]:
    """`_held_from` for every release at once (the review queue spans them, and so does its
    next check), read once a request."""
    if "held_everywhere" not in request.__dict__:
        request.__dict__["held_everywhere"] = frozenset(
            withheld_texts(request.user).values_list("pk", flat=True))
    return request.__dict__["held_everywhere"]


def _withdrawn(request: HttpRequest) -> frozenset[int]:
    """The texts of this person's pending checks (releases not published) whose words became
    public elsewhere, with their writer, after they were drawn (`same_words.
    public_elsewhere_ids`): their checks are withdrawn when opened, so the queue says so
    and its "next" never leads to one. Read once a request."""
    if "withdrawn" not in request.__dict__:
        pending: dict[int, tuple[Release, list[int]]] = {}
        for check in SpotCheck.objects.filter(
                auditor=request.user, status=SpotCheck.Status.ASSIGNED, item__isnull=False
        ).exclude(release__status=ReleaseStatus.PUBLISHED).select_related("release"):
            pending.setdefault(check.release_id, (check.release, []))[1].append(
                check.generation_id)
        request.__dict__["withdrawn"] = frozenset().union(
            *(same_words.public_elsewhere_ids(release, ids)
              for release, ids in pending.values()))
    return request.__dict__["withdrawn"]


def _skipped(request: HttpRequest) -> frozenset[int]:
    """The texts whose checks "next" passes over: held from this person, or withdrawn."""
    return _held_everywhere(request) | _withdrawn(request)


@require_safe
@auditor_required
def oob_texts(request: HttpRequest, code: str) -> HttpResponse:
    """The texts an out-of-band audit may cover, by code: never their writer nor the jury's
    labels, which an auditor learns only after a verdict (the review screens' rule)."""
    release = get_object_or_404(Release, code=code)
    held = _held_from(request, release)
    return render(request, "review/oob_texts.html", {
        "release": release, "held": bool(held),
        "texts": selectors.auditable_texts(release, leave_out=held)})


@require_safe
@auditor_required
def oob_worksheet(request: HttpRequest, code: str) -> HttpResponse:
    """The texts as a CSV to fill in: one row per jury claim and one `overall` row per text.
    Its label, agree and note columns are empty; imported back, unfilled rows are skipped."""
    release = get_object_or_404(Release, code=code)
    rows = []
    for text in selectors.auditable_texts(release, leave_out=_held_from(request, release)):
        cell = {"text": text.code, "scenario": text.scenario, "task": text.task,
                "condition": text.condition}
        rows += [{**cell, "claim": claim.position, "quote": claim.quote} for claim in text.claims]
        rows.append({**cell, "claim": "overall"})
    return csv_download(csv_files.csv_text(rows, WORKSHEET_COLUMNS), f"{code}-audit-texts.csv")


@require_safe
@auditor_required
def oob_template(request: HttpRequest, code: str) -> HttpResponse:
    """The columns of an out-of-band CSV, explained in comment rows, with two example rows
    (commented out) for one of the release's texts."""
    release = get_object_or_404(Release, code=code)
    example = next(iter(sorted(selectors.audit_text_codes(
        release, leave_out=_held_from(request, release)))), "t0123456789ab")
    notes = [
        "# One row per verdict. Rows whose first cell starts with # are skipped.",
        f"# text: a code from the list of texts to audit "
        f"({request.build_absolute_uri(f'/review/releases/{code}/out-of-band/texts/')})",
        "# claim: the number of the jury claim (1 2 ...) or overall",
        "# label: supported / exaggeration / contradiction / fabrication (claim rows)",
        "# agree: agree or disagree with the jury (overall rows); note: anything",
    ]
    rows = [{"text": note} for note in notes] + [
        {"text": f"# {example}", "claim": 1, "label": "supported"},
        {"text": f"# {example}", "claim": "overall", "agree": "disagree",
         "note": "leaves out when the warning came"},
    ]
    return csv_download(csv_files.csv_text(rows, TEMPLATE_COLUMNS), f"{code}-out-of-band.csv")


@require_safe
@auditor_required
def oob_text(request: HttpRequest, code: str, text: str) -> HttpResponse:
    """One text to audit, blind: the text with the jury's claims marked and numbered (no
    labels), and the scenario's facts; no writer."""
    release = get_object_or_404(Release, code=code)
    generation_id = selectors.audit_text_codes(
        release, leave_out=_held_from(request, release)).get(text.lower())
    if generation_id is None:
        raise Http404("No such text to audit in this release.")
    generation = get_object_or_404(
        Generation.objects.select_related("scenario_version__scenario"), pk=generation_id)
    claims = selectors.jury_texts(release, [generation_id])[generation_id].claims
    content = generation.scenario_version.content
    return render(request, "review/oob_text.html", {
        "release": release, "code": text.lower(), "generation": generation, "claims": claims,
        "scenario": content, "facts": _facts(generation),  # as the release pinned it
        "uncertainties": content.get("uncertainties", []),
        "marked": marked_text(generation.text, claims),
    })
