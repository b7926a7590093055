"""The operator's pages: a release's preflight, its live progress and the controls of its run.

GET views render; every action is a POST (with CSRF) that calls one service and ends with a
message and a redirect to the release's page, a refused action with the reason. The page
polls a small JSON answer (`progress.json`) with a few lines of the site's own JavaScript and
works without it (a refresh link). Only operators and superusers see or act; everyone else
gets 403.

URL names (namespace `operate`), stable for other pages to link to: `release-list`,
`release`, `progress`, `start`, `pause`, `resume`, `cancel`, `retry`, `budget`,
`models-refresh`.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from functools import wraps

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.cache import never_cache

from baitbench_site.methods import require_POST, require_safe
from baitbench_site.roles import can_operate
from runs_app.models import ImmutableError, Release, ReleaseStatus, StageRunState
from runs_app.preflight import preflight_models_list, release_preflight
from runs_app.schemas import STAGE_NAMES, STAGE_NEEDS
from runs_app.selectors import (
    ReleaseRun,
    StageStatus,
    WorkersAlive,
    format_eta,
    release_row_counts,
    release_row_problems,
    release_run,
    releases_with_runs,
    served_model_warnings,
    workers_alive,
)
from runs_app.services import (
    RunError,
    release_retry_failed,
    run_cancel,
    run_pause,
    run_resume,
    run_set_budget,
    run_start,
    stages_waiting,
)

# How often the page asks for fresh progress (milliseconds).
POLL_MILLISECONDS = 2000
# A stage's controls: (action, button label, URL name).
# What to do when no worker is alive, in the words of the command.
START_A_WORKER = "start a worker: manage.py qcluster"
STAGE_BUTTONS = [("start", "Start", "operate:start"), ("pause", "Pause", "operate:pause"),
                 ("resume", "Resume", "operate:resume"), ("cancel", "Cancel", "operate:cancel"),
                 ("retry", "Retry failed and unscored", "operate:retry")]



def operator_required(view: Callable) -> Callable:
    @wraps(view)
    @login_required
    def wrapper(request: HttpRequest, *args, **kwargs) -> HttpResponse:
        if not can_operate(request.user):
            raise PermissionDenied("running releases needs the operator role")
        return view(request, *args, **kwargs)
    return wrapper


# ---------------------------------------------------------------------------------------
# What the page and its JSON show
# ---------------------------------------------------------------------------------------


def stage_actions(release: Release, status: StageStatus, done: bool = False) -> list[str]:
    """The controls that apply to a stage now (the page hides the others)."""
    if release.is_published:
        return []
    retryable = status.progress.failed or status.progress.unscored
    if done:
        return ["retry"] if retryable else []
    actions = {
        StageRunState.ACTIVE: ["pause", "cancel"],
        StageRunState.PAUSED: ["resume", "cancel"],
    }.get(status.state, ["start"])
    if retryable:
        actions = [*actions, "retry"]
    return actions


def done_stages(run: ReleaseRun) -> set[str]:
    """Stages that are running with nothing left: no row pending or claimed, and nothing more
    can come, because every stage they read from is itself done, or not running (never
    started, or cancelled). A stage started alone is done once its rows are."""
    by_stage = {status.stage: status for status in run.stages}
    done: set[str] = set()
    for name in STAGE_NAMES:  # in the order of the chain: a stage's inputs come first
        status = by_stage.get(name)
        if status is None or status.state != StageRunState.ACTIVE:
            continue
        settled = all(need not in by_stage or need in done
                      or by_stage[need].state in ("", StageRunState.CANCELLED)
                      for need in STAGE_NEEDS[name])
        finished = status.progress.pending == 0 and status.progress.claimed == 0
        if settled and finished and (status.progress.total > 0
                                     or run.release.status in FINISHED_STATUSES):
            done.add(name)
    return done


def release_actions(run: ReleaseRun) -> list[str]:
    if run.release.is_published:
        return []
    done = done_stages(run)
    states = {status.state for status in run.stages if status.stage not in done}
    # Starting the chain adds the stages not running yet (never started, or cancelled).
    actions = ["start"] if states - {StageRunState.ACTIVE} else []
    if StageRunState.ACTIVE in states:
        actions.append("pause")
    if StageRunState.PAUSED in states:
        actions.append("resume")
    if states & {StageRunState.ACTIVE, StageRunState.PAUSED}:
        actions.append("cancel")
    return actions


def no_worker(workers: WorkersAlive | None) -> bool:
    """The heartbeats are readable and none is current: nothing queued runs."""
    return workers is not None and workers.visible and not workers.clusters


def workers_summary(workers: WorkersAlive) -> dict:
    """Which workers are alive, in one sentence for the run pages (`alive`: None when the
    heartbeat cannot be read here)."""
    if not workers.visible:
        return {"alive": None, "text": (
            "The workers' heartbeat cannot be read here: it is kept on Redis (REDIS_URL or "
            "BAITBENCH_CACHE_URL) or beside the embedded SQLite database, and this site has "
            "neither, so whether any worker is alive cannot be told.")}
    if not workers.clusters:
        return {"alive": False, "text": (
            f"No worker is alive: no `manage.py qcluster` has sent a heartbeat in the last "
            f"few seconds, so nothing queued runs. To run a release, {START_A_WORKER}.")}
    clusters = "; ".join(
        f"{cluster.name} on {cluster.host} ({cluster.workers} worker(s), "
        f"{cluster.status.lower()}, up {format_eta(cluster.up_seconds)})"
        for cluster in workers.alive)
    return {"alive": True, "text": (
        f"Workers alive: {workers.workers} worker process(es) in {workers.clusters} "
        f"cluster(s): {clusters}.")}


def _usd(value: float) -> str:
    return f"${value:,.4f}" if value < 100 else f"${value:,.2f}"


# A release in one of these has run to its end: its active stages have nothing left to do.
FINISHED_STATUSES = (ReleaseStatus.SCORED, ReleaseStatus.INCOMPLETE, ReleaseStatus.PUBLISHED)


def stage_row(release: Release, status: StageStatus, done: bool = False,
              workers: WorkersAlive | None = None) -> dict:
    """One stage's figures; `done` (see `done_stages`): running, with nothing left; a stage
    running with no worker alive says what to start."""
    progress = status.progress
    running = status.state == StageRunState.ACTIVE and not done
    # "Done" only where every row has its score (DESIGN section 5: every row says what it is).
    label = status.state_label
    if done:
        label = "Ended with gaps" if progress.gaps else "Done"
    # The state stays what the operator asked for; its cell says why nothing moves.
    cell = f"Waiting: {START_A_WORKER}" if running and no_worker(workers) else label
    return {
        "stage": progress.stage, "state": status.state, "state_label": label,
        "total": progress.total, "done": progress.done, "pending": progress.pending,
        "claimed": progress.claimed, "failed": progress.failed, "scored": progress.scored,
        "refused": progress.refused, "unscored": progress.unscored,
        "rate_per_minute": round(progress.rate_per_minute, 2),
        "eta_seconds": progress.eta_seconds if running else None,
        "cost_usd": progress.cost_usd, "tokens": progress.tokens,
        "actions": stage_actions(release, status, done),
        # The page's cells, formatted once here for the page and its script alike.
        "display": {
            "state_label": cell, "total": f"{progress.total:,}",
            "scored": f"{progress.scored:,}", "refused": f"{progress.refused:,}",
            "unscored": f"{progress.unscored:,}", "pending": f"{progress.pending:,}",
            "claimed": f"{progress.claimed:,}", "failed": f"{progress.failed:,}",
            "rate": f"{progress.rate_per_minute:,.1f}/min" if progress.rate_per_minute else "-",
            "time_left": format_eta(progress.eta_seconds) if running else "-",
            "spend": _usd(progress.cost_usd), "tokens": f"{progress.tokens:,}",
        },
    }


def run_notice(run: ReleaseRun) -> str:
    """The one thing an operator must know first, if any."""
    if run.release.is_published:
        return f"Release {run.release.code} is published: nothing under it runs."
    if run.over_budget:
        return (f"Stopped at the budget cap: {_usd(run.spent_usd)} spent of a "
                f"${run.budget_usd:,.2f} cap. Workers claim no new work (calls under way are "
                f"finished and written). Raise or remove the cap to resume.")
    return _workers_notice(run)


def _workers_notice(run: ReleaseRun) -> str:
    """Why work that waits is not being done: no worker alive (the clusters' heartbeat), or
    workers alive that have claimed nothing of this release."""
    workers = run.workers
    running = set(run_stages_running(run))
    if running and no_worker(workers):
        return (f"No worker is alive: no `manage.py qcluster` has sent a heartbeat in the last "
                f"few seconds, so stage(s) {', '.join(sorted(running))} wait. "
                f"{START_A_WORKER[0].upper()}{START_A_WORKER[1:]}; the queued drains then run.")
    waiting = run.oldest_queued_at and not run.drains_running and not run.claimed and (
        timezone.now() - run.oldest_queued_at).total_seconds() > 60
    if not waiting:
        return ""
    if workers is not None and workers.visible:
        return (f"Workers are alive ({workers.workers} in {workers.clusters} cluster(s)) but "
                f"none has claimed work of this release for over a minute: they are busy "
                f"with other tasks, or the queue lost these drains (the schedule queues "
                f"them again within a minute).")
    return ("Drains are queued but no worker has taken one for over a minute, and the "
            "workers' heartbeat cannot be read here (it needs REDIS_URL or "
            "BAITBENCH_CACHE_URL): is a worker (`manage.py qcluster`) running?")


def run_stages_running(run: ReleaseRun) -> list[str]:
    """The stages that are running and not done: work a worker must do."""
    done = done_stages(run)
    return [status.stage for status in run.stages
            if status.state == StageRunState.ACTIVE and status.stage not in done]


def run_payload(run: ReleaseRun) -> dict:
    """The JSON the page polls: the same figures the page renders."""
    release = run.release
    done = done_stages(run)
    return {
        "release": release.code, "status": release.status,
        "status_label": release.get_status_display(),
        "spent_usd": run.spent_usd,
        "budget_usd": None if run.budget_usd is None else str(run.budget_usd),
        "over_budget": run.over_budget, "notice": run_notice(run),
        "spent_display": _usd(run.spent_usd),
        "workers": {"running": run.drains_running, "queued": run.drains_queued,
                    **workers_summary(run.workers or WorkersAlive(visible=False))},
        "actions": release_actions(run),
        "stages": [stage_row(release, status, status.stage in done, run.workers)
                   for status in run.stages],
        # Why it cannot be published as it is, from its rows alone (the publish page adds
        # the spot-check gate).
        "row_problems": release_row_problems(release),
        # Texts whose reply named another model than their writer: a warning, not a refusal.
        "served_warnings": served_model_warnings(release),
        # UTC, as the page shows it (the script keeps the HH:MM:SS).
        "updated_at": timezone.now().astimezone(dt.UTC).isoformat(timespec="seconds"),
    }


# ---------------------------------------------------------------------------------------
# Pages
# ---------------------------------------------------------------------------------------


@require_safe
@operator_required
def release_list(request: HttpRequest) -> HttpResponse:
    rows = []
    for release in releases_with_runs():
        finished = release.status in FINISHED_STATUSES
        # "Done" only where every row has its score (an incomplete release has gaps).
        ended = "Ended with gaps" if release.status == ReleaseStatus.INCOMPLETE else "Done"
        states = {run.stage: ended if finished and run.state == StageRunState.ACTIVE
                  else run.get_state_display() for run in release.stage_runs.all()}
        control = getattr(release, "run", None)
        rows.append({"release": release, "states": states, "control": control,
                     "over_budget": bool(control and control.over_budget)})
    return render(request, "runs_app/release_list.html", {
        "rows": rows, "workers": workers_summary(workers_alive())})


class BudgetForm(forms.Form):
    budget_usd = forms.DecimalField(
        label="Budget cap (USD)", required=False, min_value=0, max_digits=12, decimal_places=2,
        help_text="Workers stop claiming new work once the recorded spend reaches it. Empty: "
                  "no cap.")


@require_safe
@never_cache
@operator_required
def release_page(request: HttpRequest, code: str) -> HttpResponse:
    release = get_object_or_404(Release, code=code)
    run = release_run(release)
    # The page never waits on the network: it shows the cached models list (or says there
    # is none); the refresh button fetches it.
    models, error, warnings = preflight_models_list(release, fetch=False)
    payload = run_payload(run)
    preflight = release_preflight(release, models, listing_error=error, warnings=warnings)
    return render(request, "runs_app/release_page.html", {
        "release": release, "run": run, "payload": payload, "stages": payload["stages"],
        "preflight": preflight,
        "budget_form": BudgetForm(initial={"budget_usd": run.budget_usd}),
        "poll_ms": POLL_MILLISECONDS, "poll_seconds": POLL_MILLISECONDS // 1000,
        "stage_buttons": STAGE_BUTTONS,
        "gaps": [counts for counts in release_row_counts(release)
                 if counts.unscored or counts.failed],
    })


@require_safe
@never_cache
@operator_required
def release_progress(request: HttpRequest, code: str) -> JsonResponse:
    release = get_object_or_404(Release, code=code)
    return JsonResponse(run_payload(release_run(release)))


# ---------------------------------------------------------------------------------------
# Actions
# ---------------------------------------------------------------------------------------


def _stages(request: HttpRequest) -> list[str] | None:
    """The stage a form names; none means every stage."""
    stage = request.POST.get("stage", "").strip()
    return [stage] if stage else None


def _which(stages: list[str] | None) -> str:
    return f"stage {stages[0]}" if stages else "every stage"


def sentence(text: str) -> str:
    """The text ending in one full stop (form errors already end in one)."""
    text = text.rstrip()
    return text if text.endswith((".", "!", "?")) else f"{text}."


def _act(request: HttpRequest, code: str, act: Callable[[Release], str]) -> HttpResponse:
    """Run one action; a refusal (published release, a stage outside the stage set) becomes
    an error message. Always back to the release's page."""
    release = get_object_or_404(Release, code=code)
    try:
        text = act(release)
    except ImmutableError as error:
        messages.error(request, sentence(f"Refused: {'; '.join(error.messages)}"))
    except RunError as error:
        messages.error(request, sentence(f"Refused: {error}"))
    else:
        level = messages.WARNING if text.startswith("Nothing") else messages.SUCCESS
        messages.add_message(request, level, text)
    return redirect(reverse("operate:release", args=[release.code]))


@require_POST
@operator_required
def run_start_view(request: HttpRequest, code: str) -> HttpResponse:
    stages = _stages(request)

    def act(release: Release) -> str:
        names = run_start(release=release, stages=stages, user=request.user)
        scope = "the chain" if stages is None else f"stage {names[0]}"
        waiting = "".join(f" Note: {line}." for line in stages_waiting(release, names))
        who = (f"no worker is alive, so nothing runs yet: {START_A_WORKER}"
               if no_worker(workers_alive()) else "workers drain it as they come free")
        return f"Started {scope} of {release.code} ({', '.join(names)}); {who}.{waiting}"
    return _act(request, code, act)


@require_POST
@operator_required
def run_pause_view(request: HttpRequest, code: str) -> HttpResponse:
    stages = _stages(request)

    def act(release: Release) -> str:
        count = run_pause(release=release, stages=stages, user=request.user)
        if not count:
            return f"Nothing to pause: {_which(stages)} of {release.code} is not running."
        return (f"Paused {count} stage(s) of {release.code}: no new work is claimed; calls "
                f"under way are finished and written.")
    return _act(request, code, act)


@require_POST
@operator_required
def run_resume_view(request: HttpRequest, code: str) -> HttpResponse:
    stages = _stages(request)

    def act(release: Release) -> str:
        count = run_resume(release=release, stages=stages, user=request.user)
        if not count:
            return f"Nothing to resume: {_which(stages)} of {release.code} is not paused."
        return f"Resumed {count} stage(s) of {release.code}."
    return _act(request, code, act)


@require_POST
@operator_required
def run_cancel_view(request: HttpRequest, code: str) -> HttpResponse:
    stages = _stages(request)

    def act(release: Release) -> str:
        count = run_cancel(release=release, stages=stages, user=request.user)
        if not count:
            return f"Nothing to cancel: {_which(stages)} of {release.code} was not started."
        return (f"Cancelled {count} stage(s) of {release.code}: nothing more is claimed or "
                f"planned for them until they are started again; written rows stay.")
    return _act(request, code, act)


@require_POST
@operator_required
def run_retry_view(request: HttpRequest, code: str) -> HttpResponse:
    stages = _stages(request)

    def act(release: Release) -> str:
        if stages is None:
            raise RunError("retrying failed or unscored rows needs a stage")
        count = release_retry_failed(release=release, stage_name=stages[0], user=request.user)
        if not count:
            return (f"Nothing to retry: stage {stages[0]} of {release.code} has no failed or "
                    f"unscored rows.")
        return (f"{count} failed or unscored {stages[0]} row(s) of {release.code} are pending "
                f"again.")
    return _act(request, code, act)


@require_POST
@operator_required
def run_budget_view(request: HttpRequest, code: str) -> HttpResponse:
    form = BudgetForm(request.POST)

    def act(release: Release) -> str:
        if not form.is_valid():
            raise RunError("; ".join(f"{form.fields[name].label}: {' '.join(errors)}"
                                     for name, errors in form.errors.items()))
        budget = form.cleaned_data["budget_usd"]
        control = run_set_budget(release=release, budget_usd=budget, user=request.user)
        if budget is None:
            return f"Removed the budget cap of {release.code}; {_usd(control.spent_usd)} spent."
        text = f"Budget cap of {release.code} set to ${budget:,.2f}; " \
               f"{_usd(control.spent_usd)} spent."
        if control.over_budget:
            text += " The spend has reached it: workers claim no new work."
        return text
    return _act(request, code, act)


@require_POST
@operator_required
def models_refresh_view(request: HttpRequest, code: str) -> HttpResponse:
    def act(release: Release) -> str:
        models, error, warnings = preflight_models_list(release, refresh=True)
        if models is None and not error:
            return "Nothing to fetch: every model of this release is a fixture model (offline)."
        if error or warnings:
            raise RunError(f"the models list could not be fetched: {error or warnings[0]}")
        return f"Fetched OpenRouter's models list: {len(models)} models."
    return _act(request, code, act)
