"""Generation throughput against a fake OpenRouter server with 500 ms latency.

2,000 cells at concurrency 50 through the real generation stage (claims, httpx client,
writes to a SQLite file). Prints the wall time of the drain, the ideal
(cells x latency / concurrency), their ratio, and the peak memory of this process (the
fake server runs in a child process so its memory is not counted).

    .venv/bin/python bench/throughput.py [--cells-per-writer-variant ...]
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

LATENCY = 0.5
CONCURRENCY = 50


def setup_django(workdir: Path) -> None:
    os.environ["DATABASE_URL"] = f"sqlite:///{workdir / 'bench.sqlite3'}"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "baitbench_site.settings")
    os.environ.setdefault("BAITBENCH_DEV", "1")  # a benchmark is a development run
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0, skip_checks=True)
    call_command("import_scenarios", str(ROOT / "scenarios"), verbosity=0)


def make_release(writers: int, variants: int):
    from runs_app.schemas import ReleaseConfig
    from runs_app.services import release_create, release_freeze

    models = [{"id": f"bench/writer-{i}", "family": f"f{i}", "name": f"W{i}"}
              for i in range(writers)]
    models += [{"id": f"judge/j{i}", "family": f"j{i}", "name": f"J{i}"} for i in range(3)]
    config = ReleaseConfig.model_validate({
        "code": "bench.0", "language": "en", "models": models,
        "writers": [m["id"] for m in models[:writers]],
        "jurors": ["judge/j0", "judge/j1", "judge/j2"], "reader": "judge/j0",
        "journalist": "judge/j0",
        "scenarios": ["st-aldric-sepsis", "northmere-gas-outage", "lanternbank-fee-error",
                      "cobaltcloud-breach", "greenvale-listeria"],
        "tasks": ["T1", "T2"], "conditions": ["C0", "C1", "C2", "C3"], "variants": variants,
    })
    return release_freeze(release=release_create(config=config))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--writers", type=int, default=10)
    parser.add_argument("--variants", type=int, default=5)
    args = parser.parse_args()

    from runs_app.testing.fake_openrouter import FakeOpenRouterProcess

    # The server runs in a child process, so its memory and CPU are not this process's.
    with FakeOpenRouterProcess(latency=LATENCY) as server, \
            tempfile.TemporaryDirectory() as workdir:
        base_url = server.base_url
        setup_django(Path(workdir))
        from runs_app.models import Generation
        from runs_app.providers.pool import ProviderPool
        from runs_app.stages import get_stage
        from runs_app.stages.base import drain

        release = make_release(args.writers, args.variants)
        stage = get_stage("generate")
        cells = stage.plan(release)
        pool = ProviderPool(default="openrouter", base_url=base_url, api_key="bench",
                            concurrency=CONCURRENCY)
        started = time.monotonic()
        report = drain(stage, release, concurrency=CONCURRENCY, providers=pool)
        wall = time.monotonic() - started
        done = Generation.objects.filter(release=release, status="done").count()
        calls = server.count()

    ideal = cells * LATENCY / CONCURRENCY
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"cells: {cells}, finished: {report.finished}, done rows: {done}, server calls: {calls}")
    print(f"latency {LATENCY * 1000:.0f} ms, concurrency {CONCURRENCY}")
    print(f"wall: {wall:.2f} s, ideal: {ideal:.2f} s, ratio: {wall / ideal:.3f}")
    print(f"peak memory (this process, max RSS): {peak_mb:.0f} MB")


if __name__ == "__main__":
    main()
