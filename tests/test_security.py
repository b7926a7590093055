"""Staff logins are throttled against guessing, and staff sessions end."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.test import Client, RequestFactory
from django.utils import timezone

from baitbench_site.security import client_ip_behind_proxy

pytestmark = pytest.mark.django_db
LOGIN = "/admin/login/?next=/admin/"


@pytest.fixture
def staff(django_user_model):
    return django_user_model.objects.create_user("staff", password="right-password",
                                                 is_staff=True)


def log_in(client: Client, username: str, password: str):
    return client.post(LOGIN, {"username": username, "password": password})


def test_guessing_a_staff_password_locks_the_login(client, staff):
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        assert log_in(client, "staff", "guess").status_code == 200  # the form again
    assert log_in(client, "staff", "guess").status_code == 429  # the last failure allowed

    locked = log_in(client, "staff", "right-password")

    assert locked.status_code == 429
    body = locked.content.decode()
    assert "Too many login attempts" in body and "0:30:00" in body
    assert "<header>" in body and 'href="/"' in body  # the site's layout, with the way back
    assert "_auth_user_id" not in client.session
    # The lock holds for the user name from another address too.
    elsewhere = Client(REMOTE_ADDR="203.0.113.9")
    assert log_in(elsewhere, "staff", "right-password").status_code == 429


def test_guessing_many_user_names_from_one_address_locks_that_address(client, staff):
    for number in range(settings.AXES_FAILURE_LIMIT):
        log_in(client, f"someone-{number}", "guess")

    assert log_in(client, "staff", "right-password").status_code == 429
    assert log_in(Client(REMOTE_ADDR="203.0.113.9"), "staff",
                  "right-password").status_code == 302


def test_a_successful_login_clears_earlier_failures(client, staff):
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        log_in(client, "staff", "guess")
    assert log_in(client, "staff", "right-password").status_code == 302
    client.logout()

    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        log_in(client, "staff", "guess")
    assert log_in(client, "staff", "right-password").status_code == 302


def test_a_staff_login_ends_after_the_staff_session_time(client, staff):
    before = timezone.now()
    log_in(client, "staff", "right-password")

    ends = client.session.get_expiry_date()
    hours = timedelta(seconds=settings.BAITBENCH_STAFF_SESSION_SECONDS)
    assert before + hours <= ends <= timezone.now() + hours
    assert hours < timedelta(seconds=settings.SESSION_COOKIE_AGE)
    # Activity does not extend it: the end is fixed at login.
    client.get("/admin/")
    assert client.session.get_expiry_date() == ends


def test_other_users_keep_the_ordinary_session_age(client):
    user = get_user_model().objects.create_user("visitor", password="x")
    client.force_login(user)

    assert client.session.get_expiry_age() == settings.SESSION_COOKIE_AGE


def test_behind_the_proxy_only_the_address_it_saw_counts():
    request = RequestFactory().get(
        "/", REMOTE_ADDR="127.0.0.1", HTTP_X_FORWARDED_FOR="6.6.6.6, 198.51.100.7")

    assert client_ip_behind_proxy(request) == "198.51.100.7"
    assert client_ip_behind_proxy(RequestFactory().get("/", REMOTE_ADDR="10.1.2.3")) == "10.1.2.3"
