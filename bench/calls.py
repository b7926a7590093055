"""Model calls per text per stage for a release, and the scoring throughput on a fake OpenRouter.

    .venv/bin/python bench/calls.py [--release en.0 ...] [--latency 0.2] [--concurrency 50]
                          [--writers 4] [--scenarios 4] [--tasks 2] [--counts-only]

Part 1 counts the calls of each release's stage set from its config alone, with the same
`planned_calls` the stages use for cost estimates: every text is assumed to comply and every
reply to validate at once (the upper bound without retries); the worst case with every reply
retried is separate.

Part 2 runs each stage on a throwaway SQLite database against the fake OpenRouter server in a
child process (`runs_app.testing.fake_openrouter`, valid replies for every role) with a fixed
latency, through the real OpenRouter provider, one stage at a time, and prints calls/s per stage
and the ratio to the ideal (concurrency / latency), and to the plainest client run right after
the stage on the same number of calls (its last round as full or as partial as the stage's). Two
clients without the database are measured against the same server first: the plainest (one
httpx.AsyncClient; its connection pool checks every connection per request, so it pays more CPU
per call the more connections it has) and the provider the stages use. Every line gives the
client's CPU per call (this process) and the server's (its child process), to tell which side is
short of CPU.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def print_counts(code: str) -> None:
    import yaml

    from runs_app.schemas import ReleaseConfig
    from runs_app.stages import get_stage

    config = ReleaseConfig.model_validate(
        yaml.safe_load((ROOT / "releases" / f"{code}.yaml").read_text(encoding="utf-8")))
    texts = config.texts
    print(f"release {code}: {len(config.writers)} writers x {len(config.scenarios)} scenarios x "
          f"{len(config.tasks)} tasks x {len(config.conditions)} conditions x "
          f"{config.variants} variants = {texts} texts; stages {', '.join(config.stages)}")
    total = worst_total = 0
    for name in config.stages:
        calls = get_stage(name).planned_calls(config)
        retries = config.max_attempts if name == "generate" else config.max_reply_attempts
        total += calls
        worst_total += calls * retries
        # The cross-examination interviews T4 texts only: say what one interview costs.
        t4_texts = texts // len(config.tasks) if name == "crossexam" and "T4" in config.tasks \
            else 0
        per_t4 = f" ({calls / t4_texts:.0f} per T4 text)" if t4_texts else ""
        print(f"  {name:9s} {calls:6d} calls  {calls / texts:6.2f} per text{per_t4}; "
              f"worst case with retries {calls * retries}")
    print(f"  {'total':9s} {total:6d} calls  {total / texts:6.2f} per text; worst case "
          f"{worst_total} (max_attempts {config.max_attempts}, max_reply_attempts "
          f"{config.max_reply_attempts})")


# ---------------------------------------------------------------------------------------
# Part 2: throughput against the fake server
# ---------------------------------------------------------------------------------------

STAGES = ("generate", "refusal", "jury", "panel", "uptake", "reveal")


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
        "conditions": ["C0", "C1", "C2", "C3"], "stages": list(STAGES),
    })


def bare_client_rate(base_url: str, concurrency: int, calls: int) -> float:
    """Calls/s of the plainest client (asyncio, one httpx.AsyncClient, `concurrency` tasks, a
    small request) against the same server: what this machine and the fake server allow at
    all, measured in the same run as the stages."""
    import asyncio

    import httpx

    payload = {"model": "bench/juror-0", "messages": [{"role": "user", "content": "Hello."}],
               "response_format": {"type": "json_object"}}

    async def run() -> float:
        remaining = calls
        limits = httpx.Limits(max_connections=concurrency,
                              max_keepalive_connections=concurrency)
        async with httpx.AsyncClient(base_url=base_url, limits=limits, timeout=60) as client:
            async def worker() -> None:
                nonlocal remaining
                while remaining > 0:
                    remaining -= 1
                    (await client.post("chat/completions", json=payload)).raise_for_status()

            start = time.perf_counter()
            await asyncio.gather(*(worker() for _ in range(concurrency)))
            return calls / (time.perf_counter() - start)

    return asyncio.run(run())


def provider_rate(base_url: str, concurrency: int, calls: int) -> tuple[float, float]:
    """Calls/s and CPU ms per call of the stages' own client path without the database:
    `OpenRouterProvider.complete` (its few small clients, its slots, its reply parsing),
    `concurrency` calls in flight, the same small request."""
    import asyncio

    from runs_app.providers.base import CompletionRequest, Message
    from runs_app.providers.openrouter import OpenRouterProvider

    request = CompletionRequest(model="bench/juror-0", messages=(Message("user", "Hello."),),
                                max_tokens=100, json_mode=True)

    async def run() -> tuple[float, float]:
        provider = OpenRouterProvider(base_url=base_url, api_key="bench",
                                      concurrency=concurrency)
        remaining = calls

        async def worker() -> None:
            nonlocal remaining
            while remaining > 0:
                remaining -= 1
                await provider.complete(request)

        start, cpu = time.perf_counter(), time.process_time()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
        await provider.aclose()
        return calls / elapsed, 1000 * cpu / calls

    return asyncio.run(run())


def run_throughput(args: argparse.Namespace) -> None:
    from django.conf import settings
    from django.core.management import call_command

    from runs_app.panel_scores import text_scores_update_panel
    from runs_app.providers.pool import ProviderPool
    from runs_app.services import release_create, release_freeze
    from runs_app.stages import get_stage
    from runs_app.stages.base import drain
    from runs_app.testing.fake_openrouter import FakeOpenRouterProcess
    from runs_app.testing.replies import valid_reply
    from scenarios_app.services import scenarios_import

    call_command("migrate", verbosity=0)
    scenarios_import(paths=[str(settings.SCENARIOS_DIR)])
    release = release_freeze(release=release_create(
        config=bench_config(args.writers, args.scenarios, args.tasks)))
    ideal = args.concurrency / args.latency
    print(f"fake OpenRouter: latency {args.latency * 1000:.0f} ms, concurrency "
          f"{args.concurrency}, ideal {ideal:.0f} calls/s")
    # The server runs in a child process: on this process's GIL it would slow the client.
    with FakeOpenRouterProcess(latency=args.latency, responder=valid_reply) as server:
        served = server.cpu_seconds()
        bare = bare_client_rate(server.base_url.rstrip("/") + "/", args.concurrency, 1500)
        bare_server = 1000 * (server.cpu_seconds() - served) / 1500
        server.reset()
        print(f"  bare httpx client: {bare:.1f} calls/s, {bare / ideal:.2f} of ideal (one "
              f"AsyncClient of {args.concurrency} connections; server {bare_server:.2f} ms CPU "
              f"per call)")
        served = server.cpu_seconds()
        own, own_cpu = provider_rate(server.base_url, args.concurrency, 1500)
        own_server = 1000 * (server.cpu_seconds() - served) / 1500
        server.reset()
        print(f"  provider, no database: {own:.1f} calls/s, {own / ideal:.2f} of ideal "
              f"(OpenRouterProvider.complete; {own_cpu:.2f} ms CPU per call, server "
              f"{own_server:.2f} ms)")
        for name in STAGES:
            pool = ProviderPool(default="openrouter", base_url=server.base_url, api_key="bench",
                                concurrency=args.concurrency)
            before, served = server.count(), server.cpu_seconds()
            start, cpu = time.perf_counter(), time.process_time()
            report = drain(get_stage(name), release, concurrency=args.concurrency,
                           providers=pool)
            elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
            calls = server.count() - before
            served = server.cpu_seconds() - served
            peak = server.max_in_flight
            rate = calls / elapsed if elapsed else 0.0
            server.reset()
            # The bare client again on the same number of calls, at once: a stage whose calls
            # fill their last round of `concurrency` only partly (768 calls at 50 in flight are
            # 15.36 rounds) is compared with a client that has the same last round.
            same = bare_client_rate(server.base_url.rstrip("/") + "/", args.concurrency,
                                    calls) if calls else 0.0
            server.reset()
            print(f"  {name:9s} {report.finished:5d} rows {calls:5d} calls {elapsed:6.2f} s "
                  f"{rate:7.1f} calls/s  {rate / ideal:5.2f} of ideal, {rate / bare:4.2f} of bare, "
                  f"{rate / same if same else 0.0:4.2f} of bare on {calls} calls "
                  f"({same:.1f} calls/s), {rate / own:4.2f} of provider; "
                  f"{1000 * cpu / max(calls, 1):5.2f} ms CPU per call, server "
                  f"{1000 * served / max(calls, 1):4.2f} ms (peak in flight {peak})")
    start = time.perf_counter()
    written = text_scores_update_panel(release=release)
    print(f"public scores: {written} texts in {time.perf_counter() - start:.2f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--release", nargs="+", default=["en.0"])
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--concurrency", type=int, default=50)
    # 768 texts: about en.0's size, so that a stage's fixed costs (planning, settling
    # scores) weigh as they do in a real release.
    parser.add_argument("--writers", type=int, default=8)
    parser.add_argument("--scenarios", type=int, default=8)
    parser.add_argument("--tasks", type=int, default=3)
    parser.add_argument("--counts-only", action="store_true")
    args = parser.parse_args()
    workdir = tempfile.mkdtemp(prefix="baitbench-bench-")
    os.environ["DATABASE_URL"] = f"sqlite:///{workdir}/bench.sqlite3"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "baitbench_site.settings")
    os.environ.setdefault("BAITBENCH_DEV", "1")  # a benchmark is a development run
    import django

    django.setup()
    for code in args.release:
        print_counts(code)
    if not args.counts_only:
        print()
        run_throughput(args)


if __name__ == "__main__":
    main()
