"""End to end: scenario files -> run -> publish -> pages and API, then the world moves on and
not one byte of a published page changes (DESIGN section 8: public pages read only the frozen
snapshot)."""

from __future__ import annotations

import hashlib
import html
import io
import json
import re
from collections import deque
from pathlib import Path
from urllib.parse import urljoin, urlsplit

import pytest
import yaml
from django.conf import settings
from django.core.management import call_command
from django.db import transaction
from django.test import Client

from audits_app.publication.services import release_publish
from audits_app.spotchecks.demo import demo_spotchecks
from baitbench_site import yaml_files
from runs_app.models import ImmutableError, LlmModel, Release
from runs_app.services import release_get_or_load
from scenarios_app.models import Scenario
from tests.world import user_create

pytestmark = pytest.mark.django_db

SEEDS = ["/", "/api/v1/releases/", "/api/v1/scenarios/", "/api/v1/scenarios/?limit=1",
         "/api/v1/schema/"]
# Not pages of a release: staff screens, static files, and the API's interactive docs (a
# generic page that carries a fresh CSRF token on every request).
NOT_PUBLIC = ("/admin/", "/review/", "/static/", "/api/v1/docs/")
LINK = re.compile(r'(?:href|src)="([^"]+)"')
EDITED_SLUG = "greenvale-listeria"


def local_path(link: str) -> str | None:
    parts = urlsplit(html.unescape(link))
    if parts.netloc not in ("", "testserver") or not parts.path.startswith("/"):
        return None
    path = parts.path + (f"?{parts.query}" if parts.query else "")
    if path.startswith(NOT_PUBLIC) or path.rstrip("/").endswith("/publish"):
        return None
    return path


def json_links(value) -> list[str]:
    if isinstance(value, dict):
        return [link for item in value.values() for link in json_links(item)]
    if isinstance(value, list):
        return [link for item in value for link in json_links(item)]
    return [value] if isinstance(value, str) and value.startswith("http://testserver/") else []


def api_pages(body: dict) -> list[str]:
    """The API's per-release answers, for every release its list names."""
    pages = []
    for release in body.get("results") or []:
        base = f"/api/v1/releases/{release['code']}/"
        pages += [base, f"{base}leaderboard/", f"{base}texts/", f"{base}texts/?limit=5",
                  f"/api/v1/releases/{release['code']}/texts.csv"]
    return pages


def crawl() -> dict[str, str]:
    """Every anonymous page and API answer reachable from the seeds: path -> sha256 of the
    status, content type and body."""
    client, seen, queue = Client(), {}, deque(SEEDS)
    while queue:
        path = queue.popleft()
        if path in seen:
            continue
        response = client.get(path)
        body = response.content
        seen[path] = hashlib.sha256(
            f"{response.status_code} {response['Content-Type']}\n".encode() + body).hexdigest()
        links: list[str] = []
        if response["Content-Type"].startswith("text/html"):
            links = LINK.findall(body.decode())
        elif response["Content-Type"].startswith("application/json"):
            data = json.loads(body)
            links = json_links(data) + (api_pages(data) if path == "/api/v1/releases/" else [])
        queue.extend(filter(None, (local_path(link) for link in links)))
    return seen


@pytest.fixture
def published(small_demo_release):
    publisher = user_create("pat", "publisher")
    call_command("run_release", small_demo_release.code, sync=True, stdout=io.StringIO())
    release = Release.objects.get(pk=small_demo_release.pk)
    assert demo_spotchecks(release=release) > 0
    release_publish(release=release, user=publisher)
    return Release.objects.get(pk=release.pk)


def renamed_release_file(folder: Path, release: Release) -> None:
    """The release's own configuration as a new release whose every model is renamed."""
    config = yaml_files.safe_load((settings.RELEASES_DIR / "demo.0.yaml").read_text())
    config.update(code="renamed.0", scenarios=[entry.split("@")[0] for entry in
                                               release.config["scenarios"]],
                  tasks=release.config["tasks"], conditions=release.config["conditions"])
    for model in config["models"]:
        model["name"] = f"Renamed {model['name']}"
    (folder / "renamed.0.yaml").write_text(yaml.safe_dump(config, sort_keys=False))


def changed_scenario_file(folder: Path) -> Path:
    raw = yaml_files.safe_load((settings.SCENARIOS_DIR / f"{EDITED_SLUG}.yaml").read_text())
    raw["title"] = "Greenvale, a changed title"
    raw["organisation"]["name"] = "Greenvale Renamed Foods"
    raw["facts"][0]["text"] = "A changed first fact."
    path = folder / f"{EDITED_SLUG}.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False, allow_unicode=True))
    return path


