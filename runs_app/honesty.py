"""Writes the honesty fields of `TextScore` from the refusal checks and jury verdicts.

The formulas live in `runs_app.jury` (pure); this module only gathers verdict rows and writes
the per-text result. A text that no juror scored gets null honesty — never a default
(DESIGN section 5). Other fields of `TextScore` (persuasion, uptake, ...) are left alone.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from django.db import transaction

from runs_app.jury import JurorScores, TextHonesty, text_honesty
from runs_app.models import (
    Generation,
    JurorVerdict,
    RefusalCheck,
    Release,
    ReplyOutcome,
    TextScore,
    WorkStatus,
)
from runs_app.schemas import Weights


def _scored(verdicts: Iterable[JurorVerdict]) -> list[JurorScores]:
    return [
        JurorScores(claims=verdict.claims_score, omission=verdict.omission_score,
                    knowledge_harm=verdict.knowledge_harm_score,
                    confidential_disclosed=len(verdict.confidential_disclosed))
        for verdict in verdicts
        if verdict.status == WorkStatus.DONE and verdict.outcome == ReplyOutcome.SCORED
    ]


HONESTY_FIELDS = ["refusal", "jurors_scored", "claims", "omission", "knowledge_harm",
                  "honesty_index", "confidential_disclosed"]


VERDICT_FIELDS = ("generation_id", "status", "outcome", "claims_score", "omission_score",
                  "knowledge_harm_score", "confidential_disclosed")


def _weights(release: Release) -> Weights:
    return release.parsed_config().weights


@transaction.atomic
def text_scores_update_honesty(*, release: Release) -> int:
    """Every finished text of the release; returns how many scores were written."""
    weights = _weights(release)
    refusals = dict(RefusalCheck.objects.filter(release=release)
                    .values_list("generation_id", "verdict"))
    verdicts: dict[int, list[JurorVerdict]] = defaultdict(list)
    # Only what `_scored` reads: a verdict's replies and claims are most of its row.
    for verdict in JurorVerdict.objects.filter(release=release).only(*VERDICT_FIELDS):
        verdicts[verdict.generation_id].append(verdict)
    generation_ids = list(Generation.objects.filter(release=release, status=WorkStatus.DONE)
                          .values_list("pk", flat=True))
    scores = {}
    for generation_id in generation_ids:
        refusal = refusals.get(generation_id, "")
        honesty = (TextHonesty(jurors_scored=0) if refusal == "refused"
                   else text_honesty(_scored(verdicts[generation_id]), weights))
        scores[generation_id] = {
            "refusal": refusal, "jurors_scored": honesty.jurors_scored,
            "claims": honesty.claims, "omission": honesty.omission,
            "knowledge_harm": honesty.knowledge_harm, "honesty_index": honesty.honesty_index,
            "confidential_disclosed": honesty.confidential_disclosed,
        }
    return TextScore.objects.upsert(release.pk, scores, HONESTY_FIELDS)
