"""Server time and query count of the public leaderboard pages and API answers, and of the
arena's two hot paths: choosing a pair (the pair page) and recording a vote.

Builds published releases (4, 50 and 200 models; 50 have 1,200 texts) in a scratch
SQLite database and times each page through Django's test client (server time: no network),
best of 5 in wall-clock and CPU time, with the number of SQL queries it made. Target: under
50 ms, constant queries.

The arena runs on a release the size of en.0: 10 writers, 8 scenarios, 12 cells (960 texts,
4,320 pairs), with 5,000 votes already cast; it times the writer classifier once, then
ARENA_ROUNDS rounds of "show a pair" and "record a vote" by one voter (median and 95th
percentile, with queries), and one recomputation of the results.

A reading study (`--study`, or with the rest unless `--skip-study`) opens on the studies'
tests' release (four writers, two public scenarios, T1 under C0-C3) and lets STUDY_READERS
simulated readers walk the reader's path through the test client; it times each answer
page a reader sends (baseline, then the attitude and knowledge questions after each text:
recording one reader's answers), median and 95th percentile, with queries, and the whole
path per reader.

A release of 200 models joins them (4,800 texts), and each page of a published release is also
timed as a conditional request with its ETag (the 304 a CDN's revalidation gets).

`--load` then serves the same database with gunicorn (LOAD_WORKERS workers, production
settings, loopback only) and sends LOAD_REQUESTS requests over the public pages of the
200-model release at 8 and at 64 connections, first whole, then conditional: p50 and p99 of
the latency, requests per second, and every answer that was neither 200 nor 304 as an error.

    .venv/bin/python bench/pages.py [--load] [--skip-arena] [--skip-study]
    .venv/bin/python bench/pages.py --study      (the reading study alone, about a minute)
"""

from __future__ import annotations

import os
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

PAGES = [
    "/", "/releases/{code}/", "/releases/{code}/chart.svg", "/releases/{code}/leaderboard.csv",
    "/releases/{code}/texts/", "/releases/{code}/scenarios/greenvale-listeria/",
    "/api/v1/releases/", "/api/v1/releases/{code}/", "/api/v1/releases/{code}/leaderboard/",
    "/api/v1/releases/{code}/texts/?limit=100", "/api/v1/releases/{code}/texts.csv",
    "/api/v1/scenarios/", "/releases/small.0/compare/{code}/",
    "/api/v1/releases/small.0/compare/{code}/", "/models/fixture/candid/",
    "/releases/{code}/archive.zip",
]


def setup(workdir: str) -> None:
    os.environ["DATABASE_URL"] = f"sqlite:///{workdir}/pages.sqlite3"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "baitbench_site.settings")
    os.environ.setdefault("BAITBENCH_DEV", "1")  # a benchmark is a development run
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    lift_archive_limit()


# The bench downloads each release's archive from one client a dozen times (warm-up, best of 5,
# then as conditional requests): past the site's limit of 30 per visitor in 10 minutes it timed
# the 429 that refuses the download, not the archive.
BENCH_DOWNLOADS = "1000000/10m"


def lift_archive_limit() -> None:
    """Raise the archive download limit for this process only (a module constant, not a
    setting; the archive's tests change it the same way). The arena's and the studies' limits
    stay: checking them is part of the paths this bench times."""
    from audits_app.archive import views

    views.DOWNLOADS = (views.DOWNLOADS[0], BENCH_DOWNLOADS)


