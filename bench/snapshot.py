"""CPU time of reading a published snapshot as the typed `ReleaseSnapshot` (what every page,
CSV, API answer and archive reads), at 200 models.

Builds the 200-model release of bench/pages.py (4,800 texts; 13 boards of 19,900 pairs each,
about 37 MB of JSON) in a scratch SQLite database, then times, in CPU time of this process:

- `snapshot_load` of the stored snapshot as Python data (a draft's, an imported archive's),
  best of 3;
- a publication's first `load_snapshot` (read from the database and validated: what a
  process pays once per snapshot), best of 3 with the process's cache emptied each time;
- the API leaderboard's first answer (snapshot cache and page caches emptied), best of 3;
  the same with the typed snapshot already kept; and a warm answer, best of 5.

From a fresh clone, after `make install` (or `python -m venv .venv && .venv/bin/pip install
-e '.[dev]'`, what it runs: the dependencies are declared in pyproject.toml):

    .venv/bin/python bench/snapshot.py              (about two minutes, most of it the world)
    .venv/bin/python bench/snapshot.py --profile    (adds cProfile's top 15 of each first)
"""

from __future__ import annotations

import cProfile
import io
import pstats
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from pages import setup  # noqa: E402  (bench/pages.py: scratch database, settings)

CODE = "huge.0"
MODELS = 200
LEADERBOARD = f"/api/v1/releases/{CODE}/leaderboard/"


def cpu_ms(call, repeats: int, before=None) -> float:
    """Best CPU time of `repeats` calls, in ms; `before` runs untimed ahead of each."""
    best = float("inf")
    for _ in range(repeats):
        if before is not None:
            before()
        started = time.process_time()
        call()
        best = min(best, time.process_time() - started)
    return best * 1000


def caches_empty(*, keep_snapshot: bool = False) -> None:
    """What a fresh process has kept: nothing (as the test suite's conftest empties them);
    with `keep_snapshot`, the typed snapshot only (an answer built for the first time in a
    process that has served another page of the release)."""
    from django.core.cache import cache

    from audits_app import http_cache
    from audits_app.pages import viewer

    if not keep_snapshot:
        with viewer._snapshots_lock:
            viewer._snapshots.clear()
    viewer.forget_release_list()
    http_cache.forget_rendered()
    cache.clear()


def main() -> None:
    with tempfile.TemporaryDirectory() as workdir:
        setup(workdir)
        from django.test import Client

        from audits_app.models import Publication
        from audits_app.pages.viewer import load_snapshot, publication_get
        from audits_app.publication.snapshot_model import snapshot_load
        from audits_app.tests.factories import published_release_create

        published_release_create(code=CODE, model_count=MODELS)
        stored = Publication.objects.get(release__code=CODE).snapshot
        pairs = sum(len(board.get("pairs", [])) for board in stored["leaderboards"].values())
        print(f"release {CODE}: {MODELS} models, {len(stored['texts'])} texts, "
              f"{pairs} pairs")
        print(f"  {cpu_ms(lambda: snapshot_load(stored), 3):7.0f} ms cpu  "
              f"snapshot_load of the stored data")
        print(f"  {cpu_ms(lambda: load_snapshot(publication_get(CODE)), 3, caches_empty):7.0f}"
              f" ms cpu  first load_snapshot of the publication (read and validated)")
        client = Client()

        def answer() -> None:
            assert client.get(LEADERBOARD).status_code == 200

        print(f"  {cpu_ms(answer, 3, caches_empty):7.0f} ms cpu  first {LEADERBOARD}")
        print(f"  {cpu_ms(answer, 3, lambda: caches_empty(keep_snapshot=True)):7.0f} ms cpu  "
              f"first {LEADERBOARD}, the snapshot already read")
        print(f"  {cpu_ms(answer, 5):7.0f} ms cpu  warm {LEADERBOARD}")
        if "--profile" in sys.argv[1:]:
            caches_empty()
            for label, call in (("first load_snapshot", lambda: load_snapshot(
                    publication_get(CODE))), (f"first {LEADERBOARD}", answer)):
                caches_empty()
                profile = cProfile.Profile(time.process_time)
                profile.runcall(call)
                out = io.StringIO()
                pstats.Stats(profile, stream=out).sort_stats("tottime").print_stats(15)
                print(f"\n{label}:{out.getvalue()}")


if __name__ == "__main__":
    main()
