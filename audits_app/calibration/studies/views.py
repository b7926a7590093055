"""The reader's path of a reading study at `/studies/ID/` (DESIGN section 10), and the
staff's progress page with the CSV downloads.

Every page is a plain form (POST with a CSRF token), so the path works without JavaScript,
by keyboard alone and on a small screen, in the release's language. A participant is a random
key in a signed cookie; a recruitment platform's ids arrive in the URL and are kept only as
keyed hashes. One URL (`go/`) shows whatever the participant does next (`participant_step`),
so a reload or the back button never skips or repeats a step: a form for a step already done
is ignored and the current step is shown. Pages never name a text's writer.
"""

from __future__ import annotations

from datetime import timedelta

from django.core import signing
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render

from audits_app import query_params
from audits_app.arena import ratelimits
from audits_app.arena.services import can_manage
from audits_app.calibration.studies import identity, selectors, services
from audits_app.calibration.studies.csv_export import responses_csv
from audits_app.calibration.studies.forms import AnswersForm, AttitudeForm, ConsentForm, ProfileForm
from audits_app.calibration.studies.words import PAGE
from audits_app.models import ReadingStudy, StudyParticipant, StudyReading, StudyStimulus
from audits_app.pages.viewer import is_staff, load_snapshot
from baitbench_site.methods import require_form, require_safe
from baitbench_site.post_only import post_only
from runs_app.readers import ReaderBrief, reader_brief

COOKIE = "baitbench_study_{}"
COOKIE_SALT = "audits_app.studies.participant"
COOKIE_MAX_AGE = int(timedelta(days=7).total_seconds())
SIMULATED_SALT = "audits_app.studies.simulated"
SIMULATED_MAX_AGE = int(timedelta(days=1).total_seconds())


def simulated_token(study: ReadingStudy) -> str:
    """What `reading_study_simulate` posts to mark its participants simulated; signed with
    the site's key, so no visitor can mark themselves (or anyone) simulated."""
    return signing.dumps(study.pk, salt=SIMULATED_SALT)


def _is_simulated(token: str, study: ReadingStudy) -> bool:
    try:
        return signing.loads(token, salt=SIMULATED_SALT, max_age=SIMULATED_MAX_AGE) == study.pk
    except signing.BadSignature:
        return False


def _study(request: HttpRequest, study_id: int) -> ReadingStudy:
    """An open study (staff may also see a draft or closed one); 404 for anyone else."""
    study = get_object_or_404(ReadingStudy.objects.select_related("release"), pk=study_id)
    if study.status == ReadingStudy.Status.DRAFT and not is_staff(request.user):
        raise Http404("No such study.")
    return study


def _participant(request: HttpRequest, study: ReadingStudy) -> StudyParticipant | None:
    key = request.get_signed_cookie(COOKIE.format(study.pk), default=None, salt=COOKIE_SALT)
    return (StudyParticipant.objects.select_related("study__release").filter(
        study=study, key=key).first() if key else None)


def _page(request: HttpRequest, study: ReadingStudy, template: str, status: int = 200,
          **context) -> HttpResponse:
    words = PAGE[study.language]
    return render(request, f"studies/{template}", {
        "study": study, "words": words, "language": study.language, **context}, status=status)


@require_safe
def study_detail(request: HttpRequest, study_id: int) -> HttpResponse:
    """What the study is, what is stored, and the consent form carrying the platform's ids."""
    study = _study(request, study_id)
    try:
        ids = identity.platform_ids(request.GET)
    except identity.PlatformIdError as problem:
        return _page(request, study, "detail.html", status=400, problem=str(problem))
    full, positions = selectors.positions_full(study)
    return _page(request, study, "detail.html", ids=ids, staff=is_staff(request.user),
                 form=ConsentForm(language=study.language), participant=_participant(
                     request, study), all_full=positions > 0 and full == positions,
                 some_full=0 < full < positions)


@post_only(get_goes_to="studies:detail")
def study_consent(request: HttpRequest, study_id: int) -> HttpResponse:
    study = _study(request, study_id)
    if not study.is_open:
        return _page(request, study, "closed.html", status=403)
    form = ConsentForm(request.POST, language=study.language)
    try:
        ids = identity.platform_ids(request.POST)
    except identity.PlatformIdError as problem:
        return _page(request, study, "detail.html", status=400, problem=str(problem))
    if not form.is_valid():
        return _page(request, study, "detail.html", status=400, form=form, ids=ids)
    if ratelimits.study_participant_limited(request):
        return _page(request, study, "limited.html", status=429)
    participant = services.participant_consent(
        study=study, ids=ids, simulated=_is_simulated(form.cleaned_data["simulated"], study),
        current=_participant(request, study))
    response = redirect("studies:go", study_id=study.pk)
    response.set_signed_cookie(COOKIE.format(study.pk), participant.key, salt=COOKIE_SALT,
                               max_age=COOKIE_MAX_AGE, httponly=True, samesite="Lax",
                               secure=request.is_secure())
    return response


@require_form
def study_go(request: HttpRequest, study_id: int) -> HttpResponse:
    """The participant's next step; a POST answers the step it names, if it is current."""
    study = _study(request, study_id)
    participant = _participant(request, study)
    if participant is None:
        return redirect("studies:detail", study_id=study.pk)
    step = selectors.participant_step(participant)
    if step.kind == "done":
        return redirect("studies:done", study_id=study.pk)
    if step.kind == "full":
        return _full(request, study, participant)
    if step.kind in ("already", "expired"):
        return _page(request, study, f"{step.kind}.html")
    if not study.is_open:
        return _page(request, study, "closed.html")
    if request.method == "POST":
        if ratelimits.study_answer_limited(request):
            return _page(request, study, "limited.html", status=429)
        if request.POST.get("step") == _step_name(step):
            answered = STEPS[step.kind](request, study, participant, step)
            if isinstance(answered, HttpResponse):
                return answered
        return redirect("studies:go", study_id=study.pk)
    return _show(request, study, participant, step)