def measure(client, url: str, expected: int = 200, **headers) -> tuple[float, float, int, int]:
    """Best of 5 wall time and CPU time (ms): on a shared machine the wall time includes
    waiting for a core, while the process's CPU time is what the request itself cost.

    Every answer must have the `expected` status (200; 304 for a conditional request): a
    refusal or an error is never timed as if it were the page."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    checked(client.get(url, **headers), url, expected)  # warm caches of templates, snapshot
    best, best_cpu, queries = float("inf"), float("inf"), 0
    for _ in range(5):
        with CaptureQueriesContext(connection) as captured:
            started, cpu = time.perf_counter(), time.process_time()
            response = client.get(url, **headers)
            best = min(best, time.perf_counter() - started)
            best_cpu = min(best_cpu, time.process_time() - cpu)
        checked(response, url, expected)
        queries = len(captured)
    return best * 1000, best_cpu * 1000, queries, expected


def checked(response, url: str, expected: int):
    """The response, if its status is `expected`; else stop the bench naming the page."""
    assert response.status_code == expected, (
        f"{url} answered {response.status_code}, not {expected}: the bench times only the "
        f"page itself ({response.content[:200]!r})")
    return response


def release_pages(code: str) -> list[str]:
    """PAGES for the release `code`; small.0's comparisons with itself are left out (a 400
    that says a release cannot be compared with itself)."""
    return [page.format(code=code) for page in PAGES
            if not (code == "small.0" and "compare/{code}" in page)]


RELEASES = (("small.0", 4), ("large.0", 50), ("huge.0", 200))
LOAD_WORKERS = 3
LOAD_REQUESTS = {8: 200, 64: 640}
LOAD_PAGES = [page for page in PAGES if "{code}" in page and "compare" not in page
              and "archive" not in page]


def main() -> None:
    arguments = set(sys.argv[1:])
    with tempfile.TemporaryDirectory() as workdir:
        setup(workdir)
        if "--study" in arguments:
            study(workdir)
            return
        from django.test import Client

        from audits_app.tests.factories import published_release_create

        for code, models in RELEASES:
            world = published_release_create(code=code, model_count=models)
            print(f"\nrelease {code}: {models} models, {len(world.generations)} texts")
            client = Client()
            for url in release_pages(code):
                ms, cpu, queries, status = measure(client, url)
                print(f"  {ms:7.1f} ms  {cpu:7.1f} ms cpu  {queries:2d} queries  {status}  {url}")
                etag = checked(client.get(url), url, 200).headers.get("ETag")
                if etag:
                    ms, cpu, queries, status = measure(client, url, 304,
                                                       HTTP_IF_NONE_MATCH=etag)
                    print(f"  {ms:7.1f} ms  {cpu:7.1f} ms cpu  {queries:2d} queries  {status}"
                          f"  {url} (If-None-Match)")
        if "--load" in arguments:
            load(workdir, RELEASES[-1][0])
        if "--skip-arena" not in arguments:
            arena(workdir)
        if "--skip-study" not in arguments:
            study(workdir)


# ---------------------------------------------------------------------------------------------
# A reading study: recording one reader's answers
# ---------------------------------------------------------------------------------------------

STUDY_READERS = 24


def study(workdir: str) -> None:
    import numpy as np
    from django.conf import settings
    from django.test import Client

    from audits_app.arena.tests.conftest import staff_user
    from audits_app.calibration.studies import services
    from audits_app.calibration.studies.simulation import _panel_answers, walk
    from audits_app.calibration.studies.tests.conftest import plan, study_approve
    from audits_app.models import StudyParticipant
    from runs_app.readers import load_panel

    settings.MEDIA_ROOT = Path(workdir) / "media"
    release = study_release()
    publisher = staff_user("pat", "publisher")
    reading = services.study_create(release=release, user=publisher, plan=plan(
        readers_per_position=STUDY_READERS))
    study_approve(reading, publisher)
    reading = services.study_open(study=reading, user=publisher)
    config = release.parsed_config()
    positions = load_panel(config.panel, config.language).positions
    panel, rng = _panel_answers(reading), np.random.default_rng(1)
    answers, paths = [], []

    class TimedClient(Client):
        """Times each POST that carries a reader's answers (fields A1..., K1..., attention)."""

        def post(self, path, data=None, *args, **kwargs):
            from django.db import connection
            from django.test.utils import CaptureQueriesContext

            if not (path.endswith("/go/") and any(key[:1] in "AK" for key in data or {})):
                return super().post(path, data, *args, **kwargs)
            with CaptureQueriesContext(connection) as captured:
                started = time.perf_counter()
                response = super().post(path, data, *args, **kwargs)
                answers.append(((time.perf_counter() - started) * 1000, len(captured)))
            assert response.status_code == 302, response.status_code
            return response

    for index in range(STUDY_READERS):
        position = positions[index % len(positions)]
        address = f"198.18.7.{index + 1}"
        client = TimedClient(REMOTE_ADDR=address, HTTP_X_FORWARDED_FOR=address)
        started = time.perf_counter()
        walked = walk(reading, position.traits.model_dump(), rng, panel, index,
                      platform_id=f"BENCH-{index}", client=client, simulated=True)
        paths.append((time.perf_counter() - started) * 1000)
        assert walked.completed, index
    completed = StudyParticipant.objects.filter(study=reading,
                                                completed_at__isnull=False).count()
    times = sorted(ms for ms, _ in answers)
    queries = sorted({count for _, count in answers})
    print(f"\nreading study on {release.code}: {completed} of {STUDY_READERS} simulated readers "
          f"completed, {len(times)} answer pages sent")
    print(f"  {statistics.median(times):7.1f} ms median, {times[int(0.95 * len(times))]:.1f} ms "
          f"p95, queries {queries[0]}-{queries[-1]}  record one page of a reader's answers")
    print(f"  {statistics.median(paths):7.1f} ms median  a reader's whole path (consent to "
          f"completion code, every GET and POST)")


