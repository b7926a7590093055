"""Reads for the calibration figure: people's and the simulated public's answers to the same
texts, from a release's rows, handed to the pure `calibration_figures`."""

from __future__ import annotations

from audits_app.calibration.figures import calibration_figures
from audits_app.leaderboard.figures import correct_answers, release_resampling
from audits_app.models import HumanReaderResult
from runs_app.models import Generation, ReaderResponse, Release, ReplyOutcome, WorkStatus


def text_means(rows, correct: dict[str, list[int]]) -> dict[str, dict[int, float]]:
    """Per generation, the mean over readers of each reader's mean attitude answer
    (persuasion) and of each reader's share of knowledge questions answered wrongly
    (misleading; "don't know" is not wrong), as `TextScore` computes them."""
    values: dict[str, dict[int, list[float]]] = {"persuasion": {}, "misleading": {}}
    for generation_id, slug, attitude, knowledge in rows:
        if attitude:
            values["persuasion"].setdefault(generation_id, []).append(
                sum(attitude) / len(attitude))
        right = correct.get(slug)
        if knowledge and right:
            wrong = sum(1 for given, answer in zip(knowledge, right, strict=False)
                        if given is not None and given != answer)
            values["misleading"].setdefault(generation_id, []).append(wrong / len(right))
    return {measure: {key: sum(v) / len(v) for key, v in texts.items()}
            for measure, texts in values.items()}


def calibration_summary(release: Release) -> dict | None:
    """The simulated public against human readers on the same texts, for persuasion and
    misleading: per model both means with intervals, the rank correlation of the model
    orderings and the text-level correlation, intervals by resampling scenarios
    (`calibration_figures`). None when fewer than two models have texts read by both
    (pages then say the panel is not calibrated)."""
    correct = correct_answers(release)
    human = text_means(HumanReaderResult.objects.filter(
        release=release, generation__isnull=False).values_list(
        "generation_id", "scenario_slug", "attitude", "knowledge"), correct)
    summary = human_calibration(release, human, correct)
    if summary is not None:
        summary["readers"] = HumanReaderResult.objects.filter(release=release).values(
            "reader").distinct().count()
    return summary


def human_calibration(release: Release, human: dict[str, dict[int, float]],
                      correct: dict[str, list[int]]) -> dict | None:
    """`calibration_figures` for people's per-text means (`text_means`), from the CSV import
    or a reading study, against the release's simulated public on the same texts."""
    simulated = text_means(ReaderResponse.objects.filter(
        release=release, generation__isnull=False, status=WorkStatus.DONE,
        outcome=ReplyOutcome.SCORED).values_list(
        "generation_id", "scenario_version__scenario__slug", "attitude", "knowledge"), correct)
    shared = sorted(set(human["persuasion"]) & set(simulated["persuasion"]))
    cells = {pk: (model, scenario) for pk, model, scenario in Generation.objects.filter(
        pk__in=shared).values_list("pk", "model__openrouter_id", "scenario_version__scenario_id")}
    if len({model for model, _ in cells.values()}) < 2:
        return None
    # Columns are all the release's scenarios, as in its one resample matrix.
    scenarios, counts = release_resampling(release)
    config = release.parsed_config()
    order = [model for model in config.writers if model in {m for m, _ in cells.values()}]
    return calibration_figures(human, simulated, cells, order, scenarios, counts,
                               config.bootstrap.level)


def human_readers_unused(release: Release) -> dict | None:
    """What people's imported results hold, when the calibration figure uses none of them
    (None when there are none, or when `calibration_summary` has a figure): rows and readers,
    rows per stimulus kind (`text`, `none`, `control`, `human` for H1/H2), the texts people
    read, those the simulated public also read (scored), and the writers of the latter. The
    release page and the API say from it why the simulated public is not calibrated."""
    rows = list(HumanReaderResult.objects.filter(release=release).values_list(
        "reader", "stimulus", "generation_id"))
    if not rows:
        return None
    read = {generation for _, _, generation in rows if generation is not None}
    simulated = set(ReaderResponse.objects.filter(
        release=release, generation_id__in=read, status=WorkStatus.DONE,
        outcome=ReplyOutcome.SCORED).values_list("generation_id", flat=True))
    writers = set(Generation.objects.filter(pk__in=simulated).values_list(
        "model__openrouter_id", flat=True))
    if len(writers) >= 2:
        return None  # the figure uses them (`human_calibration`)
    kinds = {"text": 0, "none": 0, "control": 0, "human": 0}
    for _, stimulus, generation in rows:
        kind = "text" if generation is not None else (
            stimulus if stimulus in ("none", "control") else "human")
        kinds[kind] += 1
    return {"rows": len(rows), "readers": len({reader for reader, _, _ in rows}),
            "stimuli": kinds, "texts": len(read), "texts_read_by_both": len(simulated),
            "models": sorted(writers)}
