"""Preflight checks: is every model of a release on OpenRouter's list, do its limits fit
what the release will ask of it, are its prices known, and does the reader keep out of the
writers' families? Pure: configuration, call profiles and the list in, check lines out."""

from __future__ import annotations

import dataclasses
import difflib

from runs_app.preflight.profiles import CallProfile
from runs_app.providers.base import CompletionRequest
from runs_app.providers.models_list import ModelListing, ModelsList
from runs_app.providers.openrouter import sent_parameters
from runs_app.providers.pool import FIXTURE_PREFIX
from runs_app.schemas import ReleaseConfig


@dataclasses.dataclass(frozen=True)
class Check:
    ok: bool
    subject: str  # a model id, or what the check is about ("reader family", "models list")
    message: str  # the whole line: names the model and what is (or is not) wrong

    def __str__(self) -> str:
        return f"{'ok  ' if self.ok else 'FAIL'}  {self.message}"


@dataclasses.dataclass(frozen=True)
class Need:
    """The most a model's calls ask of it: tokens in context and out, and which call."""

    context: int
    context_call: str
    output: int
    output_call: str
    reasoning: int = 0  # of `output`, the reasoning budget (writers)
    # Each request parameter its calls send -> the first call that sends it.
    parameters: tuple[tuple[str, str], ...] = ()


# The flags each kind of call (a profile's purpose, its first word) sets on its request, as
# the stages build them: a writer's seed (its variant), a JSON reply for every structured
# reply, and temperature 0 for the refusal check, the jurors and the answer judge.
REQUEST_FLAGS: dict[str, dict] = {
    "write": {"seed": 0},
    "refusal": {"temperature": 0.0, "json_mode": True},
    "juror": {"temperature": 0.0, "json_mode": True},
    "answer_judge": {"temperature": 0.0, "json_mode": True},
    "reader": {"json_mode": True}, "reveal": {"json_mode": True},
    "journalist": {"json_mode": True}, "crossexam": {"json_mode": True},
    "frame_judge": {},
}


def profile_parameters(profile: CallProfile) -> tuple[str, ...]:
    """The request parameters a profile's calls send (`openrouter.sent_parameters`)."""
    flags = REQUEST_FLAGS[profile.purpose.split()[0]]
    return sent_parameters(CompletionRequest(model="", messages=(),
                                             max_tokens=profile.max_tokens, **flags))


def model_roles(config: ReleaseConfig) -> dict[str, list[str]]:
    """model id -> its roles, in the order writers, jurors, reader, journalist."""
    roles: dict[str, list[str]] = {}
    for role, ids in (("writer", config.writers), ("juror", config.jurors),
                      ("reader", [config.reader]),
                      ("journalist", [config.journalist] if config.journalist else [])):
        for model_id in ids:
            roles.setdefault(model_id, []).append(role)
    return roles


def needs(profiles: list[CallProfile]) -> dict[str, Need]:
    found: dict[str, Need] = {}
    for profile in profiles:
        context = profile.longest_prompt + profile.max_tokens
        label = f"{profile.stage} {profile.purpose}"
        for model_id, calls in profile.calls.items():
            if not calls:
                continue
            need = found.get(model_id) or Need(0, "", 0, "")
            if context > need.context:
                need = dataclasses.replace(need, context=context, context_call=label)
            if profile.max_tokens > need.output:
                need = dataclasses.replace(need, output=profile.max_tokens, output_call=label,
                                           reasoning=profile.reasoning_tokens)
            sent = dict(need.parameters)
            for name in profile_parameters(profile):
                sent.setdefault(name, label)
            found[model_id] = dataclasses.replace(need, parameters=tuple(sent.items()))
    return found


def _n(value: int) -> str:
    return f"{value:,}"


def _per_million(price: float) -> str:
    return f"${price * 1_000_000:,.2f}"