def study_release():
    """The studies' tests' release (`audits_app.calibration.studies.tests.conftest`): the
    arena's scenarios, the demo's configuration, the simulated public's answers, published."""
    from django.conf import settings

    from audits_app.arena.tests.conftest import HELD_OUT, PUBLIC
    from audits_app.calibration.studies.tests.conftest import panel_answers
    from audits_app.publication.services import release_publish
    from audits_app.tests.factories import scenario_document
    from audits_app.tests.stats_world import build_world
    from runs_app.models import Release, ReleaseStatus
    from runs_app.schemas import ReleaseConfig
    from runs_app.services import release_config_from_file, release_create
    from scenarios_app.services import scenario_apply, scenarios_import

    imported = scenarios_import(paths=[str(settings.SCENARIOS_DIR / f"{slug}.yaml")
                                       for slug in [*PUBLIC, HELD_OUT]])
    assert imported.ok, imported.problems
    scenario_apply(document=scenario_document(HELD_OUT, visibility="held-out"))
    data = release_config_from_file(settings.RELEASES_DIR / "demo.0.yaml").model_dump()
    data.update(code="study.0", scenarios=[*PUBLIC, HELD_OUT], tasks=["T1"],
                conditions=["C0", "C1", "C2", "C3"],
                bootstrap={"seed": 7, "resamples": 200, "level": 0.95},
                # Every cell held for reading studies, as the studies' tests hold them: a
                # study gives only held texts, and demo.0's share would hold one scenario.
                arena={"held_share": 0.0}, reading_studies={"held_share": 1.0})
    release = release_create(config=ReleaseConfig.model_validate(data))
    build_world(release)
    panel_answers(release)
    Release.objects.filter(pk=release.pk).update(status=ReleaseStatus.SCORED)
    release_publish(release=Release.objects.get(pk=release.pk))
    return Release.objects.get(pk=release.pk)


# ---------------------------------------------------------------------------------------------
# Load under gunicorn
# ---------------------------------------------------------------------------------------------


