"""The admin does what baitbench_site.role_matrix says, for every role, page and action.

Each case logs in as one role and drives one admin page through every action it has (list,
view, history, add, change, delete, bulk delete and the page's own views and bulk actions),
on objects of every kind the rules distinguish: published and not, the viewer's own
spot-check and another's. What happened is compared with the matrix; every mismatch is
listed. Deletions run in a savepoint that is rolled back, so one case tries them all.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from pathlib import Path

import pytest
from django.contrib import admin
from django.contrib.auth.models import Group
from django.db import models, transaction
from django.test import Client
from django.urls import reverse
from django_q.models import Schedule

from baitbench_site.role_matrix import OWN, PAGES, ROLES, UNPUBLISHED, Page, matrix_markdown
from runs_app.models import LlmModel, Release
from scenarios_app.models import Condition, Task
from tests.world import prompt_texts_seed, release_rows_create, scenario_version, user_create

pytestmark = pytest.mark.django_db

USERNAMES = {"curator": "cora", "operator": "olga", "auditor": "ann", "publisher": "pat",
             "superuser": "root"}
PAGE_ACTIONS = ("list", "add", "upload", "download_files", "retry failed work", "retry_failed")


@dataclass(frozen=True)
class Target:
    """An object a page's actions are tried on, with what the rules look at."""

    obj: models.Model
    published: bool = False
    owner: str | None = None

    def __str__(self) -> str:
        state = "published" if self.published else "unpublished"
        return f"{type(self.obj).__name__} {self.obj.pk} ({state}, owner {self.owner})"


@pytest.fixture(scope="module")
def kept_role_world(request, django_db_setup, django_db_blocker):
    """The world below, built once for the module's tests (tests/kept.py): a case's
    deletions and edits are rolled back before the next case."""
    from tests.kept import world_kept

    yield from world_kept(request, django_db_blocker, world_create)


@pytest.fixture
def world(kept_role_world, db) -> dict[str, list[Target]]:
    return copy.deepcopy(kept_role_world)


def world_create() -> dict[str, list[Target]]:
    prompt_texts_seed()
    ann, bob = user_create("ann", "auditor"), user_create("bob", "auditor")
    for role in ("curator", "operator", "publisher"):
        user_create(USERNAMES[role], role)
    user_create("root", None, superuser=True)
    version = scenario_version()
    pub = release_rows_create(code="pub.0", version=version, ann=ann, bob=bob, publish=True)
    draft = release_rows_create(code="draft.0", version=version, ann=ann, bob=bob, publish=False)
    empty = Release.objects.create(code="empty.0", language="en", config={},
                                   config_hash="0" * 64)

    def evidence(table: str) -> list[Target]:
        return [Target(pub.rows[table], published=True), Target(draft.rows[table])]

    return {
        "scenarios_app.scenario": [Target(version.scenario)],
        "scenarios_app.scenarioversion": [Target(version)],
        # T3: no release of the world pins it (a pinned version is never changed).
        "scenarios_app.task": [Target(Task.objects.get(language="en", code="T3", version=1))],
        "scenarios_app.condition": [Target(Condition.objects.get(language="en", code="C1",
                                                                 version=1))],
        "runs_app.llmmodel": [Target(LlmModel.objects.create(
            openrouter_id="fixture/unused", family="unused", display_name="Unused"))],
        "runs_app.release": [Target(pub.release, published=True), Target(empty)],
        "runs_app.generation": [Target(pub.open_text, published=True), Target(draft.open_text)],
        "audits_app.spotcheckbatch": evidence("audits_app_spotcheckbatch"),
        "audits_app.spotcheck": [
            Target(draft.checks["ann-done"], owner="ann"),
            Target(draft.checks["ann-pending"], owner="ann"),
            Target(draft.checks["bob-done"], owner="bob"),
            Target(draft.checks["out-of-band"]),
            Target(pub.checks["ann-done"], published=True, owner="ann"),
        ],
        "audits_app.outofbandaudit": evidence("audits_app_outofbandaudit"),
        "audits_app.humanreaderresult": evidence("audits_app_humanreaderresult"),
        "auth.user": [Target(bob)],
        "auth.group": [Target(Group.objects.get(name="auditor"))],
        "django_q.schedule": [Target(Schedule.objects.create(
            name="stalled work", func="runs_app.tasks.reenqueue_stalled"))],
    }


def expected(page: Page, action: str, role: str, target: Target | None) -> bool:
    scope = page.allowed(action).get(role)
    if scope is None:
        return False
    if target is not None and scope == OWN:
        return target.owner == USERNAMES[role]
    if target is not None and scope == UNPUBLISHED:
        return not target.published
    return True


def url(page: Page, view: str, *args) -> str:
    return reverse(f"admin:{page.model.replace('.', '_')}_{view}", args=args)


def action_names(client: Client, page: Page) -> set[str]:
    response = client.get(url(page, "changelist"))
    if response.status_code != 200 or not response.context.get("action_form"):
        return set()
    return {value for value, _ in response.context["action_form"].fields["action"].choices}


def still_there(target: Target) -> bool:
    return type(target.obj).objects.filter(pk=target.obj.pk).exists()


def rolled_back(attempt):
    """Run a request that may delete, note whether the object survived, then undo it."""
    with transaction.atomic():
        result = attempt()
        transaction.set_rollback(True)
    return result