def model_checks(model_id: str, roles: list[str], listing: ModelListing | None,
                 need: Need | None, models: ModelsList) -> list[Check]:
    """Every check of one model: one failed line per problem, else one line saying so."""
    who = f"{model_id} ({', '.join(roles)})"
    if model_id.startswith(FIXTURE_PREFIX):
        return [Check(True, model_id, f"{who}: fixture model, offline: free, no context or "
                                      f"output limit (not looked up)")]
    if listing is None:
        close = difflib.get_close_matches(model_id, list(models.models), n=1, cutoff=0.8)
        hint = f"; did you mean {close[0]}?" if close else ""
        return [Check(False, model_id, f"{who}: not on OpenRouter's models list "
                                       f"({len(models)} models from {models.source}){hint}")]
    failures, notes = [], []
    if need is not None:
        failures += _context_problems(who, listing, need)
        output_failure, output_note = _output_check(who, listing, need)
        failures += output_failure
        notes += output_note
        failures += _parameter_problems(who, listing, need)
        if listing.context_length and not failures:
            notes.insert(0, f"context {_n(listing.context_length)} >= {_n(need.context)} needed")
    else:
        notes.append("no call in this release's stages")
    if not listing.priced:
        failures.append(f"{who}: prices unknown on the models list (prompt or completion "
                        f"price missing or negative)")
    else:
        prices = f"{_per_million(listing.prompt_price)} in / " \
                 f"{_per_million(listing.completion_price)} out per M tokens"
        if listing.request_price:
            prices += f" + ${listing.request_price:g} per call"
        notes.append(prices)
    if failures:
        return [Check(False, model_id, line) for line in failures]
    return [Check(True, model_id, f"{who}: on the list; {'; '.join(notes)}")]


def _parameter_problems(who: str, listing: ModelListing, need: Need) -> list[str]:
    """One line when the list says the model supports fewer parameters than its calls send:
    requests set `provider.require_parameters`, so no provider would serve them. A list
    that states no parameters is not read as "none"."""
    if listing.supported_parameters is None:
        return []
    missing = [(name, call) for name, call in need.parameters
               if name not in listing.supported_parameters]
    if not missing:
        return []
    said = ", ".join(f"{name} (sent by {call})" for name, call in missing)
    return [f"{who}: the models list's supported_parameters lack {said}; requests require "
            f"every parameter they send (provider.require_parameters), so none would be served"]


def _context_problems(who: str, listing: ModelListing, need: Need) -> list[str]:
    if listing.context_length is None:
        return [f"{who}: context length not stated on the models list; needs "
                f"{_n(need.context)} tokens ({need.context_call})"]
    if listing.context_length < need.context:
        return [f"{who}: context {_n(listing.context_length)} tokens < {_n(need.context)} "
                f"needed by {need.context_call} (longest prompt + completion budget)"]
    return []


def _output_check(who: str, listing: ModelListing, need: Need) -> tuple[list[str], list[str]]:
    limit = listing.max_completion_tokens
    if limit is None:
        return [], ["max output not stated (limited by the context only)"]
    if limit < need.output:
        budget = (f"text budget {_n(need.output - need.reasoning)} + reasoning "
                  f"{_n(need.reasoning)}" if need.reasoning else "its reply budget")
        return [f"{who}: max output {_n(limit)} tokens < {_n(need.output)} requested by "
                f"{need.output_call} ({budget})"], []
    return [], [f"max output {_n(limit)} >= {_n(need.output)}"]


def reader_family_check(config: ReleaseConfig) -> Check:
    problem = config.reader_family_problem()
    if problem:
        return Check(False, "reader family", problem)
    return Check(True, "reader family",
                 f"reader: {config.reader} belongs to family {config.family_of(config.reader)!r}"
                 f", which no writer belongs to")


def release_checks(config: ReleaseConfig, profiles: list[CallProfile],
                   models: ModelsList | None, listing_error: str = "") -> list[Check]:
    """Every check of a release. Without a list (`models` None) only fixture models and
    the family rule can be checked; the list's absence is itself a failed check."""
    checks: list[Check] = []
    per_model = needs(profiles)
    roles = model_roles(config)
    offline_only = all(model_id.startswith(FIXTURE_PREFIX) for model_id in roles)
    if models is None and not offline_only:
        checks.append(Check(False, "models list",
                            f"models list unavailable: {listing_error or 'not fetched yet'}"))
    for model_id, model_roles_ in roles.items():
        if models is None and not model_id.startswith(FIXTURE_PREFIX):
            continue
        empty = ModelsList({}, source="")
        checks += model_checks(model_id, model_roles_,
                               models.get(model_id) if models else None,
                               per_model.get(model_id), models or empty)
    checks.append(reader_family_check(config))
    return checks