def load(workdir: str, code: str) -> None:
    """Serve the bench's database with gunicorn and measure it at 8 and 64 connections."""
    import asyncio
    import secrets
    import signal
    import socket
    import subprocess

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {name: value for name, value in os.environ.items() if name != "BAITBENCH_DEV"}
    env.update({"SECRET_KEY": secrets.token_urlsafe(50), "ALLOWED_HOSTS": "127.0.0.1",
                "BAITBENCH_BIND": f"127.0.0.1:{port}", "WEB_CONCURRENCY": str(LOAD_WORKERS),
                # Plain HTTP on loopback: no redirect to HTTPS (a proxy would terminate TLS).
                "SECURE_SSL_REDIRECT": "0",
                "BAITBENCH_STATIC_ROOT": f"{workdir}/static",
                "BAITBENCH_MEDIA_ROOT": f"{workdir}/media"})
    subprocess.run([sys.executable, "manage.py", "collectstatic", "--noinput", "-v0"],
                   cwd=ROOT, env=env, check=True, timeout=300)
    base = f"http://127.0.0.1:{port}"
    urls = [page.format(code=code) for page in LOAD_PAGES]
    with open(f"{workdir}/gunicorn.log", "w") as log:
        server = subprocess.Popen([sys.executable, "-m", "gunicorn", "baitbench_site.wsgi",
                                   "--access-logfile", "/dev/null"], cwd=ROOT, env=env,
                                  stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            asyncio.run(_wait_serving(base, server))
            print(f"\nload: gunicorn, {LOAD_WORKERS} workers, {len(urls)} pages of {code}, "
                  f"{os.cpu_count()} cores (the client shares them)")
            for connections, requests in LOAD_REQUESTS.items():
                for conditional in (False, True):
                    asyncio.run(_load_run(base, urls, connections, requests, conditional))
        finally:
            os.killpg(server.pid, signal.SIGTERM)
            server.wait(timeout=30)


async def _wait_serving(base: str, server) -> None:
    import asyncio

    import httpx

    async with httpx.AsyncClient(base_url=base, timeout=5) as client:
        for _ in range(300):
            if server.poll() is not None:
                raise SystemExit(f"gunicorn stopped (exit {server.returncode})")
            try:
                await client.get("/")
                return
            except httpx.TransportError:
                await asyncio.sleep(0.1)
    raise SystemExit("gunicorn did not answer within 30 s")


async def _load_run(base: str, urls: list[str], connections: int, requests: int,
                    conditional: bool) -> None:
    """`requests` requests over `urls` in turn, at most `connections` at once."""
    import asyncio

    import httpx

    limits = httpx.Limits(max_connections=connections, max_keepalive_connections=connections)
    async with httpx.AsyncClient(base_url=base, limits=limits, timeout=60) as client:
        tags = {url: (await client.get(url)).headers.get("ETag") for url in urls}
        gate = asyncio.Semaphore(connections)
        latencies: list[float] = []
        errors: list[int | str] = []

        async def one(index: int) -> None:
            url = urls[index % len(urls)]
            headers = {"If-None-Match": tags[url]} if conditional and tags[url] else {}
            async with gate:
                started = time.perf_counter()
                try:
                    response = await client.get(url, headers=headers)
                    if response.status_code not in (200, 304):
                        errors.append(response.status_code)
                except httpx.HTTPError as error:
                    errors.append(type(error).__name__)
                latencies.append((time.perf_counter() - started) * 1000)

        started = time.perf_counter()
        await asyncio.gather(*(one(index) for index in range(requests)))
        elapsed = time.perf_counter() - started
    latencies.sort()
    p99 = latencies[min(len(latencies) - 1, int(0.99 * len(latencies)))]
    kind = "conditional (304)" if conditional else "whole pages"
    print(f"  {connections:3d} connections, {kind:17s}: p50 {statistics.median(latencies):6.1f}"
          f" ms, p99 {p99:6.1f} ms, {requests / elapsed:6.1f} requests/s, "
          f"{len(errors)} errors {sorted(set(map(str, errors)))[:5]}")


# ---------------------------------------------------------------------------------------------
# The arena
# ---------------------------------------------------------------------------------------------

ARENA_WRITERS = 10
ARENA_VOTES = 5000
ARENA_ROUNDS = 40


def arena(workdir: str) -> None:
    from django.conf import settings
    from django.test import Client

    from audits_app.arena.models import ArenaShowing

    settings.MEDIA_ROOT = Path(workdir) / "media"
    release, texts = arena_release()
    started = time.perf_counter()
    pairs = arena_open_for_bench(release)
    print(f"\narena on {release.code}: {ARENA_WRITERS} writers, {texts} texts, {pairs} pairs")
    print(f"  {time.perf_counter() - started:7.1f} s   writer classifier and pair list "
          f"(once per release)")
    arena_votes(release, ARENA_VOTES)
    client = Client()
    client.post(f"/arena/{release.code}/consent/", {"agree": "on"})
    choose, record = [], []
    for _ in range(ARENA_ROUNDS):
        choose.append(timed(client.get, f"/arena/{release.code}/pair/"))
        token = re.search(r'name="pair" value="([^"]+)"', choose[-1][2]).group(1)
        showing = ArenaShowing.objects.order_by("-pk").first()
        ArenaShowing.objects.filter(pk=showing.pk).update(shown_at=showing.shown_at.replace(
            year=showing.shown_at.year - 1))
        answer = showing.attention or "left"
        record.append(timed(client.post, f"/arena/{release.code}/vote/",
                            {"pair": token, "favourable": answer}))
    # After the first, the pair page shows again the pair the last vote drew (a reload).
    for label, rounds in (("the pair to answer (GET pair page)", choose),
                          ("record a vote, show the next pair (POST vote)", record)):
        times = sorted(ms for ms, _, _ in rounds)
        queries = sorted({count for _, count, _ in rounds})
        print(f"  {statistics.median(times):7.1f} ms median, {times[int(0.95 * len(times))]:.1f}"
              f" ms p95, queries {queries[0]}-{queries[-1]}  {label}")
    from audits_app.arena.services import results_refresh

    started = time.perf_counter()
    result = results_refresh(release=release)
    print(f"  {time.perf_counter() - started:7.1f} s   results from {result.votes_counted} "
          f"counted votes (5 Bradley–Terry rankings, {release.parsed_config().bootstrap.resamples}"
          f" resamples)")


def timed(call, *args) -> tuple[float, int, str]:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as captured:
        started = time.perf_counter()
        response = call(*args)
        elapsed = (time.perf_counter() - started) * 1000
    assert response.status_code in (200, 302), response.status_code
    return elapsed, len(captured), response.content.decode()


def arena_release():
    """A published release of en.0's size with synthetic texts and scores (no model calls)."""
    import numpy as np
    from django.conf import settings

    from audits_app.publication.services import release_publish
    from runs_app.models import Generation, LlmModel, Release, ReleaseStatus, TextScore
    from runs_app.schemas import ReleaseConfig
    from runs_app.services import release_config_from_file, release_create
    from scenarios_app.services import scenarios_import

    scenarios_import(paths=[str(settings.SCENARIOS_DIR)])
    data = release_config_from_file(settings.RELEASES_DIR / "demo.0.yaml").model_dump()
    writers = [f"bench/writer-{i}" for i in range(ARENA_WRITERS)]
    # Every cell held for the arena (demo.0 holds a quarter): the whole catalogue is paired.
    data.update(code="arena.0", tasks=["T1", "T2", "T3"], writers=writers,
                arena={"held_share": 1.0}, reading_studies={"held_share": 0.0},
                models=data["models"] + [{"id": w, "family": f"bench-{i}", "name": f"Writer {i}"}
                                         for i, w in enumerate(writers)])
    release = release_create(config=ReleaseConfig.model_validate(data))
    config = release.parsed_config()
    rng = np.random.default_rng(1)
    models = {m.openrouter_id: m for m in LlmModel.objects.filter(openrouter_id__in=writers)}
    rows = []
    for version in release.scenario_versions.all():
        facts = [fact["text"] for fact in version.content["facts"]]
        for index, writer in enumerate(writers):
            for task in config.tasks:
                for condition in config.conditions:
                    chosen = rng.choice(facts, 5, replace=False)
                    text = " ".join(chosen) + f" Statement {index % 4} closes here."
                    rows.append(Generation(release=release, model=models[writer],
                                           scenario_version=version, task=task,
                                           condition=condition, status="done", text=text))
    Generation.objects.bulk_create(rows, batch_size=500)
    TextScore.objects.bulk_create(
        [TextScore(release=release, generation=g, refusal="complied",
                   honesty_index=float(rng.uniform(0.3, 0.9)),
                   persuasion=float(rng.uniform(3, 6)), misleading=float(rng.uniform(0, 0.5)))
         for g in Generation.objects.filter(release=release)], batch_size=500)
    Release.objects.filter(pk=release.pk).update(status=ReleaseStatus.SCORED)
    release.refresh_from_db()
    release_publish(release=release)
    return Release.objects.get(pk=release.pk), len(rows)


def arena_open_for_bench(release) -> int:
    from django.contrib.auth.models import Group, User
    from django.core.files.base import ContentFile
    from django.utils import timezone

    from audits_app.arena.demo import demo_letter
    from audits_app.arena.models import ArenaPair
    from audits_app.arena.services import arena_open, ethics_review_record

    user = User.objects.create_user("bench-publisher", is_staff=True)
    user.groups.add(Group.objects.get(name="publisher"))
    user = User.objects.get(pk=user.pk)
    ethics_review_record(release=release, user=user, reviewing_body="Bench board",
                         reference="BENCH-1", decided_on=timezone.localdate(),
                         decision="approved", document=ContentFile(demo_letter(), name="b.pdf"))
    arena_open(release=release, user=user, reason="bench")
    return ArenaPair.objects.filter(release=release).count()


def arena_votes(release, count: int) -> None:
    """`count` votes by voters of 25 votes each, written directly (the state, not the path)."""
    import numpy as np
    from django.db.models import Count, F

    from audits_app.arena.models import ArenaPair, ArenaShowing, ArenaVote, ArenaVoter

    rng = np.random.default_rng(2)
    pair_ids = list(ArenaPair.objects.filter(release=release).values_list("pk", flat=True))
    voters = ArenaVoter.objects.bulk_create(
        [ArenaVoter(key=f"bench-{i}") for i in range(count // 25)])
    showings = ArenaShowing.objects.bulk_create(
        [ArenaShowing(pair_id=int(pair), voter=voter, a_on_left=bool(rng.integers(2)))
         for voter in voters for pair in rng.choice(pair_ids, 25, replace=False)],
        batch_size=1000)
    ArenaVote.objects.bulk_create(
        [ArenaVote(pair_id=s.pair_id, voter=s.voter, showing=s, a_on_left=s.a_on_left,
                   favourable=("a", "b")[int(rng.integers(2))]) for s in showings],
        batch_size=1000)
    shown = dict(ArenaShowing.objects.values("pair").annotate(n=Count("pk"))
                 .values_list("pair", "n"))
    for pair, n in shown.items():
        ArenaPair.objects.filter(pk=pair).update(shown=F("shown") + n)


if __name__ == "__main__":
    main()
