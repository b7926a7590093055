"""Preflight checks: is every model of a release on OpenRouter's list, do its limits fit
what the release will ask of it, are its prices known, and does the reader keep out of the
writers' families? Pure: configuration, call profiles and the list in, check lines out."""

from __future__ import annotations

import dataclasses
import difflib

from runs_app.call_kinds import CALL_KINDS, call_request
from runs_app.preflight.profiles import CallProfile
from runs_app.providers.base import CompletionRequest
from runs_app.providers.models_list import REASONING_PARAMETERS, ModelListing, ModelsList
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
    reasoning: int = 0  # of `output`, the reasoning budget (a writer's, a reasoning cap)
    output_writes: bool = False  # `output` is a writer's (text budget), not a reply's
    # Each request parameter its calls send -> the first call that sends it.
    parameters: tuple[tuple[str, str], ...] = ()
    # The first structured-reply call sent with no reasoning room, and its role: where a
    # model that reasons would spend its reply budget on reasoning.
    roomless_call: str = ""
    roomless_role: str = ""


def profile_request(profile: CallProfile, model_id: str,
                    config: ReleaseConfig) -> CompletionRequest:
    """The request a profile's calls to one model send, built as the stages build it
    (`runs_app.call_kinds.call_request`): its parameters and budget are what is checked."""
    return call_request(profile.purpose.split()[0], config=config, model=model_id, seed=0)


def model_roles(config: ReleaseConfig) -> dict[str, list[str]]:
    """model id -> its roles, in the order writers, jurors, reader, journalist."""
    roles: dict[str, list[str]] = {}
    for role, ids in (("writer", config.writers), ("juror", config.jurors),
                      ("reader", [config.reader]),
                      ("journalist", [config.journalist] if config.journalist else [])):
        for model_id in ids:
            roles.setdefault(model_id, []).append(role)
    return roles


def needs(profiles: list[CallProfile], config: ReleaseConfig) -> dict[str, Need]:
    found: dict[str, Need] = {}
    for profile in profiles:
        label = f"{profile.stage} {profile.purpose}"
        for model_id, calls in profile.calls.items():
            if calls:
                found[model_id] = _with_call(found.get(model_id) or Need(0, "", 0, ""),
                                             profile, label,
                                             profile_request(profile, model_id, config))
    return found


def _with_call(need: Need, profile: CallProfile, label: str,
               request: CompletionRequest) -> Need:
    """`need` grown by one kind of call to the model."""
    budget = request.max_tokens
    if profile.longest_prompt + budget > need.context:
        need = dataclasses.replace(need, context=profile.longest_prompt + budget,
                                   context_call=label)
    writes = CALL_KINDS[request.purpose].role == "writer"
    if budget > need.output:
        need = dataclasses.replace(need, output=budget, output_call=label, output_writes=writes,
                                   reasoning=profile.reasoning_tokens
                                   + (request.reasoning_cap or 0))
    if not writes and not request.reasoning_cap and not need.roomless_call:
        need = dataclasses.replace(need, roomless_call=label,
                                   roomless_role=CALL_KINDS[request.purpose].role)
    sent = dict(need.parameters)
    for name in sent_parameters(request):
        sent.setdefault(name, label)
    return dataclasses.replace(need, parameters=tuple(sent.items()))


def _n(value: int) -> str:
    return f"{value:,}"


def _per_million(price: float) -> str:
    return f"${price * 1_000_000:,.2f}"


def model_checks(model_id: str, roles: list[str], listing: ModelListing | None,
                 need: Need | None, models: ModelsList,
                 declared: bool | None = None) -> list[Check]:
    """Every check of one model: one failed line per problem, else one line saying so.
    `declared` is what the release says of the model's reasoning (`ModelSpec.reasons`)."""
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
        failures += _reasoning_problems(who, listing, need, declared)
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


def _reasoning_problems(who: str, listing: ModelListing, need: Need,
                        declared: bool | None) -> list[str]:
    """One line when a model that reasons (declared so, or able to by the list and not said
    to reason only when asked) has a structured reply with no reasoning room: its reasoning
    would be spent out of the reply budget and replies cut at the limit, unscored after paid
    calls (`runs_app.call_kinds`). A list that states no parameters is not read as "none"."""
    supported = set(listing.supported_parameters or ())
    if not need.roomless_call or declared is False:
        return []
    if declared:
        return [f"{who}: reasons (declared `reasons: true`), but {need.roomless_call} gives "
                f"it no reasoning room (reply_reasoning.{need.roomless_role} is 0): its "
                f"reasoning would use up the reply budget and cut replies at the limit"]
    if not supported & REASONING_PARAMETERS:
        return []
    return [f"{who}: can reason (the models list's supported_parameters name "
            f"{', '.join(sorted(supported & REASONING_PARAMETERS))}) and the release does not "
            f"say whether it does: its reasoning would come out of the reply budget of "
            f"{need.roomless_call} and cut replies at the limit; declare `reasons: true` "
            f"under models (reasoning capped at reply_reasoning, the reply budget kept "
            f"whole), or `reasons: false` for a model that reasons only when asked"]


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
        kind = "text" if need.output_writes else "reply"
        budget = (f"{kind} budget {_n(need.output - need.reasoning)} + reasoning "
                  f"{_n(need.reasoning)}" if need.reasoning else f"its {kind} budget")
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
    per_model = needs(profiles, config)
    declared = {spec.id: spec.reasons for spec in config.models}
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
                               per_model.get(model_id), models or empty,
                               declared.get(model_id))
    checks.append(reader_family_check(config))
    return checks
