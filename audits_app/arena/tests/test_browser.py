"""The arena in a real browser: consent, then a vote by keyboard alone (Debian's Chromium)."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group, User

from audits_app.arena.models import ArenaVote
from audits_app.arena.services import arena_open
from audits_app.arena.tests.conftest import HELD_OUT, PUBLIC, approve, published_arena_release
from tests.browser import ARTIFACTS

pytestmark = pytest.mark.browser


@pytest.fixture
def live_arena(transactional_db, settings):
    # Written before Playwright starts: its event loop makes the ORM refuse to run.
    from scenarios_app.services import scenarios_import

    scenarios_import(paths=[str(settings.SCENARIOS_DIR / f"{slug}.yaml")
                            for slug in [*PUBLIC, HELD_OUT]])
    release = published_arena_release()
    publisher = User.objects.create_user("pat", password="pw", is_staff=True)
    publisher.groups.add(Group.objects.get(name="publisher"))
    publisher = User.objects.get(pk=publisher.pk)
    approve(release, publisher)
    arena_open(release=release, user=publisher, reason="Browser test")
    return release


def tab_to(page, selector: str, limit: int = 60) -> None:
    """Press Tab until the element matching `selector` has the focus."""
    for _ in range(limit):
        if page.evaluate(f"document.activeElement.matches({selector!r})"):
            return
        page.keyboard.press("Tab")
    raise AssertionError(f"Tab never reached {selector}")


def test_a_voter_consents_and_votes_by_keyboard_alone(live_arena, live_server, chromium):
    errors: list[str] = []
    page = chromium(1200, 900)
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda error: errors.append(str(error)))

    page.goto(f"{live_server.url}/arena/arena.0/")
    tab_to(page, "#id_agree")
    page.keyboard.press("Space")
    page.keyboard.press("Tab")
    page.keyboard.press("Enter")
    page.wait_for_url("**/arena/arena.0/pair/")

    tab_to(page, "input[name=favourable][value=left]")
    outline = page.evaluate("getComputedStyle(document.activeElement).outlineStyle")
    page.keyboard.press("ArrowRight")  # within the group: Text 2, and selects it
    assert page.evaluate("document.activeElement.value") == "right"
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "arena-pair.png"), full_page=True)
    first_token = page.locator("input[name=pair]").get_attribute("value")
    tab_to(page, "button[type=submit]")
    with page.expect_navigation():
        page.keyboard.press("Enter")
    # Straight on to the next pair: the confirmation sits above it, nothing to click.
    confirmation = page.locator("ul.messages li").inner_text()
    next_token = page.locator("input[name=pair]").get_attribute("value")
    choices = page.locator("input[name=favourable]").evaluate_all(
        "inputs => inputs.map(input => input.value)")
    page.screenshot(path=str(ARTIFACTS / "arena-next-pair.png"))
    # The vote's answer was the next pair; the history holds the pair page's address, so
    # a reload asks for a pair and never sends the vote again.
    after_vote = page.url
    page.reload()
    reloaded = page.locator("h1").first.inner_text(), page.url
    chromium.finish()  # the ORM may run again

    assert outline != "none"  # the keyboard focus is visible
    assert confirmation == "Thank you: your answer is recorded. Here is the next pair."
    assert next_token and next_token != first_token
    assert choices == ["left", "right", "tie", "both_bad"]
    assert not errors, errors
    assert after_vote.endswith("/arena/arena.0/pair/")
    assert reloaded[1].endswith("/arena/arena.0/pair/") and "answered" not in reloaded[0]
    recorded = ArenaVote.objects.get()
    assert recorded.showing.side_of("right") == recorded.favourable
