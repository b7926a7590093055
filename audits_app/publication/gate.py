"""The publish gate: what a publication freezes in numbers, and the spot-check gate
(DESIGN sections 6 and 8)."""

from __future__ import annotations

import dataclasses
from typing import Any

from django.db.models import Count, Q

from audits_app.spotchecks.selectors import gate_figures
from runs_app.models import (
    Generation,
    GenerationAttempt,
    JurorVerdict,
    Release,
    ReplyOutcome,
    TextScore,
    WorkStatus,
)
from runs_app.selectors import release_progress

# A text is scored when one of its measures was written, not merely when it has a score row
# (a text whose refusal check ended unscored has a row with nothing in it).
MEASURED = (Q(honesty_index__isnull=False) | Q(persuasion__isnull=False)
            | Q(misleading__isnull=False) | Q(uptake__isnull=False)
            | Q(reveal_effect__isnull=False) | Q(steadfastness__isnull=False))


def release_counts(release: Release) -> dict[str, int]:
    """What a publication freezes, in numbers (shown before publishing, stored in the snapshot):
    texts written, texts with a score, refusals, unscored rows of every stage (jury verdicts
    apart), failed cells and rows."""
    config = release.parsed_config()
    generations = Generation.objects.filter(release=release).aggregate(
        texts=Count("pk", filter=Q(status=WorkStatus.DONE)),
        failed_cells=Count("pk", filter=Q(status=WorkStatus.FAILED)),
    )
    scores = TextScore.objects.filter(release=release).aggregate(
        scored=Count("pk", filter=MEASURED), refused=Count("pk", filter=Q(refusal="refused")),
    )
    unscored = JurorVerdict.objects.filter(release=release, outcome=ReplyOutcome.UNSCORED).count()
    progress = release_progress(release)
    return {
        "texts": generations["texts"], "scored": scores["scored"], "unscored_verdicts": unscored,
        "unscored_rows": sum(stage.unscored for stage in progress),
        "failed_cells": generations["failed_cells"], **_unfilled_cells(release),
        "failed_rows": sum(stage.failed for stage in progress), "refused": scores["refused"],
        "scenarios": len(config.scenarios), "models": len(config.writers),
    }


# A writer's reply that does not count: the method writes the cell again, up to the release's
# max_attempts (DESIGN section 5). A cell whose attempts ran out stays missing.
NOT_COUNTED = (GenerationAttempt.Outcome.LENGTH, GenerationAttempt.Outcome.EMPTY,
               GenerationAttempt.Outcome.WRAPPED, GenerationAttempt.Outcome.LANGUAGE)


def _unfilled_cells(release: Release) -> dict[str, int]:
    """Cells the method wrote again and could not fill (a failed cell with a reply that did
    not count), and of them those with a text cut off at the token budget."""
    failed = Generation.objects.filter(release=release, status=WorkStatus.FAILED)
    regenerated = failed.filter(attempt_log__outcome__in=NOT_COUNTED).values("pk").distinct()
    cut_off = failed.filter(attempt_log__outcome=GenerationAttempt.Outcome.LENGTH).values(
        "pk").distinct()
    return {"unfilled_cells": regenerated.count(), "unfilled_cut_off": cut_off.count()}


@dataclasses.dataclass(frozen=True)
class GateCheck:
    """The spot-check gate (config.gate) against the release's spot-check figures.

    Coverage must reach min_coverage. Agreement must reach min_agreement; an agreement that
    cannot be computed yet (no spot-checks) blocks only when min_agreement is above 0.
    """

    coverage: float
    agreement: float | None
    items: int
    min_coverage: float
    min_agreement: float

    @property
    def reasons(self) -> list[str]:
        found = []
        if self.coverage < self.min_coverage:
            found.append(f"spot-check coverage {self.coverage:.1%} is below the gate's "
                         f"{self.min_coverage:.1%} ({self.items} items checked)")
        if self.agreement is None and self.min_agreement > 0:
            found.append(f"spot-check agreement is not known yet; the gate asks for "
                         f"{self.min_agreement:.2f}")
        elif self.agreement is not None and self.agreement < self.min_agreement:
            found.append(f"spot-check agreement {self.agreement:.2f} is below the gate's "
                         f"{self.min_agreement:.2f}")
        return found

    @property
    def passed(self) -> bool:
        return not self.reasons

    def as_dict(self) -> dict[str, Any]:
        return {"coverage": self.coverage, "agreement": self.agreement, "items": self.items,
                "min_coverage": self.min_coverage, "min_agreement": self.min_agreement,
                "passed": self.passed, "reasons": self.reasons}


def release_gate(release: Release) -> GateCheck:
    gate = release.parsed_config().gate
    figures = gate_figures(release)
    return GateCheck(
        coverage=float(figures.coverage),
        agreement=None if figures.agreement is None else float(figures.agreement),
        items=int(figures.items), min_coverage=gate.min_coverage,
        min_agreement=gate.min_agreement,
    )
