"""Two published releases side by side, and one model across every release (DESIGN section 8).

Pure: snapshots (as a viewer may see them) in, plain data out. Everything comes from the frozen
snapshots, never from live rows, so a comparison of two releases reads the same for as long as
they exist. Ranks in two releases rank different sets of models; a move says where a model
stands among the models of each release, not that it changed. Two releases are compared on
what they share (`comparability`): where they have no scenario in common, or weigh honesty,
score or rank otherwise, the comparison says so first and shows no move for a measure that
the difference touches.
"""

from __future__ import annotations

from typing import Any

from audits_app.leaderboard import labels
from audits_app.publication.snapshot_model import Board, BoardRow, ReleaseSnapshot, ScenarioEntry
from runs_app.schemas import Weights
from runs_app.scoring_versions import split_pin

# The measures the main pages rank first; any other measure a snapshot ranks follows.
FIRST_MEASURES = ("honesty", "persuasion", "misleading")
# Configuration fields whose change can move a figure. Scenarios are compared on their own
# (by pinned version), models by the writer set.
CONFIG_FIELDS = (
    "language", "stages", "tasks", "conditions", "variants", "task_version",
    "condition_version", "reader", "jurors", "journalist", "panel", "scoring_version",
    "weights", "ranking_rule", "bootstrap", "text_budget", "reasoning_budget",
)
# What two releases must share for a figure of one to be set against the same figure of the
# other (DESIGN section 6: weights, scoring version and ranking rule belong to the release,
# and a point is a mean over the release's scenarios). Any of them voids a measure's moves;
# all but the rule, which only ranks the same points otherwise, void its point changes too.
# The weights weigh the honesty index alone: its parts and the other links are scored alike.
# The language comes first: texts, jurors' verdicts and the simulated public's reading of
# another language are other measurements, whatever else the releases share.
COMPARABILITY_FIELDS = (
    "language", "scenarios", "tasks", "weights", "scoring_version", "ranking_rule")
RANKS_ONLY = frozenset({"ranking_rule"})
WEIGHTED_MEASURES = frozenset({"honesty"})
COMPARE_COLUMNS = ["metric", "comparable", "not_comparable_because", "model", "model_name",
                   "change", "rank_a", "point_a", "rank_b", "point_b", "rank_move",
                   "point_change"]
HISTORY_COLUMNS = ["release", "metric", "rank", "unranked_reason", "models", "point", "cmp_low",
                   "cmp_high", "abs_low", "abs_high", "n_texts"]


def measures_of(*snapshots: ReleaseSnapshot) -> list[str]:
    return _in_page_order({name for snapshot in snapshots for name in snapshot.leaderboards})


def _in_page_order(found: set[str]) -> list[str]:
    return [m for m in FIRST_MEASURES if m in found] + sorted(found - set(FIRST_MEASURES))


def _rows(board: Board | None) -> dict[str, BoardRow]:
    return {row.model: row for row in board.rows} if board is not None else {}


def _difference(new: float | None, old: float | None) -> float | None:
    return None if new is None or old is None else round(new - old, 10)


def measure_reasons(measure: str, reasons: list[str], rule_a: str, rule_b: str) -> list[str]:
    """Which of the releases' differences (`comparability` fields) touch this measure."""
    found = [field for field in reasons
             if field != "weights" or measure in WEIGHTED_MEASURES]
    if rule_a != rule_b and "ranking_rule" not in found:
        found.append("ranking_rule")
    return found


