"""Two published releases side by side, and one model across every release (DESIGN section 8).

Pure: snapshots (as a viewer may see them) in, plain data out. Everything comes from the frozen
snapshots, never from live rows, so a comparison of two releases reads the same for as long as
they exist. Ranks in two releases rank different sets of models under possibly different
rules; a move says where a model stands among the models of each release, not that it changed.
"""

from __future__ import annotations

from typing import Any

# The measures the main pages rank first; any other measure a snapshot ranks follows.
FIRST_MEASURES = ("honesty", "persuasion", "misleading")
# Configuration fields whose change can move a figure. Scenarios are compared on their own
# (by pinned version), models by the writer set.
CONFIG_FIELDS = (
    "language", "stages", "tasks", "conditions", "variants", "task_version",
    "condition_version", "reader", "jurors", "journalist", "panel", "scoring_version",
    "weights", "ranking_rule", "bootstrap", "text_budget", "reasoning_budget",
)
COMPARE_COLUMNS = ["metric", "model", "model_name", "change", "rank_a", "point_a", "rank_b",
                   "point_b", "rank_move", "point_change"]
HISTORY_COLUMNS = ["release", "metric", "rank", "models", "point", "cmp_low", "cmp_high",
                   "abs_low", "abs_high", "n_texts"]


def measures_of(*snapshots: dict[str, Any]) -> list[str]:
    found = {name for snapshot in snapshots for name in (snapshot.get("leaderboards") or {})}
    return [m for m in FIRST_MEASURES if m in found] + sorted(found - set(FIRST_MEASURES))


def _names(snapshot: dict[str, Any]) -> dict[str, str]:
    return {m["id"]: m.get("name") or m["id"] for m in snapshot.get("models", [])}


def _rows(snapshot: dict[str, Any], measure: str) -> dict[str, dict[str, Any]]:
    board = (snapshot.get("leaderboards") or {}).get(measure) or {}
    return {row["model"]: row for row in board.get("rows", [])}


def _difference(new: float | None, old: float | None) -> float | None:
    return None if new is None or old is None else round(new - old, 10)


def compare_measure(a: dict[str, Any], b: dict[str, Any], measure: str) -> dict[str, Any]:
    """Every model of either release on one measure: its rank and point in A and in B.

    `rank_move` is rank in A minus rank in B: +2 is two places up in B. Models only in B are
    `added`, only in A `dropped`, in both `kept`; rows follow B's ranks, then the dropped."""
    rows_a, rows_b = _rows(a, measure), _rows(b, measure)
    names = {**_names(a), **_names(b)}
    board_a = (a.get("leaderboards") or {}).get(measure) or {}
    board_b = (b.get("leaderboards") or {}).get(measure) or {}
    rows = []
    for model in [*rows_b, *(m for m in rows_a if m not in rows_b)]:
        row_a, row_b = rows_a.get(model) or {}, rows_b.get(model) or {}
        change = "kept" if row_a and row_b else "added" if row_b else "dropped"
        rows.append({
            "model": model, "model_name": names.get(model, model), "change": change,
            "rank_a": row_a.get("rank"), "point_a": row_a.get("point"),
            "rank_b": row_b.get("rank"), "point_b": row_b.get("point"),
            "rank_move": _difference(row_a.get("rank"), row_b.get("rank")),
            "point_change": _difference(row_b.get("point"), row_a.get("point")),
        })
    rows.sort(key=lambda row: (row["change"] == "dropped", row["rank_b"] or 0,
                               row["rank_a"] or 0, row["model"]))
    return {"metric": measure, "label": board_b.get("label") or board_a.get("label") or measure,
            "in_a": bool(rows_a), "in_b": bool(rows_b),
            "higher_is_better": board_b.get("higher_is_better",
                                            board_a.get("higher_is_better", True)),
            "rule_a": board_a.get("rule", ""), "rule_b": board_b.get("rule", ""),
            "rows": rows}


def compare_scenarios(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """Scenarios by slug: added, dropped, and those whose pinned version differs."""
    in_a = {s["slug"]: s for s in a.get("scenarios", [])}
    in_b = {s["slug"]: s for s in b.get("scenarios", [])}

    def entry(scenario: dict[str, Any]) -> dict[str, Any]:
        return {"slug": scenario["slug"], "title": scenario.get("title", ""),
                "version_hash": scenario.get("version_hash", "")}

    changed = [{"slug": slug, "title": in_b[slug].get("title", ""),
                "hash_a": in_a[slug].get("version_hash", ""),
                "hash_b": in_b[slug].get("version_hash", "")}
               for slug in in_b if slug in in_a
               and in_a[slug].get("version_hash") != in_b[slug].get("version_hash")]
    return {
        "added": [entry(s) for slug, s in in_b.items() if slug not in in_a],
        "dropped": [entry(s) for slug, s in in_a.items() if slug not in in_b],
        "changed": changed,
        "unchanged": sum(1 for slug in in_b if slug in in_a) - len(changed),
    }


def compare_config(a: dict[str, Any], b: dict[str, Any]) -> list[dict[str, Any]]:
    """The configuration fields that differ, with the scoring version's hash and the method's
    weights as the snapshots recorded them."""
    config_a = ((a.get("release") or {}).get("config")) or {}
    config_b = ((b.get("release") or {}).get("config")) or {}
    method_a, method_b = a.get("method") or {}, b.get("method") or {}
    differences = [{"field": name, "a": config_a.get(name), "b": config_b.get(name)}
                   for name in CONFIG_FIELDS if config_a.get(name) != config_b.get(name)]
    if method_a.get("scoring_hash") != method_b.get("scoring_hash") and not any(
            d["field"] == "scoring_version" for d in differences):
        differences.append({"field": "scoring_hash", "a": method_a.get("scoring_hash"),
                            "b": method_b.get("scoring_hash")})
    return differences


def compare_snapshots(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    models_a, models_b = _names(a), _names(b)
    return {
        "a": (a.get("release") or {}).get("code", ""),
        "b": (b.get("release") or {}).get("code", ""),
        "models_added": [{"id": m, "name": n} for m, n in models_b.items() if m not in models_a],
        "models_dropped": [{"id": m, "name": n} for m, n in models_a.items()
                           if m not in models_b],
        "measures": [compare_measure(a, b, measure) for measure in measures_of(a, b)],
        "scenarios": compare_scenarios(a, b),
        "config": compare_config(a, b),
    }


def compare_csv_rows(comparison: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"metric": measure["metric"], **row} for measure in comparison["measures"]
            for row in measure["rows"]]


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
        for measure in measures_of(release):
            board = (release.get("leaderboards") or {}).get(measure) or {}
            row = next((r for r in board.get("rows", []) if r["model"] == model_id), None)
            if row is None:
                continue
            entries.append({
                "release": release["code"], "title": release.get("title", ""),
                "published_at": release.get("published_at"), "metric": measure,
                "higher_is_better": board.get("higher_is_better", True),
                "models": len(board.get("rows", [])),
                **{key: row.get(key) for key in ("rank", "point", "cmp_low", "cmp_high",
                                                 "abs_low", "abs_high", "n_texts")},
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
    return [{"metric": measure, "rows": by_measure[measure]} for measure in order]
