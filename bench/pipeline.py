"""A whole en.0-shaped release through every stage of its stage set, overlapped per text and
with stage barriers, against a fake OpenRouter with long-tailed latency.

    .venv/bin/python bench/pipeline.py [--writers 10] [--concurrency 100] [--median 1.0]
                                       [--p99 10.0] [--barriers-too | --barriers-only]

One worker in this process drains release bench.0 (writers x 8 scenarios x T1-T3 x C0-C3 =
960 texts at 10 writers; stages generate, refusal, jury, panel, reveal, as en.0) on a SQLite
file, with the real OpenRouter provider against the fake server in a child process whose
latency is log-normal (median 1 s, 99th percentile 10 s, seeded). Prints the wall time, the
calls made, the ideal -- the larger of (calls x mean latency / concurrency) and the longest
chain of one text (simulated from the same latency distribution) -- their ratio, and this
process's peak memory. With --barriers-too the same release is run again stage by stage,
each stage waiting for the whole previous one, for comparison.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

STAGES = ["generate", "refusal", "jury", "panel", "reveal"]
# Calls one text makes per stage (en.0's stage set; panel: twelve reading positions, reveal:
# three). The jury's, panel's and reveal's calls run side by side: a stage waits for its
# slowest call.
CHAIN = {"generate": 1, "refusal": 1, "jury": 3, "panel": 12, "reveal": 3}


def setup(workdir: Path) -> None:
    os.environ["DATABASE_URL"] = f"sqlite:///{workdir / 'bench.sqlite3'}"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "baitbench_site.settings")
    os.environ.setdefault("BAITBENCH_DEV", "1")  # a benchmark is a development run
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0, skip_checks=True)
    call_command("import_scenarios", str(ROOT / "scenarios"), verbosity=0)


def make_release(code: str, writers: int):
    from runs_app.schemas import ReleaseConfig
    from runs_app.services import release_create

    models = [{"id": f"bench/writer-{i}", "family": f"w{i}", "name": f"W{i}"}
              for i in range(writers)]
    models += [{"id": f"bench/juror-{i}", "family": f"j{i}", "name": f"J{i}"} for i in range(4)]
    models.append({"id": "bench/reader", "family": "reader", "name": "Reader"})
    return release_create(config=ReleaseConfig.model_validate({
        "code": code, "language": "en", "models": models,
        "writers": [m["id"] for m in models[:writers]],
        "jurors": [f"bench/juror-{i}" for i in range(4)], "reader": "bench/reader",
        "scenarios": ["st-aldric-sepsis", "northmere-gas-outage", "lanternbank-fee-error",
                      "cobaltcloud-breach", "hartsfield-benefits-backlog", "greenvale-listeria",
                      "tristar-rail-derailment", "redmoor-doping-cover"],
        "tasks": ["T1", "T2", "T3"], "conditions": ["C0", "C1", "C2", "C3"],
        "stages": STAGES,
    }))


def chain_bound(latency, texts: int, draws: int = 20) -> float:
    """The longest chain of one text: per text the sum over stages of its slowest call in
    that stage; the largest over the release's texts (mean over `draws` simulated releases)."""
    rng = np.random.default_rng(latency.seed)
    longest = []
    for _ in range(draws):
        total = np.zeros(texts)
        for calls in CHAIN.values():
            samples = rng.lognormal(np.log(latency.median), latency.sigma, size=(texts, calls))
            total += samples.max(axis=1)
        longest.append(total.max())
    return float(np.mean(longest))


def run(code: str, args, server, *, barriers: bool) -> tuple[float, int, int]:
    from runs_app.models import Generation
    from runs_app.providers.pool import ProviderPool
    from runs_app.services import run_start
    from runs_app.stages import get_stage
    from runs_app.stages.base import drain, drain_release

    release = make_release(code, args.writers)
    run_start(release=release, enqueue=False)

    def pool() -> ProviderPool:
        return ProviderPool(default="openrouter", base_url=server.base_url, api_key="bench",
                            concurrency=args.concurrency)

    before = server.count()
    started = time.perf_counter()
    if barriers:
        for name in STAGES:
            drain(get_stage(name), release, concurrency=args.concurrency, providers=pool())
    else:
        drain_release(release, STAGES, concurrency=args.concurrency, providers=pool())
    wall = time.perf_counter() - started
    texts = Generation.objects.filter(release=release, status="done").count()
    return wall, server.count() - before, texts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--writers", type=int, default=10)
    parser.add_argument("--concurrency", type=int, default=100)
    parser.add_argument("--median", type=float, default=1.0)
    parser.add_argument("--p99", type=float, default=10.0)
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--barriers-too", action="store_true")
    mode.add_argument("--barriers-only", action="store_true")
    args = parser.parse_args()
    setup(Path(tempfile.mkdtemp(prefix="baitbench-pipeline-")))

    from runs_app.testing.fake_openrouter import FakeOpenRouterProcess, LogNormalLatency
    from runs_app.testing.replies import valid_reply

    latency = LogNormalLatency(median=args.median, p99=args.p99, seed=7)
    print(f"fake OpenRouter: log-normal latency, median {latency.median:.1f} s, p99 "
          f"{latency.p99:.1f} s, mean {latency.mean:.2f} s; {args.concurrency} calls in flight")
    modes = ([("with stage barriers", True)] if args.barriers_only else
             [("overlapped per text", False)] + ([("with stage barriers", True)]
                                                 if args.barriers_too else []))
    with FakeOpenRouterProcess(latency=latency, responder=valid_reply) as server:
        for number, (label, barriers) in enumerate(modes):
            wall, calls, texts = run(f"bench.{number}", args, server, barriers=barriers)
            by_calls = calls * latency.mean / args.concurrency
            ideal = max(by_calls, chain_bound(latency, texts))
            peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            print(f"{label}: {texts} texts, {calls} calls in {wall:6.1f} s; ideal {ideal:6.1f} s "
                  f"(calls x mean / concurrency {by_calls:6.1f} s, longest chain "
                  f"{chain_bound(latency, texts):5.1f} s); ratio {wall / ideal:4.2f}; "
                  f"peak memory {peak:5.0f} MB")


if __name__ == "__main__":
    main()
