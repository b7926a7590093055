"""The reader's path in a real browser (Debian's Chromium, headless) on a 390 px screen with
JavaScript off: consent, profile, baseline, text, answers, completion code, and no page
wider than the screen; and nothing axe-core finds on any page of the path (with JavaScript
on, which axe needs). Screenshots: /tmp/shots/h-study/ (BAITBENCH_SHOTS names another)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from audits_app.calibration.studies import services
from audits_app.calibration.studies.tests.conftest import (
    plan,
    published_study_release,
    study_approve,
    study_scenarios_import,
)
from audits_app.models import StudyParticipant
from tests.browser import NO_SIDEWAYS_SCROLL, axe_violations, watch

pytestmark = pytest.mark.browser
SHOTS = Path(os.environ.get("BAITBENCH_SHOTS", "/tmp/shots/h-study"))
# Each 1-7 scale's radios, by their tops: one distinct top per scale when it fits one row.
SCALE_ROWS = """() => [...document.querySelectorAll('fieldset.scale')].map(scale => new Set(
    [...scale.querySelectorAll('input[type=radio]')].map(
        r => Math.round(r.getBoundingClientRect().top))).size)"""


@pytest.fixture
def release(transactional_db):
    """Published for each test: a live-server test cannot run inside a kept world."""
    study_scenarios_import()
    return published_study_release()


@pytest.fixture
def live_study(transactional_db, release, publisher):
    # Written before Playwright starts: its event loop makes the ORM refuse to run.
    study = services.study_create(release=release, user=publisher, plan=plan(
        completion_url="https://app.prolific.example/submissions/complete?cc={code}"))
    study_approve(study, publisher)
    return services.study_open(study=study, user=publisher)


def choose_first_of_each_group(page) -> None:
    """Tick one answer in every radio group by keyboard: focus its first radio, Space."""
    names = page.evaluate("""() => [...new Set([...document.querySelectorAll(
        'input[type=radio]')].map(r => r.name))]""")
    for name in names:
        radios = page.locator(f'input[type=radio][name="{name}"]')
        radios.nth(min(1, radios.count() - 1)).focus()
        page.keyboard.press("Space")


def test_a_reader_goes_through_the_study_on_a_390_px_screen_without_javascript(
        live_study, live_server, chromium):
    SHOTS.mkdir(parents=True, exist_ok=True)
    widths, steps, scale_rows = [], [], []
    context = chromium.context(viewport={"width": 390, "height": 844},
                               java_script_enabled=False)
    page = context.new_page()
    errors, hosts = watch(page)
    page.goto(f"{live_server.url}/studies/{live_study.pk}/?PROLIFIC_PID=BROWSER123"
              f"&STUDY_ID=S1&SESSION_ID=X1")
    widths.append(page.evaluate(NO_SIDEWAYS_SCROLL))
    page.screenshot(path=str(SHOTS / "study-01-consent-390.png"), full_page=True)
    page.locator("button[type=submit]").click()  # without consent the form stays
    refused = page.evaluate("document.querySelector('#id_agree').validity.valueMissing")
    stayed = "/go/" not in page.url
    page.locator("#id_agree").check()
    page.locator("button[type=submit]").click()
    page.wait_for_url("**/go/")
    for number in range(2, 12):
        if "/done/" in page.url:
            break
        steps.append(page.locator("h1").inner_text())
        widths.append(page.evaluate(NO_SIDEWAYS_SCROLL))
        scale_rows += page.evaluate(SCALE_ROWS)
        page.screenshot(path=str(SHOTS / f"study-{number:02d}-390.png"), full_page=True)
        choose_first_of_each_group(page)
        page.locator("button[type=submit]").click()
        page.wait_for_load_state()
    code = page.locator("#completion-code").inner_text()
    link = page.locator("a.button").get_attribute("href")
    widths.append(page.evaluate(NO_SIDEWAYS_SCROLL))
    page.screenshot(path=str(SHOTS / "study-12-done-390.png"), full_page=True)
    chromium.finish()  # the ORM may run again

    assert refused and stayed
    assert steps[0] == "About you" and "Please read this text about" in " ".join(steps)
    assert all(widths), widths
    assert scale_rows and set(scale_rows) == {1}, "a 1-7 scale wraps at 390 px"
    participant = StudyParticipant.objects.get()
    assert code == participant.completion_code and link.endswith(f"cc={code}")
    assert participant.readings.filter(answered_at__isnull=False).count() == 2
    assert "BROWSER123" not in str(list(StudyParticipant.objects.values()))
    assert hosts <= {"127.0.0.1", "localhost"} and not errors, errors


@pytest.fixture
def publisher_session(live_study, publisher) -> str:
    from django.conf import settings
    from django.test import Client

    client = Client()
    client.force_login(publisher)
    return client.cookies[settings.SESSION_COOKIE_NAME].value


def test_axe_finds_nothing_on_any_page_of_the_readers_path_or_its_progress_page(
        live_study, live_server, publisher_session, chromium):
    from django.conf import settings

    found, steps = {}, 0
    page = chromium(390, 844)
    page.goto(f"{live_server.url}/studies/{live_study.pk}/?PROLIFIC_PID=AXE1&STUDY_ID=S1"
              f"&SESSION_ID=X1")
    found["consent"] = axe_violations(page)
    page.locator("#id_agree").check()
    page.locator("button[type=submit]").click()
    page.wait_for_url("**/go/")
    while "/done/" not in page.url and steps < 12:
        steps += 1
        found[f"{steps}: {page.locator('h1').inner_text()}"] = axe_violations(page)
        choose_first_of_each_group(page)
        page.locator("button[type=submit]").click()
        page.wait_for_load_state()
    found["done"] = axe_violations(page)
    staff = chromium(1280, 900)
    staff.context.add_cookies([{"name": settings.SESSION_COOKIE_NAME,
                                "value": publisher_session, "url": live_server.url}])
    progress = staff.goto(f"{live_server.url}/studies/{live_study.pk}/progress/")
    found["progress"] = axe_violations(staff)
    assert progress is not None and progress.status == 200
    assert "/done/" in page.url and steps >= 4, steps
    assert {step: problems for step, problems in found.items() if problems} == {}