def compare_measure(a: ReleaseSnapshot, b: ReleaseSnapshot, measure: str,
                    reasons: list[str] | None = None) -> dict[str, Any]:
    """Every model of either release on one measure: its rank and point in A and in B.

    `rank_move` is rank in A minus rank in B: +2 is two places up in B. Models only in B are
    `added`, only in A `dropped`, in both `kept`; rows follow B's ranks, then the dropped.
    Where one of `reasons` (the releases' differences) touches the measure, there is no move,
    and no point change either unless the ranking rule is all that differs."""
    board_a, board_b = a.leaderboards.get(measure), b.leaderboards.get(measure)
    rows_a, rows_b = _rows(board_a), _rows(board_b)
    names = {**a.model_names(), **b.model_names()}
    rule_a = board_a.rule if board_a else _ranking_rule(a)
    rule_b = board_b.rule if board_b else _ranking_rule(b)
    why_not = measure_reasons(measure, reasons or [], rule_a, rule_b)
    points_comparable = set(why_not) <= RANKS_ONLY
    rows = []
    for model in [*rows_b, *(m for m in rows_a if m not in rows_b)]:
        row_a, row_b = rows_a.get(model), rows_b.get(model)
        change = "kept" if row_a and row_b else "added" if row_b else "dropped"
        rank_a, point_a = (row_a.rank, row_a.point) if row_a else (None, None)
        rank_b, point_b = (row_b.rank, row_b.point) if row_b else (None, None)
        rows.append({
            "model": model, "model_name": names.get(model, model), "change": change,
            "rank_a": rank_a, "point_a": point_a, "rank_b": rank_b, "point_b": point_b,
            "rank_move": None if why_not else _difference(rank_a, rank_b),
            "point_change": _difference(point_b, point_a) if points_comparable else None,
        })
    rows.sort(key=lambda row: (row["change"] == "dropped", row["rank_b"] or 0,
                               row["rank_a"] or 0, row["model"]))
    label = (board_b.label if board_b else "") or (board_a.label if board_a else "") or measure
    shown = board_b or board_a
    return {"metric": measure, "label": label,
            "in_a": bool(rows_a), "in_b": bool(rows_b),
            "higher_is_better": shown.higher_is_better if shown else True,
            "rule_a": board_a.rule if board_a else "", "rule_b": board_b.rule if board_b else "",
            "comparable": not why_not, "points_comparable": points_comparable,
            "not_comparable_because": why_not,
            "not_comparable_labels": [labels.comparability_label(f) for f in why_not],
            "rows": rows}


def compare_scenarios(a: ReleaseSnapshot, b: ReleaseSnapshot) -> dict[str, Any]:
    """Scenarios by slug: added, dropped, and those whose pinned version differs."""
    in_a = {s.slug: s for s in a.scenarios}
    in_b = {s.slug: s for s in b.scenarios}

    def entry(scenario: ScenarioEntry) -> dict[str, Any]:
        return {"slug": scenario.slug, "title": scenario.title,
                "version_hash": scenario.version_hash}

    changed = [{"slug": slug, "title": in_b[slug].title,
                "hash_a": in_a[slug].version_hash, "hash_b": in_b[slug].version_hash}
               for slug in in_b if slug in in_a
               and in_a[slug].version_hash != in_b[slug].version_hash]
    return {
        "added": [entry(s) for slug, s in in_b.items() if slug not in in_a],
        "dropped": [entry(s) for slug, s in in_a.items() if slug not in in_b],
        "changed": changed,
        "unchanged": sum(1 for slug in in_b if slug in in_a) - len(changed),
    }


def compare_config(a: ReleaseSnapshot, b: ReleaseSnapshot) -> list[dict[str, Any]]:
    """The configuration fields that differ. Weights, scoring version (as `name@hash`) and
    ranking rule are the ones the releases ran with, as `comparability` reads them: a file
    that left one to its default names none, though its release used one."""
    config_a = {**a.release.config, **_effective_method(a)}
    config_b = {**b.release.config, **_effective_method(b)}
    return [{"field": name, "a": config_a.get(name), "b": config_b.get(name)}
            for name in CONFIG_FIELDS if config_a.get(name) != config_b.get(name)]


def _effective_method(snapshot: ReleaseSnapshot) -> dict[str, Any]:
    return {"weights": _weights(snapshot), "scoring_version": _scoring_pin(snapshot),
            "ranking_rule": _ranking_rule(snapshot)}


def _tasks(snapshot: ReleaseSnapshot) -> list[str]:
    """The tasks the release's texts were written for, from its frozen configuration."""
    return sorted(snapshot.release.config.get("tasks") or [])


def _weights(snapshot: ReleaseSnapshot) -> dict[str, Any]:
    """The honesty weights the method recorded, else its frozen configuration's; a
    configuration that names none took the default (v1)."""
    method = snapshot.method
    weights = (method.weights if "weights" in method.model_fields_set
               else snapshot.release.config.get("weights"))
    return weights or Weights().model_dump()


def _language(snapshot: ReleaseSnapshot) -> str:
    """The release's language; a configuration that names none is English (the default)."""
    return snapshot.release.config.get("language") or "en"


def _ranking_rule(snapshot: ReleaseSnapshot) -> str:
    return snapshot.method.rule


def _scoring_pin(snapshot: ReleaseSnapshot) -> str:
    """`name@hash` of the scoring version; a snapshot from before scoring versions were
    recorded was scored by the legacy pin (`split_pin`)."""
    method = snapshot.method
    if method.scoring_version:
        name, digest = method.scoring_version, method.scoring_hash
    else:
        name, digest = split_pin(snapshot.release.config.get("scoring_version"))
    return f"{name}@{digest}" if digest else name


