"""An operator runs a release from the browser: Debian's Chromium against a real server, with
a real worker (`qcluster`) draining the release through the fake OpenRouter server.

The site, the worker and the setup run as processes of their own on a database of their own
(as in `test_workers`), so the page is polled while the worker writes: the progress must
change on the page by itself, pausing must stop the calls, resuming must finish the run, and
no call may be lost or made twice.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest
from django.conf import settings

from runs_app.providers.models_list import ModelListing, listings_as_payload
from runs_app.testing.fake_openrouter import FakeOpenRouter
from runs_app.testing.replies import valid_reply
from runs_app.tests.releases import RELEASE, kill, repeated_calls, start
from tests.browser import ARTIFACTS, chromium_required
from tests.scratch import Database, free_port, manage

pytestmark = [pytest.mark.browser, pytest.mark.slow]

ROOT = Path(settings.BASE_DIR)
CODE = "browse.0"
TEXTS = 2 * 1 * 2 * 4  # writers x scenarios x tasks x conditions
LOOPBACK = {"127.0.0.1", "localhost", "::1"}
MODEL_IDS = ["acme/writer-a", "beta/writer-b", "gamma/judge", "delta/judge", "epsilon/judge"]
USER = """
from django.contrib.auth.models import Group, User
user = User.objects.create_user("olga", password="a long operator password", is_staff=True)
user.groups.add(Group.objects.get(name="operator"))
"""


@pytest.fixture
def site(tmp_path, scenarios_scratch):
    """A database with release browse.0 and an operator, the site on a loopback port, and one
    worker process, all pointed at a slow fake OpenRouter that also serves a models list."""
    chromium_required()
    database = Database(tmp_path, template=scenarios_scratch)  # migrated, scenarios imported
    releases = tmp_path / "releases"
    releases.mkdir()
    release = RELEASE.format(code=CODE, variants=1, tasks="[T1, T2]", conditions="[C0, C1, C2, C3]")
    wide = "scenarios: [greenvale-listeria, cobaltcloud-breach]"
    assert wide in release
    release = release.replace(wide, "scenarios: [greenvale-listeria]")
    (releases / f"{CODE}.yaml").write_text(release + "stages: [generate, refusal]\n")
    models = listings_as_payload([
        ModelListing(model_id, name=model_id, context_length=200_000,
                     max_completion_tokens=64_000, prompt_price=1e-6, completion_price=2e-6)
        for model_id in MODEL_IDS])
    port = free_port()
    processes: list[subprocess.Popen] = []
    with FakeOpenRouter(latency=0.5, responder=valid_reply, models=models) as server:
        env = os.environ | {
            "DATABASE_URL": database.url, "BAITBENCH_DEV": "1", "BAITBENCH_PROVIDER": "openrouter",
            "OPENROUTER_BASE_URL": server.base_url, "OPENROUTER_API_KEY": "test-key",
            "BAITBENCH_RELEASES_DIR": str(releases), "BAITBENCH_LEASE_SECONDS": "30",
            "BAITBENCH_Q_WORKERS": "1", "BAITBENCH_CONCURRENCY": "2",
            "BAITBENCH_DRAIN_WAIT": "2",
        }
        env.pop("REDIS_URL", None)
        manage("shell", "-c", USER, env=env)
        # Loads the release from its file and caches the models list, as an operator would.
        preflight = manage("preflight_release", CODE, env=env)
        assert "every check passed" in preflight.stdout
        processes.append(start("runserver", "--noreload", f"127.0.0.1:{port}", env=env))
        processes.append(start("qcluster", env=env))
        base = f"http://127.0.0.1:{port}"
        wait_for_server(base)
        try:
            yield base, server, database
        finally:
            for process in processes:
                kill(process)
    database.drop()


def wait_for_server(base: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{base}/admin/login/", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    pytest.fail(f"the site did not answer on {base}")


def settled_count(server: FakeOpenRouter, quiet: float = 1.5) -> int:
    """The server's call count once no call has come for `quiet` seconds (calls claimed just
    before the pause are still made and written)."""
    count, since = server.count(), time.monotonic()
    while time.monotonic() - since < quiet:
        time.sleep(0.1)
        if server.count() != count:
            count, since = server.count(), time.monotonic()
    return count


def cell(page, stage: str, field: str) -> str:
    return page.locator(f'tr[data-stage="{stage}"] [data-field="{field}"]').inner_text()


def wait_until(page, script: str, timeout: float = 90_000) -> None:
    page.wait_for_function(script, timeout=timeout)


def done_is(stage: str, test: str) -> str:
    """`test` on n, the stage's finished rows as the page shows them: scored, refused and
    unscored together (every finished row is one of the three)."""
    cells = " + ".join(
        f"Number(document.querySelector('tr[data-stage=\"{stage}\"] "
        f"[data-field=\"{field}\"]').textContent.replace(/,/g, ''))"
        for field in ("scored", "refused", "unscored"))
    return f"(() => {{ const n = {cells}; return {test}; }})()"


def test_an_operator_starts_watches_pauses_and_resumes_a_run_in_the_browser(site, chromium):
    base, server, database = site
    errors: list[str] = []
    hosts: set[str] = set()
    ARTIFACTS.mkdir(exist_ok=True)
    page = chromium(1280, 1000)
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on("request", lambda request: hosts.add(urlsplit(request.url).hostname or ""))

    page.goto(f"{base}/admin/login/?next=/runs/{CODE}/")
    page.fill("#id_username", "olga")
    page.fill("#id_password", "a long operator password")
    page.click("input[type=submit]")
    page.wait_for_url(f"{base}/runs/{CODE}/")
    assert page.locator("ul.checks li.fail").count() == 0
    assert cell(page, "generate", "state_label") == "Not started"
    page.screenshot(path=str(ARTIFACTS / "operate-before.png"), full_page=True)

    page.click("text=Start the chain")
    page.wait_for_url(f"{base}/runs/{CODE}/")
    assert "Started the chain of browse.0" in page.locator("ul.messages").inner_text()
    page.evaluate("window.notReloaded = true")
    # The worker writes; the page shows it without being reloaded.
    wait_until(page, done_is("generate", "n >= 2"))
    assert page.evaluate("window.notReloaded") is True
    assert int(page.locator("#run").get_attribute("data-polls")) >= 1
    assert cell(page, "generate", "state_label") == "Running"
    # Which workers are alive, from the cluster's heartbeat, kept beside the SQLite
    # database (on PostgreSQL without Redis no store is shared: the page says so).
    workers = page.locator('[data-field="workers-alive"]').inner_text()
    if database.postgres:
        assert "whether any worker is alive cannot be told" in workers, workers
    else:
        assert workers.startswith("Workers alive: 1 worker process(es) in 1 cluster(s): "), \
            workers
    page.screenshot(path=str(ARTIFACTS / "operate-running.png"), full_page=True)

    page.click("text=Pause all")
    page.wait_for_url(f"{base}/runs/{CODE}/")
    assert "Paused 2 stage(s)" in page.locator("ul.messages").inner_text()
    # Calls under way finish and are written; then nothing more is claimed.
    wait_until(page, "[...document.querySelectorAll('[data-field=\"claimed\"]')]"
                     ".every(node => node.textContent === '0')")
    calls_paused = settled_count(server)
    time.sleep(3)  # several polls, and time for a worker that would still claim
    assert server.count() == calls_paused
    done_paused = sum(int(cell(page, "generate", field))
                      for field in ("scored", "refused", "unscored"))
    assert done_paused < TEXTS and cell(page, "generate", "state_label") == "Paused"
    page.screenshot(path=str(ARTIFACTS / "operate-paused.png"), full_page=True)

    page.click("text=Resume all")
    page.wait_for_url(f"{base}/runs/{CODE}/")
    page.evaluate("window.notReloaded = true")
    wait_until(page, f"{done_is('generate', f'n === {TEXTS}')} && "
                     f"{done_is('refusal', f'n === {TEXTS}')}")
    assert page.evaluate("window.notReloaded") is True
    wait_until(page, "document.querySelector('[data-field=\"status_label\"]').textContent"
                     " === 'Scored'", timeout=30_000)
    assert cell(page, "refusal", "state_label") == "Done"
    page.screenshot(path=str(ARTIFACTS / "operate-finished.png"), full_page=True)

    # A cap under what was spent: the page says the run stopped there.
    page.fill("#id_budget_usd", "0.00")
    page.click("text=Set the cap")
    page.wait_for_url(f"{base}/runs/{CODE}/")
    notice = page.locator('[data-field="notice"]')
    assert notice.is_visible() and "Stopped at the budget cap" in notice.inner_text()
    page.screenshot(path=str(ARTIFACTS / "operate-budget-cap.png"), full_page=True)

    page.goto(f"{base}/runs/")
    assert CODE in page.locator("table.runs").inner_text()
    page.screenshot(path=str(ARTIFACTS / "operate-list.png"), full_page=True)
    chromium.finish()

    assert server.count() == 2 * TEXTS  # every text written and checked once: none lost
    assert repeated_calls(server) == 0  # none paid twice
    assert hosts <= LOOPBACK, hosts
    assert not errors, errors
    done = database.rows("SELECT COUNT(*) FROM runs_app_generation WHERE status = 'done'")
    assert done == [(TEXTS,)]
