"""What the immutability triggers cost the pipeline's writes (baitbench_site.immutability).

In a scratch database (SQLite by default; DATABASE_URL=postgres://... for PostgreSQL, which
creates and drops a database named baitbench_bench_guards), an unpublished release gets
5,000 generations and 20,000 claims; then the writes a drain makes are timed with the guards
installed and with them dropped, best of 3: a bulk insert of the claims, a status update of
every generation (the claim of a batch), and row-by-row updates of 1,000 generations (the
write of each result).

    .venv/bin/python bench/guards.py
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

TEXTS, CLAIMS_PER_TEXT, ONE_BY_ONE = 5_000, 4, 1_000


def setup(workdir: str) -> None:
    url = os.environ.get("DATABASE_URL", "")
    if url.startswith("postgres"):
        os.environ["DATABASE_URL"] = url.rsplit("/", 1)[0] + "/baitbench_bench_guards"
    else:
        os.environ["DATABASE_URL"] = f"sqlite:///{workdir}/guards.sqlite3"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "baitbench_site.settings")
    os.environ.setdefault("BAITBENCH_DEV", "1")  # a benchmark is a development run
    import django

    django.setup()
    from django.db import connection

    if connection.vendor == "postgresql":
        _recreate_pg_database(connection)
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def _recreate_pg_database(connection, *, create: bool = True) -> None:
    import psycopg

    settings = connection.settings_dict
    admin = psycopg.connect(host=settings["HOST"], port=settings["PORT"] or 5432,
                            user=settings["USER"], password=settings["PASSWORD"],
                            dbname="postgres", autocommit=True)
    admin.execute(f'DROP DATABASE IF EXISTS "{settings["NAME"]}"')
    if create:
        admin.execute(f'CREATE DATABASE "{settings["NAME"]}"')
    admin.close()


def build():
    import yaml
    from django.conf import settings

    from runs_app.models import Claim, Generation, JurorVerdict, LlmModel, Release
    from scenarios_app.schemas import ScenarioFile
    from scenarios_app.services import scenario_apply

    raw = yaml.safe_load((settings.SCENARIOS_DIR / "greenvale-listeria.yaml").read_text())
    scenario, _ = scenario_apply(document=ScenarioFile.model_validate(raw))
    version = scenario.current_version
    writer = LlmModel.objects.create(openrouter_id="bench/writer", family="w", display_name="W")
    juror = LlmModel.objects.create(openrouter_id="bench/juror", family="j", display_name="J")
    release = Release.objects.create(code="bench.0", language="en", config={},
                                     config_hash="0" * 64)
    Generation.objects.bulk_create(
        Generation(release=release, model=writer, scenario_version=version, task="T1",
                   condition="C0", variant=index, text="text") for index in range(TEXTS))
    JurorVerdict.objects.bulk_create(
        JurorVerdict(release=release, generation=generation, juror=juror, seat=0)
        for generation in Generation.objects.filter(release=release))
    verdicts = list(JurorVerdict.objects.filter(release=release).values_list("pk", flat=True))
    return release, verdicts, Claim, Generation


def timed(work, repeats: int = 3) -> float:
    from django.db import transaction

    best = float("inf")
    for _ in range(repeats):
        with transaction.atomic():
            started = time.perf_counter()
            work()
            best = min(best, time.perf_counter() - started)
            transaction.set_rollback(True)
    return best * 1000


def main() -> None:
    with tempfile.TemporaryDirectory() as workdir:
        setup(workdir)
        from django.db import connection

        from baitbench_site.immutability import guards_drop, guards_install

        release, verdicts, claim_model, generation_model = build()
        ids = list(generation_model.objects.filter(release=release)
                   .values_list("pk", flat=True)[:ONE_BY_ONE])
        work = {
            f"bulk insert of {len(verdicts) * CLAIMS_PER_TEXT:,} claims":
                lambda: claim_model.objects.bulk_create(
                    claim_model(verdict_id=pk, position=p, quote="q", label="supported")
                    for pk in verdicts for p in range(CLAIMS_PER_TEXT)),
            f"one UPDATE of {TEXTS:,} generations":
                lambda: generation_model.objects.filter(release=release).update(
                    status="claimed"),
            f"{ONE_BY_ONE:,} single-row UPDATEs":
                lambda: [generation_model.objects.filter(pk=pk).update(status="done")
                         for pk in ids],
        }
        print(f"database: {connection.vendor}")
        print(f"{'write':<36} {'guarded ms':>11} {'unguarded ms':>13} {'cost':>7}")
        for name, call in work.items():
            guarded = timed(call)
            guards_drop(connection)
            unguarded = timed(call)
            guards_install(connection)
            print(f"{name:<36} {guarded:>11.1f} {unguarded:>13.1f} "
                  f"{guarded / unguarded - 1:>+7.0%}")
        if connection.vendor == "postgresql":
            connection.close()
            _recreate_pg_database(connection, create=False)


if __name__ == "__main__":
    main()
