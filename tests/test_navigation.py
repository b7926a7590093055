"""Each role lands on its own work after logging in, and is offered only pages it may open."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import Group, User

from audits_app.tests.factories import published_release_create
from runs_app.models import Release, ReleaseStatus

pytestmark = pytest.mark.django_db

PASSWORD = "a long test password 7"
LANDING = {
    "curator": "/admin/scenarios_app/scenario/",
    "operator": "/runs/",
    "auditor": "/review/",
    "publisher": "/publish/",
    "superuser": "/admin/",
    "none": "/admin/",
}
NAV = {
    "curator": ["scenarios", "admin"],
    "operator": ["scenarios", "runs", "admin"],
    "auditor": ["scenarios", "review", "admin"],
    "publisher": ["scenarios", "publish", "admin"],
    "superuser": ["scenarios", "runs", "review", "publish", "admin"],
}


def staff_user(role: str) -> User:
    user = User.objects.create_user(f"{role}-1", password=PASSWORD, is_staff=True,
                                    is_superuser=role == "superuser")
    if role in ("curator", "operator", "auditor", "publisher"):
        user.groups.add(Group.objects.get(name=role))
    return user


def log_in(client, user: User, next_url: str | None = None):
    url = "/admin/login/" + (f"?next={next_url}" if next_url else "")
    form = client.get(url).content.decode()
    hidden_next = re.search(r'name="next" value="([^"]*)"', form).group(1)
    return client.post(url, {"username": user.username, "password": PASSWORD,
                             "next": hidden_next}, follow=True)


def nav_links(html: str) -> dict[str, str]:
    header = html.split("</header>")[0]
    return {key: url for url, key in re.findall(r'href="([^"]+)" data-nav="([^"]+)"', header)}


@pytest.mark.parametrize("role", list(LANDING))
def test_the_login_form_lands_each_role_on_its_work(client, role):
    response = log_in(client, staff_user(role))
    assert response.status_code == 200
    assert response.request["PATH_INFO"] == LANDING[role]


@pytest.mark.parametrize("role", list(NAV))
def test_the_header_offers_only_pages_the_role_may_open(client, role):
    user = staff_user(role)
    client.force_login(user)
    links = nav_links(client.get("/").content.decode())
    assert list(links) == NAV[role]
    for key, url in links.items():
        assert client.get(url).status_code == 200, (role, key, url)


def test_a_page_asked_for_is_where_the_login_goes(client):
    response = log_in(client, staff_user("auditor"), next_url="/publish/")
    # Asked for, so kept: and the publisher's page refuses an auditor, as it says.
    assert response.request["PATH_INFO"] == "/publish/" and response.status_code == 403
    client.logout()
    response = log_in(client, staff_user("publisher"), next_url="/admin/")
    assert response.request["PATH_INFO"] == "/publish/"


def test_a_logged_in_user_at_the_login_form_goes_to_their_work(client):
    client.force_login(staff_user("auditor"))
    assert client.get("/admin/login/").url == "/review/"
    assert client.get("/staff/").url == "/review/"


def test_the_landing_page_asks_anonymous_visitors_to_log_in(client):
    assert client.get("/staff/").url.startswith("/admin/login/?next=/staff/")
    assert nav_links(client.get("/").content.decode()) == {}


def test_a_wrong_password_is_still_refused_and_counted(client):
    user = staff_user("curator")
    response = client.post("/admin/login/", {"username": user.username, "password": "wrong"})
    assert response.status_code == 200 and "correct username and password" in (
        response.content.decode())
    from axes.models import AccessAttempt

    assert AccessAttempt.objects.filter(username=user.username).exists()


def test_the_admin_index_lists_the_users_work_outside_the_admin(client):
    client.force_login(staff_user("auditor"))
    html = client.get("/admin/").content.decode()
    work = html.split('id="your-work"')[1].split("</table>")[0]
    assert 'data-nav="review"' in work and 'data-nav="publish"' not in work
    client.force_login(staff_user("publisher"))
    work = client.get("/admin/").content.decode().split('id="your-work"')[1]
    assert 'data-nav="publish"' in work.split("</table>")[0]
    assert 'data-nav="review"' not in work.split("</table>")[0]


def test_the_review_queue_offers_a_published_release_nothing_it_would_refuse(
        client, small_demo_release):
    world = published_release_create(code="pub.0")
    Release.objects.filter(pk=small_demo_release.pk).update(status=ReleaseStatus.RUNNING)
    client.force_login(staff_user("auditor"))
    html = client.get("/review/").content.decode()
    published_line = html.split("<li>pub.0")[1].split("</li>")[0]
    assert "agreement" in published_line
    assert "batches/new" not in published_line and "out-of-band" not in published_line
    assert "readers" not in published_line
    open_line = html.split("<li>small.0")[1].split("</li>")[0]
    links = re.findall(r'href="([^"]+)"', open_line)
    assert len(links) == 5
    for url in links:
        assert client.get(url).status_code == 200, url
    assert world.release.code == "pub.0"


def test_a_publisher_is_not_offered_the_review_screens_that_refuse_them(client):
    client.force_login(staff_user("publisher"))
    assert client.get("/review/").status_code == 403
    assert "/review/" not in client.get("/publish/").content.decode().split("</header>")[0]
