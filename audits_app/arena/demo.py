"""The demo's arena: opened on a *simulated* approval, with *simulated* voters.

The demo runs offline on fixture models, with no people and no ethics body. To show the arena
populated, a clearly marked demo approval is recorded (its letter says it is not a real
review), the arena is opened, and demo voters answer pairs chosen by the real pair selection.
A demo voter prefers the text the release's simulated public found more persuasive, with noise
(so the human ranking follows the simulated one by construction: it demonstrates the pages,
it measures nothing). Every such vote carries a note saying it is simulated, like the demo's
spot-checks; nothing here runs outside `manage.py demo`, and running it again adds nothing.
"""

from __future__ import annotations

from datetime import timedelta

import numpy as np
from django.core.files.base import ContentFile
from django.db.models import F
from django.utils import timezone

from audits_app.arena.models import ArenaEvent, ArenaShowing, ArenaVote, EthicsReview
from audits_app.arena.services import (
    arena_open,
    ethics_review_record,
    results_current,
    showing_create,
    vote_record,
    voter_create,
)
from audits_app.arena.simulation import simulation_drain
from audits_app.pages import viewer as public
from audits_app.publication.snapshot_model import TextEntry
from runs_app.models import Release

SIMULATED_NOTE = "Simulated demo voter (fixture data, not a person)."
DEMO_BODY = "Demo ethics board (simulated: no ethics body reviewed this demo)"
DEMO_REFERENCE = "DEMO-0"
DEMO_VOTERS = 24
VOTES_PER_VOTER = 15
# How sharply a demo voter follows the simulated public's persuasion scores (1-7 scale).
PERSUASION_SCALE = 0.5
HONESTY_SCALE = 0.1


def demo_arena(*, release: Release, user, voters: int = DEMO_VOTERS,
               votes_each: int = VOTES_PER_VOTER) -> str:
    """Open the demo arena once and fill it with simulated votes; a report of its rankings."""
    _approve(release, user)
    if not ArenaEvent.objects.filter(release=release, action=ArenaEvent.Action.OPEN).exists():
        arena_open(release=release, user=user, reason=(
            "Demo: opened on a simulated approval so that the demo shows a working arena. "
            "Its votes are simulated, not people's."))
    cast = 0
    if not ArenaVote.objects.filter(pair__release=release, simulated=True).exists():
        cast = _simulated_votes(release, voters, votes_each)
    answered = simulation_drain(release)
    result = results_current(release=release)
    return _report(release, result, cast, answered)


def _approve(release: Release, user) -> None:
    if EthicsReview.objects.filter(release=release, study__isnull=True).exists():
        return
    ethics_review_record(
        release=release, user=user, reviewing_body=DEMO_BODY, reference=DEMO_REFERENCE,
        decided_on=timezone.localdate(), decision=EthicsReview.Decision.APPROVED,
        document=ContentFile(demo_letter(), name="demo-ethics-approval.pdf"),
        note="Demo only: no ethics body reviewed this arena. The approval is simulated so that "
             "the demo can show an open arena.",
    )


def _simulated_votes(release: Release, voters: int, votes_each: int) -> int:
    """Demo voters answer pairs the real selection gives them; returns the votes cast."""
    texts = {text.id: text for text in public.load_snapshot(release.publication).texts}
    rng = np.random.default_rng(release.parsed_config().bootstrap.seed)
    cast = 0
    for _ in range(voters):
        voter = voter_create()
        for _ in range(votes_each):
            showing = showing_create(release=release, voter=voter, rng=rng, background=False)
            if showing is None:
                break
            reading = timedelta(seconds=float(rng.uniform(20, 120)))
            ArenaShowing.objects.filter(pk=showing.pk).update(shown_at=F("shown_at") - reading)
            showing.refresh_from_db()
            favourable, honest = _answers(showing, texts, rng)
            vote_record(showing=showing, voter=voter, favourable=favourable, honest=honest,
                        recognised=bool(rng.random() < 0.03), now=showing.shown_at + reading,
                        simulated=True, note=SIMULATED_NOTE)
            cast += 1
    return cast


def _answers(showing: ArenaShowing, texts: dict[int, TextEntry],
             rng: np.random.Generator) -> tuple[str, str]:
    """A noisy preference for the more persuasive text; the instructed side on a check."""
    if showing.attention:
        return showing.attention, ""
    left = texts[showing.pair.generation_id_on(showing.side_of("left"))]
    right = texts[showing.pair.generation_id_on(showing.side_of("right"))]
    favour_left = _logistic((left.persuasion - right.persuasion) / PERSUASION_SCALE)
    favourable = "left" if rng.random() < favour_left else "right"
    honest = ""
    if rng.random() < 0.6 and None not in (left.honesty_index, right.honesty_index):
        honest_left = _logistic((left.honesty_index - right.honesty_index) / HONESTY_SCALE)
        honest = "left" if rng.random() < honest_left else "right"
    return favourable, honest


def _logistic(value: float) -> float:
    return float(1.0 / (1.0 + np.exp(-value)))


def _report(release: Release, result, cast: int, answered: int) -> str:
    lines = [f"arena: {cast} simulated demo votes cast, {answered} simulated-public answers"]
    if result is None:
        return "\n".join([*lines, "arena: no results yet"])
    data = result.data
    names = public.model_names(public.load_snapshot(release.publication))
    for label, first, second in (("all pairs", "human", "simulated"),
                                 ("without recognisable pairs", "human_unflagged",
                                  "simulated_unflagged")):
        lines.append(f"\narena ranking, {label} (Bradley–Terry; demo votes vs simulated public)")
        lines.append(f"  {'model':<28} {'votes':>14}  {'simulated public':>20}")
        others = {row["model"]: row for row in data["rankings"][second]["rows"]}
        for row in data["rankings"][first]["rows"]:
            other = others.get(row["model"], {})
            lines.append(f"  {names.get(row['model'], row['model']):<28} "
                         f"{_rank(row):>14}  {_rank(other):>20}")
    correlations = data["correlations"]
    lines.append(f"  Spearman, votes vs simulated public: "
                 f"{_number(correlations['human_vs_simulated'])} (all pairs), "
                 f"{_number(correlations['human_vs_simulated_unflagged'])} (without "
                 f"recognisable pairs)")
    votes = data["votes"]
    # Every vote is one of the three: an attention check's answer is no preference.
    lines.append(f"  {votes['total']} votes: {votes['counted']} counted, {votes['shadow']} shadow "
                 f"votes, {votes['attention_checks']} attention checks ({SIMULATED_NOTE})")
    return "\n".join(lines)


def _rank(row: dict) -> str:
    if not row or row.get("rating") is None:
        return "-"
    place = f"#{row['rank']}" if row["rank"] else "unranked"
    return f"{place} {row['rating']:+.2f}"


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def demo_letter() -> bytes:
    """A one-page PDF saying plainly that the demo's approval is not a real ethics review."""
    text = "BaitBench demo: simulated approval. No ethics body reviewed this arena."
    stream = f"BT /F1 12 Tf 72 720 Td ({text}) Tj ET".encode("latin-1")
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n%s\nendstream" % (len(stream), stream),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    document = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(document))
        document += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    table = len(document)
    document += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    document += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    document += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1, table)
    return bytes(document)