def shown(response) -> bool:
    if response.status_code == 200:
        return True
    assert response.status_code in (302, 403, 404), response.status_code
    return False


def page_action(client: Client, page: Page, action: str) -> bool:
    """Whether the page-level action (no object) is open to this client."""
    if action == "list":
        return shown(client.get(url(page, "changelist")))
    if action == "add":
        response = client.get(url(page, "add"))
        return shown(response) and 'name="_save"' in response.content.decode()
    if action == "upload":
        return shown(client.get(url(page, "upload")))
    names = action_names(client, page)
    if action == "retry failed work":
        return any(name.startswith("retry_failed_") for name in names)
    return action in names


def object_action(client: Client, page: Page, action: str, target: Target) -> bool:
    """Whether the object action on `target` is open to this client (tried for real)."""
    pk = target.obj.pk
    if action in ("view", "history", "preview", "diff"):
        view = {"view": "change"}.get(action, action)
        return shown(client.get(url(page, view, pk)))
    if action == "change":
        response = client.get(url(page, "change", pk))
        if shown(response) and 'name="_save"' in response.content.decode():
            return True
        assert client.post(url(page, "change", pk), {}).status_code in (302, 403)
        return False
    if action == "delete":
        return rolled_back(lambda: (client.post(url(page, "delete", pk), {"post": "yes"}),
                                    not still_there(target))[1])
    if action == "bulk delete":
        return rolled_back(lambda: (client.post(url(page, "changelist"), {
            "action": "delete_selected", "_selected_action": [pk], "post": "yes"}),
            not still_there(target))[1])
    if action == "download_files":
        response = client.post(url(page, "changelist"), {
            "action": "download_files", "_selected_action": [pk]})
        return "attachment" in response.get("Content-Disposition", "")
    raise AssertionError(f"no way to try {action!r}")


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.model)
def test_the_admin_follows_the_role_matrix(world, role, page):
    if page.third_party and role == "superuser":
        pytest.skip("what a superuser may do on auth and django-q2 pages is theirs to define")
    client = Client()
    client.force_login(type(world["auth.user"][0].obj).objects.get(username=USERNAMES[role]))
    mismatches = []
    for action in page.actions:
        if action in PAGE_ACTIONS:
            cases = [None]
        else:
            cases = world.get(page.model, [])
        for target in cases:
            if target is None:
                got = page_action(client, page, action)
            else:
                got = object_action(client, page, action, target)
            want = expected(page, action, role, target)
            if got != want:
                verdict = "did" if got else "refused"
                mismatches.append(f"{action} on {target or 'the page'}: matrix says "
                                  f"{'yes' if want else 'no'}, the admin {verdict}")
    assert mismatches == []


def test_every_admin_page_is_in_the_matrix():
    registered = {model._meta.label_lower for model in admin.site._registry}
    assert registered == {page.model for page in PAGES}


def test_the_readme_shows_the_matrix():
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    assert matrix_markdown() in readme


# --- the cases the issue found, one by one ----------------------------------------------------


def auditor_client(world) -> Client:
    client = Client()
    client.force_login(type(world["auth.user"][0].obj).objects.get(username="ann"))
    return client


def test_an_auditor_cannot_bulk_delete_a_published_batch_done_checks_or_audits(world):
    client = auditor_client(world)
    for model, target in (("spotcheckbatch", world["audits_app.spotcheckbatch"][0]),
                          ("spotcheck", world["audits_app.spotcheck"][4]),
                          ("outofbandaudit", world["audits_app.outofbandaudit"][0]),
                          ("spotcheckbatch", world["audits_app.spotcheckbatch"][1])):
        response = client.post(f"/admin/audits_app/{model}/", {
            "action": "delete_selected", "_selected_action": [target.obj.pk], "post": "yes"})
        assert response.status_code in (200, 302, 403)
        assert still_there(target), target


def test_an_auditor_neither_opens_nor_edits_another_auditors_check(world):
    client = auditor_client(world)
    bobs = world["audits_app.spotcheck"][2].obj
    url_ = f"/admin/audits_app/spotcheck/{bobs.pk}/change/"
    assert client.get(url_).status_code == 302  # as for a check that does not exist
    client.post(url_, {"note": "edited by ann", "status": "assigned"})
    bobs.refresh_from_db()
    assert (bobs.note, bobs.status) == ("bob's note", "done")
    listing = client.get("/admin/audits_app/spotcheck/").content.decode()
    assert f"/admin/audits_app/spotcheck/{bobs.pk}/change/" not in listing


def test_an_auditor_cannot_change_their_own_revealed_check_in_the_admin(world):
    client = auditor_client(world)
    own = world["audits_app.spotcheck"][0].obj
    labels = own.claim_labels
    response = client.post(f"/admin/audits_app/spotcheck/{own.pk}/change/", {
        "claim_labels": '[{"position": 1, "quote": "A press", "label": "fabrication"}]'})
    assert response.status_code == 403
    own.refresh_from_db()
    assert own.claim_labels == labels
    page = client.get(f"/admin/audits_app/spotcheck/{own.pk}/change/").content.decode()
    assert 'name="_save"' not in page and "misread" in page  # the correction, shown beside
