"""A cut-down en.0 against the messy fake OpenRouter: what messy replies do to a run.

    .venv/bin/python bench/replies.py            # from a fresh clone, after `make` (or `make test`)
    .venv/bin/python bench/replies.py --quick    # one scenario, C0 and C2: a minute or two
    .venv/bin/python bench/replies.py --shapes prose_fence,byok --rate 0.3
    .venv/bin/python bench/replies.py --handling-only   # the CPU per reply alone: seconds

The release has en.0's models, jury, reader, stage set and scoring version, two of its
scenarios (greenvale-listeria, cobaltcloud-breach), T1 and C0-C3: 80 texts. It is run once
clean, once per shape of `runs_app.testing.messy` at 30 % of the calls that shape applies to,
and once mixed (every shape at 5 %), each in a fresh release of one scratch SQLite database
(a temporary directory, removed afterwards; BAITBENCH_DEV=1), with the real OpenRouter client
against the messy server on loopback. No model is called and nothing leaves the machine.

Printed per run: per stage the rows scored / refused / unscored / failed / pending; the calls
made against the minimum (one call per row that needs an answer: a text's first attempt, a
refusal check the writer's own refusal does not settle, each verdict, reading and reveal),
and the re-asks (replies read as invalid); the cost recorded in the rows against what the
server charged (marked "est." where a reply reported no cost and the models list's prices
stood in); then what must stay 0: broken texts scored (a think block, the writer's secret, a
chat wrapper, another language, a text cut off at the budget), invalid values scored (a
boolean or out-of-range answer in a scored reading or reveal, a verdict score outside 0..1)
and crashes (an exception out of the drain, or rows left claimed).

First, the CPU that reading a reply costs (no database, no network): for every shape, the
replies a juror, a reader and a writer get in that shape are read as the OpenRouter provider
and the stages read them (`parse_response` on the HTTP response, then `read_reply` with the
stage's schema, or `writer_text` for a writer), best of 5 rounds of HANDLING_ROUNDS replies,
in CPU microseconds per reply, against the same for a clean reply. Target: under 300 us; a
writer's text in another language is identified (lingua) to name its language, which costs
about 0.6 ms per hundred words, and is then written again.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import traceback
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SCENARIOS = ["greenvale-listeria", "cobaltcloud-breach"]
CONDITIONS = ["C0", "C1", "C2", "C3"]
MIXED_RATE = 0.05
CONCURRENCY = 32
HANDLING_ROUNDS = 400
HANDLING_TARGET_US = 300.0


def handling_cpu() -> list[str]:
    """CPU microseconds to read one reply, per shape and role (see the module docstring)."""
    import json

    import httpx

    from runs_app.jury import JurorReply
    from runs_app.providers.openrouter import parse_response
    from runs_app.readers import ReaderReply
    from runs_app.reply_reader import InvalidReply, read_reply
    from runs_app.testing import messy
    from runs_app.testing.replies import WRITER_TEXT
    from runs_app.writer_text import NotAText, writer_text

    juror = json.dumps({"claims": [{"quote": "It apologises.", "label": "supported",
                                    "basis": ["F1"]}] * 6, "facts_conveyed": ["F1", "F2"],
                        "confidential_disclosed": [], "techniques": []})
    reader = json.dumps({"attitude": {"A1": 4, "A2": 3, "A3": 5},
                         "knowledge": {"K1": 1, "K2": 0, "K3": "dont_know", "K4": 2}})
    roles = {
        "juror": (juror, False, lambda text: read_reply(text, JurorReply)),
        "reader": (reader, False, lambda text: read_reply(text, ReaderReply)),
        "writer": (WRITER_TEXT * 3, True, lambda text: writer_text(text, "en")),
    }
    lines, over = ["reading one reply (CPU us, best of 5 rounds; parse_response + the stage's "
                   "reader):"], []
    for role, (content, is_writer, read) in roles.items():
        cells = []
        for shape in ("clean", *messy.SHAPES):
            if shape != "clean" and not messy._applies(shape, is_writer):
                continue
            body = messy._shaped(content, shape, {"model": "bench/model"})
            response = httpx.Response(200, content=json.dumps(body).encode(),
                                      headers={"content-type": "application/json"})
            best = float("inf")
            for _ in range(5):
                start = time.process_time()
                for _ in range(HANDLING_ROUNDS):
                    result = parse_response(response, latency_ms=1, http_attempts=1)
                    try:
                        read(result.text or "")
                    except (InvalidReply, NotAText):
                        pass  # an unreadable reply is read, and refused, all the same
                best = min(best, (time.process_time() - start) / HANDLING_ROUNDS * 1e6)
            if best >= HANDLING_TARGET_US:
                over.append(f"{role} {shape} ({best:.0f} us)")
            cells.append(f"{shape} {best:.0f}")
        lines.append(f"  {role}: " + ", ".join(cells))
    lines.append(f"  target {HANDLING_TARGET_US:.0f} us per reply: "
                 + (f"over it: {', '.join(over)}" if over else "every shape and role under it"))
    return lines


def setup(workdir: Path) -> None:
    os.environ["DATABASE_URL"] = f"sqlite:///{workdir / 'replies.sqlite3'}"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "baitbench_site.settings")
    os.environ.setdefault("BAITBENCH_DEV", "1")  # a benchmark is a development run
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0, skip_checks=True)
    call_command("import_scenarios", str(ROOT / "scenarios"), verbosity=0)


def make_release(code: str, *, quick: bool):
    from django.conf import settings

    from runs_app.models import RunControl
    from runs_app.schemas import ReleaseConfig
    from runs_app.services import release_config_from_file, release_create, release_freeze

    data = release_config_from_file(settings.RELEASES_DIR / "en.0.yaml").model_dump()
    data.update(code=code, title=f"replies bench {code}", tasks=["T1"],
                scenarios=SCENARIOS[:1] if quick else SCENARIOS,
                conditions=["C0", "C2"] if quick else CONDITIONS,
                bootstrap={"seed": 1, "resamples": 200, "level": 0.95})
    release = release_freeze(release=release_create(config=ReleaseConfig.model_validate(data)))
    RunControl.objects.get_or_create(release=release)
    return release


def runs(shapes: list[str], rate: float) -> Iterator[tuple[str, dict[str, float]]]:
    """(name, rates): clean, each shape alone, then all of them mixed."""
    from runs_app.testing.messy import SHAPES

    yield "clean", {}
    for shape in shapes:
        yield shape, {shape: rate}
    if len(shapes) > 1:
        yield "mixed", {shape: MIXED_RATE for shape in SHAPES}


def run_once(name: str, rates: dict[str, float], number: int, *, quick: bool) -> dict[str, Any]:
    from runs_app.costs import forget_prices
    from runs_app.providers.models_list import models_list
    from runs_app.providers.pool import ProviderPool
    from runs_app.services import run_start
    from runs_app.stages.base import drain_release
    from runs_app.tasks import mark_scored
    from runs_app.testing.fake_openrouter import FakeOpenRouter
    from runs_app.testing.messy import MessyReplies, models_payload

    responder = MessyReplies(rates=rates, seed=number)
    release = make_release(f"replies-{number}", quick=quick)
    config = release.parsed_config()
    crash = ""
    started = time.monotonic()
    with FakeOpenRouter(responder=responder,
                        models=models_payload([spec.id for spec in config.models])) as server:
        os.environ["OPENROUTER_BASE_URL"] = server.base_url
        models_list(refresh=True)  # the prices an unknown cost is estimated from
        forget_prices()
        pool = ProviderPool(default="openrouter", base_url=server.base_url, api_key="bench",
                            backoff_base=0.01, backoff_cap=0.05, max_retries=2)
        try:
            # As `run_release --sync` does: the whole stage set started, drained here.
            run_start(release=release, enqueue=False)
            drain_release(release, config.stages, providers=pool, controlled=True,
                          concurrency=CONCURRENCY)
            mark_scored(release)
        except Exception:  # noqa: BLE001 - a crash is what this benchmark counts
            crash = traceback.format_exc(limit=3).strip().splitlines()[-1]
        calls = server.count()
    return {"name": name, "release": release, "calls": calls, "crash": crash,
            "charged": responder.charged_usd, "seconds": time.monotonic() - started,
            "shapes": dict(responder.shapes)}


# ---------------------------------------------------------------------------------------
# What a run left in the database
# ---------------------------------------------------------------------------------------


def minimum_calls(release) -> int:
    """One call per row that needs an answer, given the rows the run produced."""
    from runs_app.models import RefusalCheck
    from runs_app.stages import get_stage

    total = 0
    for name in release.parsed_config().stages:
        rows = get_stage(name).rows(release)
        if name == "refusal":  # the writer's own refusal settles its check without a call
            rows = RefusalCheck.objects.filter(release=release, generation__writer_refusal="")
        total += rows.count()
    return total


def reasked(release) -> int:
    """Replies read as invalid (each one was asked again, or left its row unscored)."""
    from runs_app.stages import get_stage

    count = 0
    for name in release.parsed_config().stages:
        if name == "generate":
            continue
        for replies in get_stage(name).rows(release).values_list("raw_replies", flat=True):
            count += sum(1 for entry in replies if "invalid" in entry)
    return count


def costs(release) -> tuple[float, bool]:
    """(cost recorded in every row of every stage, whether part of it is an estimate)."""
    from django.db.models import Q, Sum

    from runs_app.stages import get_stage

    recorded, estimated = 0.0, False
    for name in release.parsed_config().stages:
        found = get_stage(name).rows(release).aggregate(
            cost=Sum("cost_usd"), estimated=Sum("pk", filter=Q(cost_estimated=True)))
        recorded += found["cost"] or 0.0
        estimated = estimated or bool(found["estimated"])
    return recorded, estimated


def broken(text: str, native_finish_reason: str, finish_reason: str) -> str:
    """Why a stored text is not only the text, or ""."""
    from runs_app.testing.messy import GERMAN, SECRET

    if not text.strip():
        return "empty"
    if "<think>" in text or SECRET in text:
        return "reasoning"
    if text.lstrip().startswith("Sure!") or "Let me know" in text:
        return "chat wrapper"
    if GERMAN[:40] in text:
        return "another language"
    if finish_reason == "length" or native_finish_reason.upper() in ("MAX_TOKENS", "LENGTH"):
        return "cut off at the budget"
    return ""


def broken_texts(release) -> tuple[int, int]:
    """(broken texts accepted, broken texts that reached a score)."""
    from django.db.models import Q

    from runs_app.models import Generation, JurorVerdict, ReaderResponse, ReplyOutcome, TextScore

    accepted = [pk for pk, text, native, finish in Generation.objects.filter(
        release=release, status="done", writer_refusal="").values_list(
            "pk", "text", "native_finish_reason", "finish_reason") if broken(text, native, finish)]
    measured = TextScore.objects.filter(generation_id__in=accepted).filter(
        Q(honesty_index__isnull=False) | Q(persuasion__isnull=False)
        | Q(misleading__isnull=False) | Q(reveal_effect__isnull=False)
    ).values_list("generation_id", flat=True)
    scored = set(measured) | set(JurorVerdict.objects.filter(
        generation_id__in=accepted, outcome=ReplyOutcome.SCORED).values_list(
            "generation_id", flat=True)) | set(ReaderResponse.objects.filter(
                generation_id__in=accepted, outcome=ReplyOutcome.SCORED).values_list(
                    "generation_id", flat=True))
    return len(accepted), len(scored)


def _integer(value: Any, low: int, high: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and low <= value <= high


def invalid_values(release) -> int:
    """Scored rows holding a value no valid reply could give."""
    from runs_app.models import AgentRun, JurorVerdict, ReaderResponse, ReplyOutcome

    found = 0
    for attitude, knowledge in ReaderResponse.objects.filter(
            release=release, outcome=ReplyOutcome.SCORED).values_list("attitude", "knowledge"):
        found += not (len(attitude) == 3 and all(_integer(a, 1, 7) for a in attitude)
                      and all(k is None or _integer(k, 0, 3) for k in knowledge))
    for result in AgentRun.objects.filter(release=release, kind="reveal",
                                          outcome=ReplyOutcome.SCORED).values_list(
            "result", flat=True):
        found += not all(_integer(a, 1, 7) for a in result.get("after") or [None])
    for scores in JurorVerdict.objects.filter(release=release, outcome=ReplyOutcome.SCORED) \
            .values_list("claims_score", "omission_score", "knowledge_harm_score"):
        found += not all(score is None or (not isinstance(score, bool) and 0 <= score <= 1)
                         for score in scores)
    return found


def report(outcome: dict[str, Any]) -> list[str]:
    from runs_app.selectors import release_progress

    release = outcome["release"]
    release.refresh_from_db()
    progress = release_progress(release)
    minimum = minimum_calls(release)
    recorded, estimated = costs(release)
    charged = outcome["charged"]
    accepted, scored = broken_texts(release)
    claimed = sum(stage.claimed for stage in progress)
    lines = [f"{outcome['name']} ({release.get_status_display().lower()}, "
             f"{outcome['seconds']:.0f} s)"]
    for stage in progress:
        lines.append(f"  {stage.stage:<9} {stage.scored:>6} scored {stage.refused:>4} refused "
                     f"{stage.unscored:>5} unscored {stage.failed:>4} failed "
                     f"{stage.pending:>3} pending")
    excess = (outcome["calls"] - minimum) / minimum if minimum else 0.0
    difference = (recorded - charged) / charged if charged else 0.0
    lines.append(f"  calls {outcome['calls']:,} against a minimum of {minimum:,} "
                 f"({excess:+.1%}); {reasked(release):,} replies re-asked as invalid")
    lines.append(f"  cost recorded ${recorded:.4f}{' (est.)' if estimated else ''} against "
                 f"${charged:.4f} charged ({difference:+.2%})")
    crash = f"1: {outcome['crash']}" if outcome["crash"] else "0"
    lines.append(f"  broken texts accepted {accepted}, scored {scored}; invalid values scored "
                 f"{invalid_values(release)}; crashes {crash}; rows left claimed {claimed}")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="one scenario and C0, C2 (20 texts) instead of 80 texts")
    parser.add_argument("--shapes", help="comma-separated shapes (default: every shape)")
    parser.add_argument("--rate", type=float, default=0.3,
                        help="share of the calls a shape applies to (default 0.3)")
    parser.add_argument("--handling-only", action="store_true",
                        help="only the CPU per reply read, not the runs")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-replies-") as workdir:
        setup(Path(workdir))
        for line in handling_cpu():
            print(line, flush=True)
        if args.handling_only:
            return
        from runs_app.testing.messy import SHAPES

        shapes = args.shapes.split(",") if args.shapes else list(SHAPES)
        unknown = sorted(set(shapes) - set(SHAPES))
        if unknown:
            parser.error(f"unknown shapes: {', '.join(unknown)}; shapes: {', '.join(SHAPES)}")
        print(f"cut-down en.0: {'1 scenario, T1, C0 and C2' if args.quick else '2 scenarios, '}"
              f"{'' if args.quick else 'T1, C0-C3'}; shapes at {args.rate:.0%}, mixed at "
              f"{MIXED_RATE:.0%} each", flush=True)
        for number, (name, rates) in enumerate(runs(shapes, args.rate)):
            for line in report(run_once(name, rates, number, quick=args.quick)):
                print(line, flush=True)


if __name__ == "__main__":
    main()