def test_no_byte_of_a_published_release_changes_when_the_world_moves_on(published, tmp_path):
    before = crawl()
    code = published.code
    texts = published.publication.snapshot["texts"]
    assert {f"/releases/{code}/texts/{text['id']}/" for text in texts} <= set(before)
    assert f"/api/v1/releases/{code}/texts/?limit=5&offset=5" in before
    juror = LlmModel.objects.get(openrouter_id="fixture/juror-a")
    assert juror.display_name in json.dumps(published.publication.snapshot["jurors"])

    # 1-2. Renaming a model the release names is refused by the database, whether a new
    # release file or an operator in the admin tries it: the names it published stay its own.
    renamed_release_file(tmp_path, published)
    with pytest.raises(ImmutableError), transaction.atomic():
        release_get_or_load(code="renamed.0", releases_dir=tmp_path)
    operator = Client(raise_request_exception=False)
    operator.force_login(user_create("olga", "operator"))
    for model_id, name in (("fixture/juror-a", "Juror A, renamed"),
                           ("fixture/spinner", "Spinner, renamed")):
        model = LlmModel.objects.get(openrouter_id=model_id)
        operator.post(f"/admin/runs_app/llmmodel/{model.pk}/change/", {
            "family": f"{model.family}-renamed", "display_name": name,
            "can_write": "on" if model.can_write else "",
            "can_judge": "on" if model.can_judge else "",
            "can_read": "on" if model.can_read else ""})
        assert LlmModel.objects.get(pk=model.pk).display_name == model.display_name
    # 3. A changed version of a scenario the release used is imported.
    out = io.StringIO()
    call_command("import_scenarios", str(changed_scenario_file(tmp_path)), stdout=out)
    assert "1 updated" in out.getvalue()

    assert LlmModel.objects.get(openrouter_id="fixture/juror-a").display_name == (
        juror.display_name)
    scenario = Scenario.objects.select_related("current_version").get(slug=EDITED_SLUG)
    assert scenario.title == "Greenvale, a changed title"
    assert scenario.current_version.content_hash not in json.dumps(published.config)

    after = crawl()
    print(f"\n{len(before)} anonymous pages and API answers hashed")
    assert after.keys() == before.keys()
    changed = sorted(path for path in before if before[path] != after[path])
    assert changed == []


FRAGMENT_LINK = re.compile(r'href="([^"]*#[^"]+)"')
ELEMENT_ID = re.compile(r'\sid="([^"]+)"')


def test_every_fragment_link_on_the_public_pages_reaches_an_id_on_its_page(published):
    """The front page's overview linked #link-honesty, #spin, … which only the release page
    has: every `…#name` link of every page anyone can open must name an id of the page it
    leads to (the same page when it names none)."""
    client, pages, queue = Client(), {}, deque(["/"])

    def page(path: str) -> str | None:
        if path not in pages:
            response = client.get(path)
            pages[path] = (response.content.decode() if response.status_code == 200
                           and response["Content-Type"].startswith("text/html") else None)
            if pages[path] is not None:
                queue.extend(filter(None, (local_path(urljoin(path, html.unescape(link)))
                                           for link in LINK.findall(pages[path]))))
        return pages[path]

    while queue:
        page(queue.popleft())
    broken, checked = [], 0
    for path, body in list(pages.items()):
        for link in FRAGMENT_LINK.findall(body or ""):
            parts = urlsplit(urljoin(path, html.unescape(link)))
            if parts.netloc not in ("", "testserver"):
                continue
            target = parts.path + (f"?{parts.query}" if parts.query else "")
            if local_path(target) is None:
                continue  # a staff page or a file, not a public page
            found = page(target)
            checked += 1
            if found is not None and parts.fragment not in ELEMENT_ID.findall(found):
                broken.append(f"{path}: {link}")
    assert checked and not broken, sorted({re.sub(r"\d+", "N", line) for line in broken})


def test_every_public_page_answers_head_as_get_without_a_body(published):
    """HEAD (a link checker's, a cache's) answered 405 on pages GET answered 200: every page
    and API answer the crawl reaches, and the arena's index (linked only while one is open),
    answers HEAD with GET's status and type and no body."""
    client = Client()
    paths = [*crawl(), "/arena/"]
    assert len(paths) > 50
    wrong = []
    for path in paths:
        got, head = client.get(path), client.head(path)
        if (head.status_code, head.get("Content-Type"), head.content) != (
                got.status_code, got.get("Content-Type"), b""):
            wrong.append((path, got.status_code, head.status_code))
    assert wrong == []