def _full(request: HttpRequest, study: ReadingStudy,
          participant: StudyParticipant) -> HttpResponse:
    """Turned away by a full reading position: someone sent by a platform must end their
    submission there, through the study's screened-out link if it has one, else by returning
    it (Prolific's word), which frees the place on the platform without a code."""
    return _page(request, study, "full.html", screened_out_url=study.screened_out_url,
                 from_platform=bool(participant.platform_id_hash))


def _step_name(step: selectors.Step) -> str:
    return f"{step.kind}-{step.reading.order if step.reading else ''}"


def _brief(reading: StudyReading, language: str) -> ReaderBrief:
    return reader_brief(reading.scenario_version.document(), language)


def _form(step: selectors.Step, study: ReadingStudy, data=None):
    language = study.language
    if step.kind == "profile":
        return ProfileForm(data, language=language)
    brief = _brief(step.reading, language)
    if step.kind == "baseline":
        return AttitudeForm(data, brief=brief, language=language)
    if step.kind == "answers":
        return AnswersForm(data, brief=brief, language=language, attention=step.reading.order == 0,
                           ask_attitude=step.reading.stimulus.kind != StudyStimulus.Kind.NONE)
    return None


def _show(request: HttpRequest, study: ReadingStudy, participant: StudyParticipant,
          step: selectors.Step, form=None, status: int = 200) -> HttpResponse:
    words = PAGE[study.language]
    context = {"step": step, "step_name": _step_name(step), "participant": participant,
               "form": form or _form(step, study),
               "step_label": words["step"].format(step=step.number, steps=step.total)
               if step.total else ""}
    if step.reading is not None:
        brief = _brief(step.reading, study.language)
        context |= {
            "no_text": step.reading.stimulus.kind == StudyStimulus.Kind.NONE,
            "organisation_line": words["organisation"].format(
                organisation=brief.organisation, description=brief.description),
            "heading": words[f"{step.kind}_heading"].format(organisation=brief.organisation)
            if f"{step.kind}_heading" in words else ""}
    if step.kind == "read":
        reading = services.reading_stimulus_blind(reading=step.reading)
        services.reading_show(reading=reading)
        context["text"] = _stimulus_text(reading)
    return _page(request, study, f"{step.kind}.html", status=status, **context)


def _stimulus_text(reading: StudyReading) -> str:
    stimulus = reading.stimulus
    if stimulus.kind == StudyStimulus.Kind.CONTROL:
        return reading.scenario_version.document().control_text
    return stimulus.generation.text


def _answer_profile(request, study, participant, step):
    form = _form(step, study, request.POST)
    if not form.is_valid():
        return _show(request, study, participant, step, form=form, status=400)
    services.participant_place(participant=participant, traits=form.traits())
    return None


def _answer_baseline(request, study, participant, step):
    form = _form(step, study, request.POST)
    if not form.is_valid():
        return _show(request, study, participant, step, form=form, status=400)
    services.reading_baseline(reading=step.reading, attitude=form.attitude())
    return None


def _answer_read(request, study, participant, step):
    services.reading_read(reading=step.reading)
    return None


def _answer_answers(request, study, participant, step):
    form = _form(step, study, request.POST)
    if not form.is_valid():
        return _show(request, study, participant, step, form=form, status=400)
    attitude = form.attitude() if form.attitude_ids else list(step.reading.baseline)
    services.reading_answer(reading=step.reading, attitude=attitude,
                            knowledge=form.knowledge(), attention=form.attention())
    return None


STEPS = {"profile": _answer_profile, "baseline": _answer_baseline, "read": _answer_read,
         "answers": _answer_answers}


@require_safe
def study_done(request: HttpRequest, study_id: int) -> HttpResponse:
    """The completion code, and the way back to the platform with it."""
    study = _study(request, study_id)
    participant = _participant(request, study)
    if participant is None or participant.completed_at is None:
        return redirect("studies:go" if participant else "studies:detail", study_id=study.pk)
    url = study.completion_url.replace("{code}", participant.completion_code)
    return _page(request, study, "done.html", participant=participant, completion_url=url)


# ---------------------------------------------------------------------------------------------
# Staff: progress and the responses
# ---------------------------------------------------------------------------------------------


def _managed(request: HttpRequest, study_id: int) -> ReadingStudy:
    # Arms name the writers: publishers only, as the arena's pairs.
    if not can_manage(request.user):
        raise Http404("No such study.")
    return get_object_or_404(ReadingStudy.objects.select_related("release"), pk=study_id)


@require_safe
def study_progress(request: HttpRequest, study_id: int) -> HttpResponse:
    """Per reading position and arm: started, completed, excluded; people and the simulated
    crowd in separate tables."""
    study = _managed(request, study_id)
    left_out = services.study_texts_left_out(
        load_snapshot(study.release.publication),
        list(study.scenarios.values_list("slug", flat=True)))
    return render(request, "studies/progress.html", {
        "study": study, "left_out": left_out,
        "people": selectors.study_progress(study, simulated=False),
        "simulated": selectors.study_progress(study, simulated=True)})


@require_safe
def study_responses_csv(request: HttpRequest, study_id: int) -> HttpResponse:
    study = _managed(request, study_id)
    simulated = query_params.choice(request.GET, "simulated", ("0", "1"), "0") == "1"
    response = HttpResponse(responses_csv(study, simulated=simulated),
                            content_type="text/csv; charset=utf-8")
    name = f"{study.release.code}-study-{study.pk}{'-SIMULATED' if simulated else ''}.csv"
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response
