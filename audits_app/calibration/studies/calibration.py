"""A reading study's calibration figure on its release's page: people's answers (included
readers only) against the simulated public, and people's attitude effect per model. People
and the simulated crowd are never mixed: each gets its own figure, the crowd's marked."""

from __future__ import annotations

from typing import Any

from audits_app.calibration.figures import calibration_svg, calibration_table
from audits_app.calibration.selectors import human_calibration, text_means
from audits_app.calibration.studies.figures import attitude_effects, people_intervals
from audits_app.calibration.studies.selectors import study_responses
from audits_app.calibration.studies.weights import MEASURES, weighted_intervals
from audits_app.leaderboard.figures import correct_answers, release_resampling
from audits_app.models import PopulationWeights, ReadingStudy
from baitbench_site.roles import public_role
from runs_app.models import Generation, ReaderResponse, Release, ReplyOutcome, WorkStatus


def study_calibration(study: ReadingStudy, *, simulated: bool) -> dict[str, Any]:
    """{"readers", "needed", "summary" (None below the study's threshold or with fewer than
    two models read), "effects"}."""
    rows = study_responses(study, simulated=simulated)
    readers = len({row["reader"] for row in rows})
    result: dict[str, Any] = {"readers": readers, "needed": study.readers_for_figure,
                              "summary": None, "effects": [], "simulated": simulated}
    if readers < study.readers_for_figure:
        return result
    release = study.release
    correct = correct_answers(release)
    texts = [row for row in rows if row["generation_id"]]
    human = text_means([(r["generation_id"], r["scenario"], r["attitude"], r["knowledge"])
                        for r in texts], correct)
    summary = human_calibration(release, human, correct)
    cells = dict((pk, (model, scenario)) for pk, model, scenario in Generation.objects.filter(
        pk__in={r["generation_id"] for r in texts}).values_list(
        "pk", "model__openrouter_id", "scenario_version__scenario_id"))
    result["effects"] = attitude_effects([
        {"kind": "text" if r["generation_id"] else r["stimulus"], "reader": r["reader"],
         "model": cells[r["generation_id"]][0] if r["generation_id"] else "",
         "scenario": r["scenario"], "attitude": sum(r["attitude"]) / len(r["attitude"])}
        for r in rows if r["stimulus"] in ("none", "control") or r["generation_id"] in cells])
    if summary is not None:
        _people_intervals(summary, texts, cells, correct, release, study.seed)
        summary["readers"] = readers
    result["summary"] = summary
    return result


def _people_intervals(summary: dict, texts: list[dict], cells: dict, correct: dict,
                      release: Release, seed: int) -> None:
    """Replace people's scenario-only intervals by scenario-and-participant ones, and say
    how many people stand behind each point."""
    scenarios, counts = release_resampling(release)
    responses = []
    for row in texts:
        model, scenario = cells[row["generation_id"]]
        right = correct.get(row["scenario"]) or []
        wrong = sum(1 for given, answer in zip(row["knowledge"], right, strict=False)
                    if given is not None and given != answer)
        responses.append({"reader": row["reader"], "model": model, "scenario": scenario,
                          "persuasion": sum(row["attitude"]) / len(row["attitude"]),
                          "misleading": wrong / len(right) if right else None})
    models = summary["model_order"]["model_ids"]
    intervals = people_intervals(responses, models, scenarios, counts, summary["level"], seed)
    for measure, figures in summary["measures"].items():
        for row in figures["models"]:
            row.update(intervals[measure].get(row["model"], {}))


def release_study_figures(release: Release, names: dict[str, str], *,
                          held: bool = False) -> list[dict[str, Any]]:
    """Every opened study of the release, people's figure and (apart) the simulated crowd's,
    ready for the page (`_study_calibration.html`).

    `held`: the studies' texts are still read blind (not revealed to this viewer). Then each
    study gives only how many included readers it has: its figures are per model on texts
    only its readers have read, and move with each reader who finishes, so a reader who
    looked before and after would learn which model wrote the text they read (the model
    whose count went up); the simulated crowd's are per-model figures of held scenarios
    (`pages.viewer.PER_MODEL_BY_SCENARIO`). They show once the texts are revealed."""
    figures = []
    for study in ReadingStudy.objects.filter(release=release, opened_at__isnull=False
                                             ).order_by("pk"):
        for simulated in (False, True):
            if held:
                readers = len({row["reader"] for row in study_responses(
                    study, simulated=simulated)})
                if readers or not simulated:
                    figures.append({"study": study, "simulated": simulated, "held": True,
                                    "readers": readers, "needed": study.readers_for_figure,
                                    "figure": None, "effects": []})
                continue
            found = study_calibration(study, simulated=simulated)
            if simulated and not found["readers"]:
                continue
            summary = found.pop("summary")
            figures.append({**found, "study": study, "figure": None if summary is None else {
                "svg": calibration_svg(summary, names, f"{release.code}, study {study.pk}"
                                       + (" (SIMULATED readers)" if simulated else "")),
                "table": calibration_table(summary, names), "level": summary["level"]},
                "effects": [{**e, "model_name": names.get(e["model"], e["model"])}
                            for e in _in_table_order(found["effects"], summary, names)]})
    return figures