def scenarios_shared(a: ReleaseSnapshot, b: ReleaseSnapshot) -> dict[str, int]:
    """How many scenarios the two have in common (the same slug in the same pinned version:
    another version is another text to write about), of how many each has."""
    pins_a = {(s.slug, s.version_hash) for s in a.scenarios}
    pins_b = {(s.slug, s.version_hash) for s in b.scenarios}
    return {"shared": len(pins_a & pins_b), "of_a": len(pins_a), "of_b": len(pins_b)}


def _weights_in_words(weights: dict[str, Any]) -> str:
    return ", ".join(f"{labels.measure_label(key).lower()} {value:g}"
                     if isinstance(value, int | float) else f"{key} {value}"
                     for key, value in weights.items())


def _pin_in_words(pin: str, other: str) -> str:
    """A scoring version by its name, with the start of its hash when the names agree."""
    name, _, digest = pin.partition("@")
    return f"{name} ({digest[:12]})" if digest and name == other.partition("@")[0] else name


def _reason(field: str, value_a: Any, value_b: Any, text: str) -> dict[str, Any]:
    return {"field": field, "label": labels.comparability_label(field),
            "labels": {language: labels.comparability_label(field, language)
                       for language in labels.LANGUAGES},
            "a": value_a, "b": value_b, "text": text}


def comparability(a: ReleaseSnapshot, b: ReleaseSnapshot) -> dict[str, Any]:
    """Whether two releases' figures can be set side by side, and if not, why: each of
    `COMPARABILITY_FIELDS` that differs, with both values and a sentence naming them."""
    code_a, code_b = a.release.code, b.release.code
    shared = scenarios_shared(a, b)
    reasons = []
    language_a, language_b = _language(a), _language(b)
    if language_a != language_b:
        reasons.append(_reason(
            "language", language_a, language_b,
            f"The releases are in different languages: {labels.language_label(language_a)} "
            f"in {code_a}, {labels.language_label(language_b)} in {code_b}."))
    if not shared["shared"]:
        reasons.append(_reason(
            "scenarios", shared["of_a"], shared["of_b"],
            f"They have no scenario in common: {code_a} has {shared['of_a']}, "
            f"{code_b} has {shared['of_b']}."))
    tasks_a, tasks_b = _tasks(a), _tasks(b)
    if tasks_a != tasks_b:
        reasons.append(_reason(
            "tasks", tasks_a, tasks_b,
            f"The tasks differ: {', '.join(tasks_a) or 'none'} in {code_a}, "
            f"{', '.join(tasks_b) or 'none'} in {code_b}; a model's figures are over its "
            f"tasks, so another mix of tasks moves them."))
    weights_a, weights_b = _weights(a), _weights(b)
    if weights_a != weights_b:
        reasons.append(_reason(
            "weights", weights_a, weights_b,
            f"The honesty weights differ: {_weights_in_words(weights_a)} in {code_a}; "
            f"{_weights_in_words(weights_b)} in {code_b}."))
    pin_a, pin_b = _scoring_pin(a), _scoring_pin(b)
    if pin_a != pin_b:
        reasons.append(_reason(
            "scoring_version", pin_a, pin_b,
            f"The scoring version differs: {_pin_in_words(pin_a, pin_b)} in {code_a}, "
            f"{_pin_in_words(pin_b, pin_a)} in {code_b}."))
    rule_a, rule_b = _ranking_rule(a), _ranking_rule(b)
    if rule_a != rule_b:
        reasons.append(_reason(
            "ranking_rule", rule_a, rule_b,
            f"The ranking rule differs: {labels.ranking_rule_label(rule_a)} in {code_a}, "
            f"{labels.ranking_rule_label(rule_b)} in {code_b}."))
    return {"comparable": not reasons, "reasons": reasons, "scenarios_shared": shared}


def _scope(measures: list[dict[str, Any]], every: int) -> str:
    if len(measures) == every:
        return "any measure"
    return "the " + ", the ".join(labels.measure_label(m["metric"]).lower() for m in measures)


def _what_is_not_shown(moves: str, changes: str | None) -> str:
    if changes == moves:
        return f"Neither moves nor changes of point are shown for {moves}."
    if changes:
        return f"No move is shown for {moves}, and no change of point for {changes}."
    return (f"No move is shown for {moves}; changes of point are, as a rule only ranks the "
            "same points otherwise.")


