"""Model calls per text per stage for a release, and the scoring throughput on a fake OpenRouter.

    python bench/calls.py [--release en.0] [--latency 0.2] [--concurrency 50]
                          [--writers 4] [--scenarios 4] [--tasks 2]

Part 1 counts calls from the release config alone (DESIGN section 5): texts = writers x
scenarios x tasks x conditions x variants; refusal 1 per text; jury 3 per read text; panel 12
per text plus 4 x 12 per scenario (no text, control, two human baselines); uptake 2 per text
(journalist and frame judge); reveal 3 per text (`public.reveal_positions`). Every text is
assumed to comply (the upper bound); the worst case with every reply retried is separate.

Part 2 runs the whole chain on a throwaway SQLite database against the fake OpenRouter server
(`runs_app.testing.fake_openrouter`) with a fixed latency, through the real OpenRouter provider,
and prints calls/s per stage and the ratio to the ideal (concurrency / latency).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

PANEL_POSITIONS = 12
BASELINE_STIMULI = 4  # no text, control text, two human baselines
JURY_SIZE = 3
UPTAKE_CALLS = 2
REVEAL_POSITIONS = 3
STAGES = ("generate", "refusal", "jury", "panel", "uptake", "reveal")


def call_counts(config) -> list[tuple[str, int, int, str]]:
    """(stage, calls, worst case with every retry, per-unit rule) for one release config."""
    scenarios = len(config.scenarios)
    texts = (len(config.writers) * scenarios * len(config.tasks) * len(config.conditions)
             * config.variants)
    retry = config.max_reply_attempts
    panel = texts * PANEL_POSITIONS + scenarios * BASELINE_STIMULI * PANEL_POSITIONS
    return [
        ("generate", texts, texts * config.max_attempts, "1 per text"),
        ("refusal", texts, texts * retry, "1 per text"),
        ("jury", texts * JURY_SIZE, texts * JURY_SIZE * retry, f"{JURY_SIZE} per read text"),
        ("panel", panel, panel * retry,
         f"{PANEL_POSITIONS} per text + {BASELINE_STIMULI}x{PANEL_POSITIONS} per scenario"),
        ("uptake", texts * UPTAKE_CALLS, texts * UPTAKE_CALLS * retry, f"{UPTAKE_CALLS} per text"),
        ("reveal", texts * REVEAL_POSITIONS, texts * REVEAL_POSITIONS * retry,
         f"{REVEAL_POSITIONS} per read text"),
    ]


def print_counts(code: str) -> None:
    import yaml

    from runs_app.schemas import ReleaseConfig

    config = ReleaseConfig.model_validate(
        yaml.safe_load((ROOT / "releases" / f"{code}.yaml").read_text(encoding="utf-8")))
    texts = (len(config.writers) * len(config.scenarios) * len(config.tasks)
             * len(config.conditions) * config.variants)
    print(f"release {code}: {len(config.writers)} writers x {len(config.scenarios)} scenarios x "
          f"{len(config.tasks)} tasks x {len(config.conditions)} conditions x "
          f"{config.variants} variants = {texts} texts")
    total = worst_total = 0
    for stage, calls, worst, rule in call_counts(config):
        total += calls
        worst_total += worst
        print(f"{stage:9s} {calls:6d} calls  {calls / texts:6.2f} per text  ({rule}); "
              f"worst case with retries {worst}")
    print(f"total     {total:6d} calls  {total / texts:6.2f} per text; worst case {worst_total} "
          f"(max_attempts {config.max_attempts}, max_reply_attempts {config.max_reply_attempts})")


# ---------------------------------------------------------------------------------------
# Part 2: throughput against the fake server
# ---------------------------------------------------------------------------------------

WRITER_TEXT = (
    "Headline: the organisation sets out what happened.\n\nThe organisation today gives an "
    "account of the incident, including what reflects badly on it, and what it is doing about "
    "it. It apologises and will publish further information as soon as it is established."
)


def respond(payload: dict) -> str:
    """A valid reply for whatever the prompt asks; the purpose is read from the prompt."""
    messages = payload.get("messages") or []
    system = " ".join(m.get("content", "") for m in messages if m.get("role") == "system")
    user = " ".join(m.get("content", "") for m in messages if m.get("role") == "user")
    if system.startswith("You classify whether"):
        return json.dumps({"verdict": "complied", "reason": "It wrote the text."})
    if "You are a juror" in system + user:
        return json.dumps({"claims": [{"quote": "It apologises.", "label": "supported",
                                       "basis": ["F1"]}],
                           "facts_conveyed": ["F1"], "confidential_disclosed": [],
                           "techniques": []})
    if system.startswith("You are taking part in a survey"):
        attitude = {qid: 4 for qid in re.findall(r"^(A\d+)\. ", user, flags=re.MULTILINE)}
        if "<<<BEGIN WHAT YOU LEARNED>>>" in user:
            return json.dumps({"attitude": attitude})
        knowledge = {qid: 1 for qid in re.findall(r"^(K\d+)\. ", user, flags=re.MULTILINE)}
        return json.dumps({"attitude": attitude, "knowledge": knowledge})
    if system.startswith("You are a reporter"):
        return json.dumps({"runs_story": True, "headline": "Organisation sets out what happened",
                           "opening": "The organisation said today it had acted."})
    if system.startswith("You assess news articles"):
        return json.dumps({"frame_adoption": 3, "reason": "Partly its own words."})
    return WRITER_TEXT


def bench_config(writers: int, scenarios: int, tasks: int):
    from django.conf import settings

    from runs_app.schemas import ReleaseConfig

    writer_ids = [f"bench/writer-{n}" for n in range(writers)]
    juror_ids = [f"bench/juror-{n}" for n in range(3)]
    models = [{"id": w, "family": f"writer-{n}", "name": w} for n, w in enumerate(writer_ids)]
    models += [{"id": j, "family": f"juror-{n}", "name": j} for n, j in enumerate(juror_ids)]
    models.append({"id": "bench/reader", "family": "reader", "name": "Reader"})
    slugs = sorted(path.stem for path in Path(settings.SCENARIOS_DIR).glob("*.yaml")
                   if "language: en" in path.read_text(encoding="utf-8"))
    return ReleaseConfig.model_validate({
        "code": "bench.0", "language": "en", "models": models, "writers": writer_ids,
        "jurors": juror_ids, "reader": "bench/reader", "journalist": "bench/reader",
        "scenarios": slugs[:scenarios], "tasks": ["T1", "T2", "T3"][:tasks],
        "conditions": ["C0", "C1", "C2", "C3"],
    })


def run_throughput(args: argparse.Namespace) -> None:
    from django.conf import settings
    from django.core.management import call_command

    from runs_app.providers.pool import ProviderPool
    from runs_app.public_scores import text_scores_update_public
    from runs_app.services import release_create, release_freeze
    from runs_app.stages import get_stage
    from runs_app.stages.base import drain
    from runs_app.testing.fake_openrouter import FakeOpenRouterProcess
    from scenarios_app.services import scenarios_import

    call_command("migrate", verbosity=0)
    scenarios_import(paths=[str(settings.SCENARIOS_DIR)])
    release = release_freeze(release=release_create(
        config=bench_config(args.writers, args.scenarios, args.tasks)))
    ideal = args.concurrency / args.latency
    print(f"fake OpenRouter: latency {args.latency * 1000:.0f} ms, concurrency "
          f"{args.concurrency}, ideal {ideal:.0f} calls/s")
    # The server runs in a child process: on this process's GIL it would slow the client.
    with FakeOpenRouterProcess(latency=args.latency, responder=respond) as server:
        for name in STAGES:
            pool = ProviderPool(default="openrouter", base_url=server.base_url, api_key="bench",
                                concurrency=args.concurrency)
            before = server.count()
            start = time.perf_counter()
            report = drain(get_stage(name), release, concurrency=args.concurrency,
                           providers=pool)
            elapsed = time.perf_counter() - start
            calls = server.count() - before
            rate = calls / elapsed if elapsed else 0.0
            print(f"{name:9s} {report.finished:5d} rows {calls:5d} calls {elapsed:6.2f} s "
                  f"{rate:7.1f} calls/s  {rate / ideal:5.2f} of ideal  "
                  f"(peak in flight {server.max_in_flight})")
            server.reset()
    start = time.perf_counter()
    written = text_scores_update_public(release=release)
    print(f"public scores: {written} texts in {time.perf_counter() - start:.2f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--release", default="en.0")
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--concurrency", type=int, default=50)
    parser.add_argument("--writers", type=int, default=4)
    parser.add_argument("--scenarios", type=int, default=4)
    parser.add_argument("--tasks", type=int, default=2)
    parser.add_argument("--counts-only", action="store_true")
    args = parser.parse_args()
    workdir = tempfile.mkdtemp(prefix="baitbench-bench-")
    os.environ["DATABASE_URL"] = f"sqlite:///{workdir}/bench.sqlite3"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "baitbench_site.settings")
    os.environ.setdefault("BAITBENCH_DEV", "1")  # a benchmark is a development run
    import django

    django.setup()
    print_counts(args.release)
    if not args.counts_only:
        print()
        run_throughput(args)


if __name__ == "__main__":
    main()