def _in_table_order(effects: list[dict], summary: dict | None,
                    names: dict[str, str]) -> list[dict]:
    """The attitude effects in the order of the figure's tables (the release's writers), so
    that a model sits on the same line in all three; one read by no text both read, after."""
    order = [*(summary["model_order"]["model_ids"] if summary else []), *names]
    return sorted(effects, key=lambda e: (order.index(e["model"]) if e["model"] in order
                                          else len(order), e["model"]))


def release_weighted(release: Release, names: dict[str, str]) -> dict[str, Any]:
    """The panel's per-model persuasion and misleading, unweighted and weighted to the newest
    recorded population of the release's language, each with its interval from the release's
    resampling of scenarios; `source` None when none is recorded.
    `names` are the snapshot's writers, in its order (a public page reads no live config)."""
    weights = PopulationWeights.objects.filter(language=release.language).select_related(
        "entered_by").first()
    if weights is None:
        return {"source": None, "language": release.language, "rows": []}
    correct = correct_answers(release)
    answers = []
    for position, model, slug, text, attitude, knowledge in ReaderResponse.objects.filter(
            release=release, generation__isnull=False, status=WorkStatus.DONE,
            outcome=ReplyOutcome.SCORED).values_list(
            "position", "generation__model__openrouter_id", "scenario_version__scenario__slug",
            "generation_id", "attitude", "knowledge"):
        if not attitude:
            continue
        right = correct.get(slug) or []
        wrong = (sum(1 for given, answer in zip(knowledge or [], right, strict=False)
                     if given is not None and given != answer) / len(right)) if right else None
        answers.append((position, model, slug, text, sum(attitude) / len(attitude), wrong))
    scenario_ids, counts = release_resampling(release)
    slugs = dict(release.pins.values_list("scenario_version__scenario_id",
                                          "scenario_version__scenario__slug"))
    models = [model for model in names if any(answer[1] == model for answer in answers)]
    args = (models, [slugs[pk] for pk in scenario_ids], counts,
            release.parsed_config().bootstrap.level)
    found = {"unweighted": weighted_intervals(answers, None, *args),
             "weighted": weighted_intervals(answers, weights.shares, *args)}
    rows = [{"model": model, "model_name": names.get(model, model),
             **{f"{measure}_{kind}{suffix}": figures[model][measure][key]
                for kind, figures in found.items() for measure in MEASURES
                for suffix, key in (("", "point"), ("_low", "low"), ("_high", "high"))}}
            for model in models]
    return {"source": weights, "language": release.language, "rows": rows,
            "level": args[3], "level_percent": f"{args[3] * 100:g}"}


WEIGHTED_FIGURES = tuple(f"{measure}_{kind}" for measure in MEASURES
                         for kind in ("unweighted", "weighted"))
WEIGHTED_NONE = ("Nothing is weighted: no population source is recorded for this release's "
                 "language, so the twelve reading positions count equally.")
WEIGHTED_NOTE = ("The simulated public's per-model means, unweighted (every reading position "
                 "counts equally) and weighted by each position's population share from the "
                 "source named; each with its interval from resampling whole scenarios, as "
                 "for every figure of the release. The ranks are the unweighted panel's.")


def weighted_answer(release: Release, names: dict[str, str]) -> dict[str, Any]:
    """`release_weighted` for the API and the CSV: the source (citation, URL, date, who by
    role, when) or None, and per model each figure as {point, low, high}. Rows only where a
    source is recorded."""
    found = release_weighted(release, names)
    source = found["source"]
    if source is None:
        return {"language": found["language"], "source": None, "level": None, "rows": [],
                "note": WEIGHTED_NONE}
    return {
        "language": found["language"],
        "source": {"citation": source.citation, "url": source.url,
                   "source_date": source.source_date, "note": source.note,
                   "entered_by": public_role(source.entered_by),
                   "entered_at": source.entered_at},
        "level": found["level"],
        "rows": [{"model": row["model"], "model_name": row["model_name"],
                  **{figure: {"point": row[figure], "low": row[f"{figure}_low"],
                              "high": row[f"{figure}_high"]} for figure in WEIGHTED_FIGURES}}
                 for row in found["rows"]],
        "note": WEIGHTED_NOTE,
    }


def weighted_csv_rows(answer: dict[str, Any]) -> list[dict[str, Any]]:
    """`weighted_answer` as rows of the leaderboard CSV, after the ranked measures: per model,
    `panel_<measure>_unweighted` and `panel_<measure>_weighted` with their point and interval
    (in the absolute interval's columns), unranked, each naming the source in
    `weights_source`. None without a source: nothing weighted is written then."""
    source = answer["source"]
    if source is None:
        return []
    cited = f"{source['citation']} ({source['url']}, {source['source_date']:%Y-%m-%d})"
    rows = []
    for figure in WEIGHTED_FIGURES:
        measure, kind = figure.split("_")
        label = (f"{measure.capitalize()}, simulated public, "
                 + ("every reading position equal" if kind == "unweighted"
                    else "weighted to the population"))
        for row in answer["rows"]:
            rows.append({"metric": f"panel_{figure}", "model": row["model"],
                         "model_name": row["model_name"], "rank": None,
                         "point": row[figure]["point"], "abs_low": row[figure]["low"],
                         "abs_high": row[figure]["high"], "label": label,
                         "unranked_reason": "not ranked: the ranks are the unweighted panel's",
                         "weights_source": cited})
    return rows