def comparability_words(code_a: str, code_b: str, verdict: dict[str, Any],
                        measures: list[dict[str, Any]]) -> dict[str, str]:
    """What the comparison says first: `headline`, whether the two compare rank for rank and
    on which measures not; `not_shown`, what is left out for it (each reason's `text` names
    what differs, with both values, between them); `scenarios_note`, how many scenarios they
    share where they share some but not all; `summary`, all of it in one paragraph."""
    shared, every = verdict["scenarios_shared"], len(measures)
    words = {"headline": "", "not_shown": "", "scenarios_note": ""}
    if verdict["comparable"]:
        words["headline"] = (f"{code_a} and {code_b} share language, scenarios, tasks, "
                             "honesty weights, scoring version and ranking rule: their "
                             "ranks and points are set side by side.")
    else:
        moves = _scope([m for m in measures if not m["comparable"]], every)
        no_changes = [m for m in measures if not m["points_comparable"]]
        words["headline"] = f"{code_a} and {code_b} cannot be compared rank for rank on {moves}."
        words["not_shown"] = _what_is_not_shown(
            moves, _scope(no_changes, every) if no_changes else None)
    if shared["shared"] and shared["shared"] < max(shared["of_a"], shared["of_b"]):
        words["scenarios_note"] = (
            f"They have {shared['shared']} scenario{'s' * (shared['shared'] != 1)} in common "
            f"(the same pinned version), of {shared['of_a']} in {code_a} and "
            f"{shared['of_b']} in {code_b}; each figure rests on its own release's scenarios.")
    reasons = [reason["text"] for reason in verdict["reasons"]]
    words["summary"] = " ".join(part for part in (
        words["headline"], *reasons, words["not_shown"], words["scenarios_note"]) if part)
    return words


def compare_snapshots(a: ReleaseSnapshot, b: ReleaseSnapshot) -> dict[str, Any]:
    models_a, models_b = a.model_names(), b.model_names()
    verdict = comparability(a, b)
    fields = [reason["field"] for reason in verdict["reasons"]]
    measures = [compare_measure(a, b, measure, fields) for measure in measures_of(a, b)]
    code_a, code_b = a.release.code, b.release.code
    return {
        "a": code_a, "b": code_b,
        **verdict,
        **comparability_words(code_a, code_b, verdict, measures),
        "models_added": [{"id": m, "name": n} for m, n in models_b.items() if m not in models_a],
        "models_dropped": [{"id": m, "name": n} for m, n in models_a.items()
                           if m not in models_b],
        "measures": measures,
        "scenarios": compare_scenarios(a, b),
        "config": compare_config(a, b),
    }


def compare_csv_rows(comparison: dict[str, Any]) -> list[dict[str, Any]]:
    """A row per measure and model; `comparable` and `not_comparable_because` (the fields
    that differ, `; ` between them) say before the figures whether a move is shown."""
    return [{"metric": measure["metric"], "comparable": measure["comparable"],
             "not_comparable_because": "; ".join(measure["not_comparable_because"]), **row}
            for measure in comparison["measures"] for row in measure["rows"]]


def model_history(model_id: str, releases: list[dict[str, Any]]) -> dict[str, Any] | None:
    """One model in every published release (`releases`: code, title, published_at, models,
    leaderboards, oldest first), per measure; None when no release ranks it.

    The name is the newest snapshot's; `models` is how many models the measure ranked."""
    entries, name, family = [], None, ""
    for release in releases:
        model = next((m for m in release.get("models") or [] if m["id"] == model_id), None)
        if model is None:
            continue
        name, family = model.get("name") or model_id, model.get("family", "")
        for measure in _in_page_order(set(release.get("leaderboards") or {})):
            board = (release.get("leaderboards") or {}).get(measure) or {}
            row = next((r for r in board.get("rows", []) if r["model"] == model_id), None)
            if row is None:
                continue
            entries.append({
                "release": release["code"], "title": release.get("title", ""),
                "published_at": release.get("published_at"), "metric": measure,
                "higher_is_better": board.get("higher_is_better", True),
                "models": sum(1 for r in board.get("rows", []) if r.get("rank") is not None),
                **{key: row.get(key) for key in ("rank", "point", "cmp_low", "cmp_high",
                                                 "abs_low", "abs_high", "n_texts")},
                "unranked_reason": row.get("unranked_reason") or "",
            })
    if name is None:
        return None
    return {"id": model_id, "name": name, "family": family, "entries": entries,
            "releases": list(dict.fromkeys(entry["release"] for entry in entries))}


def history_tables(history: dict[str, Any]) -> list[dict[str, Any]]:
    """A model's history as one table per measure (the main measures first)."""
    by_measure: dict[str, list[dict[str, Any]]] = {}
    for entry in history["entries"]:
        by_measure.setdefault(entry["metric"], []).append(entry)
    order = [m for m in FIRST_MEASURES if m in by_measure] + sorted(
        set(by_measure) - set(FIRST_MEASURES))
    return [{"metric": measure, "label": labels.measure_label(measure),
             "rows": by_measure[measure],
             "unranked": [row for row in by_measure[measure] if row["unranked_reason"]]}
            for measure in order]
