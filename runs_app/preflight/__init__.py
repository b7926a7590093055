"""Preflight: can a release run as configured, and what will it cost? (DESIGN section 8)

Before anything is paid for: every model id is on OpenRouter's models list, its context and
output limits fit what the release will send and ask for, its prices are known, the reader
keeps out of the writers' families, and a cost estimate per stage as a low-high range.
Nothing is called but the models list (`runs_app.providers.models_list`), and not even that
for a release of fixture models only.

`profiles` works out the calls and their prompt sizes from the release's own prompts,
`checks` and `estimate` are pure; this module gathers the inputs and the result.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import functools
import textwrap
from pathlib import Path

from runs_app.models import Release, ScoringVersion
from runs_app.preflight.checks import Check, release_checks
from runs_app.preflight.estimate import CostLine, Total, cost_lines, totals
from runs_app.preflight.profiles import (
    CHARS_PER_TOKEN,
    TYPICAL_REPLY_TOKENS,
    TYPICAL_TEXT_WORDS,
    CallProfile,
    PromptInputs,
    call_profiles,
)
from runs_app.providers.models_list import (
    ModelsList,
    ModelsListError,
    cached_models_list,
    models_list,
    read_models_file,
)
from runs_app.providers.pool import FIXTURE_PREFIX
from runs_app.schemas import ReleaseConfig
from scenarios_app.models import Condition, Task

__all__ = ["Check", "CostLine", "Preflight", "Total", "prompt_inputs", "release_preflight",
           "preflight_models_list"]

def method_note(tasks: list[str], profiles: list[CallProfile]) -> str:
    """How the estimate is made, naming the typical text lengths of the release's own tasks
    and the typical replies of the calls it plans (a T1-only release has no T4 answers)."""
    kinds = {profile.purpose.split()[0] for profile in profiles}
    lengths = ", ".join(f"{task} {TYPICAL_TEXT_WORDS[task]} words"
                        for task in TYPICAL_TEXT_WORDS if task in tasks)
    replies = ", ".join(f"{kind} {tokens}" for kind, tokens in TYPICAL_REPLY_TOKENS.items()
                        if kind in kinds)
    return (
        f"prompt tokens ~ characters / {CHARS_PER_TOKEN} of the prompts the stages assemble "
        f"from this release's scenarios (texts not yet written: stand-ins); low = every call "
        f"valid at once, texts of the length their brief asks for ({lengths}), "
        f"typical replies ({replies} tokens), no "
        f"reasoning; high = every call retried to max_attempts / max_reply_attempts, each with "
        f"full-budget texts and its whole completion budget, reasoning included (writers: text "
        f"+ reasoning budget; a declared reasoning model's replies: reply budget + reasoning "
        f"cap)")


@dataclasses.dataclass(frozen=True)
class Preflight:
    release: str
    checks: list[Check]
    lines: list[CostLine]
    stage_totals: list[Total]
    total: Total
    profiles: list[CallProfile]
    source: str = ""  # where the models list came from ("" without one)
    fetched_at: dt.datetime | None = None
    offline: bool = False  # the list was read from a file
    note: str = ""  # what that file says of itself
    models_count: int = 0
    warnings: tuple[str, ...] = ()
    method_note: str = ""  # how the estimate is made (`method_note`)

    @property
    def ok(self) -> bool:
        return all(check.ok for check in self.checks)

    @property
    def failures(self) -> list[Check]:
        return [check for check in self.checks if not check.ok]

    @property
    def fixture_only(self) -> bool:
        return bool(self.lines) and all(line.free for line in self.lines)


def prompt_inputs(release: Release) -> PromptInputs:
    """What the release's prompts are built from: its pinned scenarios, briefs, overlays and
    scoring version (a handful of queries)."""
    config = release.parsed_config()
    versions = {f"{pin.scenario_version.scenario.slug}@{pin.scenario_version.content_hash}":
                pin.scenario_version
                for pin in release.pins.select_related("scenario_version__scenario")}
    documents = {entry: versions[entry].document() for entry in config.scenarios}
    briefs = dict(Task.objects.filter(code__in=config.tasks, language=config.language,
                                      version=config.task_version).values_list("code", "brief"))
    overlays = dict(Condition.objects.filter(
        code__in=config.conditions, language=config.language,
        version=config.condition_version).values_list("code", "overlay"))
    return PromptInputs(config=config, documents=documents, briefs=briefs, overlays=overlays,
                        scoring=ScoringVersion.texts_for_pin(config.scoring_version))


@functools.lru_cache(maxsize=32)
def _profiles(release_id: int, config_hash: str) -> tuple[CallProfile, ...]:
    # A configuration's prompts are fixed by its hash (pinned scenarios, scoring version,
    # versioned briefs and overlays): the operator's page computes them once per process.
    return tuple(call_profiles(prompt_inputs(Release.objects.get(pk=release_id))))


def release_profiles(release: Release) -> list[CallProfile]:
    return list(_profiles(release.pk, release.config_hash))


def release_preflight(release: Release, models: ModelsList | None, *,
                      listing_error: str = "", warnings: tuple[str, ...] = ()) -> Preflight:
    """Checks and cost estimate of a release against a models list (None: none to be had)."""
    config: ReleaseConfig = release.parsed_config()
    profiles = release_profiles(release)
    lines = cost_lines(profiles, models)
    stage_totals, total = totals(lines)
    return Preflight(
        release=release.code, checks=release_checks(config, profiles, models, listing_error),
        lines=lines, stage_totals=stage_totals, total=total, profiles=profiles,
        source=models.source if models else "", fetched_at=models.fetched_at if models else None,
        offline=models.offline if models else False, note=models.note if models else "",
        models_count=len(models) if models else 0,
        warnings=warnings, method_note=method_note(config.tasks, profiles))


def needs_models_list(release: Release) -> bool:
    """A release of fixture models only runs offline: it needs no list at all."""
    config = release.parsed_config()
    ids = [*config.writers, *config.jurors, config.reader, config.journalist or ""]
    return any(model_id and not model_id.startswith(FIXTURE_PREFIX) for model_id in ids)


def preflight_models_list(release: Release, *, refresh: bool = False,
                          models_file: Path | None = None, fetch: bool = True,
                          ) -> tuple[ModelsList | None, str, tuple[str, ...]]:
    """(list, error, warnings) for a preflight of this release.

    A file, when given, is used as it is. Otherwise the cached list, fetched first when it is
    stale, missing or `refresh` is asked for (never when `fetch` is False: a page must not
    wait on the network). A fetch that fails falls back to an older cached list, with a
    warning; without one the error is returned.
    """
    if models_file is not None:
        try:
            return read_models_file(models_file), "", ()
        except ModelsListError as error:
            return None, str(error), ()
    if not needs_models_list(release):
        return None, "", ()
    if not fetch:
        cached = cached_models_list()
        return cached, "" if cached else "not fetched yet", ()
    try:
        return models_list(refresh=refresh), "", ()
    except ModelsListError as error:
        cached = cached_models_list()
        if cached is None:
            return None, str(error), ()
        return cached, "", (f"{error}; using the list fetched {cached.fetched_at:%Y-%m-%d %H:%M}"
                            f" UTC",)


def report_lines(preflight: Preflight) -> list[str]:
    """The preflight as the command prints it: checks, then the estimate table."""
    lines = [f"preflight {preflight.release}"]
    if preflight.source:
        when = (f", fetched {preflight.fetched_at:%Y-%m-%d %H:%M} UTC"
                if preflight.fetched_at else "")
        kind = "models list read from a file, not fetched" if preflight.offline else "models list"
        lines.append(f"{kind}: {preflight.source}{when} ({preflight.models_count} models)")
        if preflight.note:
            lines += textwrap.wrap(preflight.note, 100, initial_indent="  ",
                                   subsequent_indent="  ")
    lines += [f"warning: {warning}" for warning in preflight.warnings]
    lines += ["", "checks"] + [f"  {check}" for check in preflight.checks]
    lines += ["", "cost estimate (USD, low - high)",
              f"  {'stage':<10} {'role':<11} {'model':<34} {'calls':>8} {'low':>10} "
              f"{'high':>11}"]
    for stage_total in preflight.stage_totals:
        for line in (line for line in preflight.lines if line.stage == stage_total.label):
            lines.append(f"  {line.stage:<10} {line.role:<11} {line.model:<34} "
                         f"{line.calls:>8,.0f} {_usd(line, 'low'):>10} {_usd(line, 'high'):>11}")
        lines.append(_total_line(stage_total, f"{stage_total.label} total"))
    lines.append(_total_line(preflight.total, "release total"))
    if preflight.total.unpriced:
        lines.append(f"  not in the sums (prices unknown): {', '.join(preflight.total.unpriced)}")
    if any(line.free for line in preflight.lines):
        lines.append("  fixture models are offline and free")
    lines += ["", *textwrap.wrap(f"how: {preflight.method_note}", 100, subsequent_indent="  ")]
    failures = preflight.failures
    lines.append(f"{len(failures)} check(s) failed" if failures else "every check passed")
    return lines


def _usd(line: CostLine, which: str) -> str:
    if line.free:
        return "free"
    value = line.low_usd if which == "low" else line.high_usd
    return "unknown" if value is None else f"{value:,.2f}"


def _total_line(total: Total, label: str) -> str:
    return (f"  {label:<57} {total.calls:>8,.0f} {total.low_usd:>10,.2f} "
            f"{total.high_usd:>11,.2f}")
