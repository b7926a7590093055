"""The review screen in a real browser (Debian's Chromium): a check recorded by keyboard alone,
text and questions side by side at 1280 px and stacked at 390 px, and the plain form without
JavaScript. Screenshots: test-artifacts/review-*.png."""

from __future__ import annotations

import time

import pytest

from audits_app.models import SpotCheck
from audits_app.spotchecks.services import spotcheck_batch_create
from audits_app.tests.juries import build_jury
from tests.browser import NO_SIDEWAYS_SCROLL, log_in, shot, staff_user

pytestmark = pytest.mark.browser
# Counts every mouse event in the page, across navigations, so a test can say none was used.
COUNT_MOUSE = """
for (const kind of ['mousedown', 'mouseup', 'click', 'pointerdown']) {
  window.addEventListener(kind, (event) => {
    if (event.isTrusted && event.detail > 0)
      sessionStorage.setItem('mouse', String(Number(sessionStorage.getItem('mouse') || 0) + 1));
  }, true);
}"""
LAYOUT = """() => {
  const box = (selector) => document.querySelector(selector).getBoundingClientRect();
  const text = box('section[aria-labelledby=text-heading]');
  const form = box('section.review-form');
  return {text: [text.left, text.top, text.right, text.bottom],
          form: [form.left, form.top, form.right, form.bottom]};
}"""


@pytest.fixture
def small_demo_release(transactional_db):
    """Made for each test: a live-server test cannot run inside a kept world."""
    from tests.world import shipped_scenarios_import, small_demo_release_create

    shipped_scenarios_import()
    return small_demo_release_create()


@pytest.fixture
def review_world(transactional_db, small_demo_release):
    # Written before Playwright starts: its event loop makes the ORM refuse to run.
    build_jury(small_demo_release)
    auditor = staff_user("auditor")
    batch = spotcheck_batch_create(release=small_demo_release, size=3, seed=5, auditors=[auditor])
    checks = list(SpotCheck.objects.filter(item__batch=batch).order_by("item__position"))
    writers = {check.generation.model.display_name for check in checks}
    writers |= {check.generation.model.openrouter_id for check in checks}
    return {"auditor": auditor, "checks": checks, "writers": writers,
            "claims": {check.pk: len(check_claims(check)) for check in checks},
            "facts": {check.pk: len(check.generation.scenario_version.content["facts"])
                      for check in checks}}


def check_claims(check: SpotCheck) -> list:
    from audits_app.spotchecks.selectors import jury_texts

    return jury_texts(check.release, [check.generation_id])[check.generation_id].claims


def test_a_check_is_recorded_by_keyboard_alone(review_world, chromium, live_server):
    first, second = review_world["checks"][:2]
    page = chromium(1280, 900)
    page.context.add_init_script(COUNT_MOUSE)
    log_in(page, live_server.url, review_world["auditor"])
    page.goto(f"{live_server.url}/review/")
    page.evaluate("sessionStorage.removeItem('mouse')")  # the login form was clicked
    # The queue's "Next unchecked text" takes the focus (autofocus): Chromium gives it at a
    # rendering update after the load, later than the load on a busy machine.
    page.wait_for_function("document.activeElement?.textContent === 'Next unchecked text'")
    page.keyboard.press("Enter")
    page.wait_for_url(f"**/review/checks/{first.pk}/")
    assert page.title() == "Check 1 of 3 · BaitBench"
    assert page.locator("#key-map").is_visible()
    assert not any(writer in page.content() for writer in review_world["writers"])

    started = time.monotonic()
    claims = review_world["claims"][first.pk]
    labels = ["supported", "exaggeration", "contradiction", "fabrication"]
    for index in range(claims):  # each label moves the highlight to the next group
        page.keyboard.press(str(index % 4 + 1))
    assert "active" in page.locator("fieldset.facts").get_attribute("class")
    page.keyboard.press("1")
    page.keyboard.press("3")  # facts F1 and F3
    page.keyboard.press("n")
    page.keyboard.press("5")  # the fifth technique: minimisation
    page.keyboard.press("s")
    page.wait_for_url(f"**/review/checks/{second.pk}/")
    elapsed = time.monotonic() - started
    print(f"one check recorded by keyboard in {elapsed:.2f} s ({claims} claims)")
    assert page.title() == "Check 2 of 3 · BaitBench"
    assert page.evaluate("sessionStorage.getItem('mouse')") is None

    # The saved check, revealed: the labels, facts and technique typed are what was stored.
    page.goto(f"{live_server.url}/review/checks/{first.pk}/")
    mine = page.locator("#jury-verdict tbody tr td:last-child").all_inner_texts()
    assert mine == [labels[index % 4] for index in range(claims)]
    checked = page.locator("fieldset.facts input:checked")
    assert [checked.nth(i).get_attribute("value") for i in range(checked.count())] == ["F1", "F3"]
    assert page.locator("#id_techniques_4").is_checked()
    assert elapsed < 15


def test_text_and_questions_sit_side_by_side_from_1024_px_and_stack_on_a_phone(
        review_world, chromium, live_server):
    check = review_world["checks"][0]
    for width, height in ((1280, 900), (1024, 768), (390, 844)):
        page = chromium(width, height)
        log_in(page, live_server.url, review_world["auditor"])
        page.goto(f"{live_server.url}/review/checks/{check.pk}/")
        text, form = page.evaluate(LAYOUT).values()
        if width >= 1024:
            assert text[2] <= form[0] and abs(text[1] - form[1]) < 2, (width, text, form)
            # The first claim's choices are in the first screen, beside the text.
            assert page.locator("fieldset[data-group]").first.bounding_box()["y"] < height
        else:
            assert form[1] >= text[3], (width, text, form)
        assert page.evaluate(NO_SIDEWAYS_SCROLL), width
        if width != 1024:
            shot(page, f"review-{width}.png", full_page=False)
        page.context.close()


def test_without_javascript_the_form_still_records_a_check(
        review_world, chromium, live_server):
    first, second = review_world["checks"][:2]
    page = chromium(1280, 900)
    log_in(page, live_server.url, review_world["auditor"])
    context = page.context.browser.new_context(
        java_script_enabled=False, storage_state=page.context.storage_state(),
        viewport={"width": 1280, "height": 900})
    plain = context.new_page()
    plain.goto(f"{live_server.url}/review/checks/{first.pk}/")
    assert not plain.locator("#key-map").is_visible()
    assert not plain.locator("kbd.key").first.is_visible()
    for index in range(review_world["claims"][first.pk]):
        plain.check(f"#id_claim_{index + 1}_0")
    plain.click("button[name=next]")
    plain.wait_for_url(f"**/review/checks/{second.pk}/")
    assert "Check 2 of 3" in plain.title()
