"""`manage.py staff_add`: staff logins by role, with the password never on the command line."""

from __future__ import annotations

import io

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client

pytestmark = pytest.mark.django_db

PASSWORD = "correct horse battery staple"


def staff_add(*args: str) -> str:
    out = io.StringIO()
    call_command("staff_add", *args, stdout=out)
    return out.getvalue()


def roles_of(username: str) -> list[str]:
    return sorted(User.objects.get(username=username).groups.values_list("name", flat=True))


@pytest.fixture
def password(monkeypatch):
    monkeypatch.setenv("BAITBENCH_STAFF_PASSWORD", PASSWORD)
    return PASSWORD


def test_it_creates_a_login_with_its_role_that_logs_in_and_lands_on_its_work(password):
    said = staff_add("ann", "--role", "auditor")
    assert said.strip() == ("created staff login 'ann': role(s) auditor, password set; log in "
                            "at /admin/login/, lands on /review/")
    user = User.objects.get(username="ann")
    assert user.is_staff and user.is_active and not user.is_superuser
    assert roles_of("ann") == ["auditor"]
    client = Client()
    response = client.post("/admin/login/", {"username": "ann", "password": password})
    assert response.status_code == 302
    landed = client.get(response.url, follow=True)
    assert landed.redirect_chain[-1][0] == "/review/" and landed.status_code == 200


def test_it_gives_several_roles_and_lands_on_the_work_closest_to_publication(password):
    staff_add("olga", "--role", "operator", "--role", "publisher", "--role", "operator")
    assert roles_of("olga") == ["operator", "publisher"]
    assert "lands on /publish/" in staff_add("olga", "--role", "operator", "--role",
                                              "publisher", "--update")


@pytest.mark.parametrize("args, says", [
    (["x", "--role", "auditr"], "unknown role 'auditr': the roles are curator, operator, "
                                "auditor, publisher"),
    (["x"], "no role given: name one or more with --role (curator, operator, auditor, "
            "publisher)"),
    (["x", "--role", "operator", "--update", "--set-password"], None),
])
def test_it_refuses_an_unknown_or_missing_role_by_name(password, args, says):
    if says is None:  # --update of a login that does not exist creates it only with a password
        staff_add(*args)
        assert roles_of("x") == ["operator"]
        return
    with pytest.raises(CommandError) as refused:
        staff_add(*args)
    assert str(refused.value) == says
    assert not User.objects.filter(username="x").exists()


def test_it_refuses_an_existing_user_unless_told_to_update_and_then_changes_only_roles(
    password, monkeypatch,
):
    staff_add("cora", "--role", "curator")
    with pytest.raises(CommandError) as refused:
        staff_add("cora", "--role", "operator")
    assert str(refused.value) == ("user 'cora' already exists (roles: curator); add --update "
                                  "to give it the roles operator")
    assert roles_of("cora") == ["curator"]

    monkeypatch.delenv("BAITBENCH_STAFF_PASSWORD")  # an update needs no password
    for _ in range(2):  # the same update twice: the same login
        said = staff_add("cora", "--role", "operator", "--update")
        assert said.startswith("updated staff login 'cora': role(s) operator, password "
                               "unchanged")
        assert roles_of("cora") == ["operator"]
    assert User.objects.get(username="cora").check_password(password)


def test_an_update_with_set_password_changes_it(password, monkeypatch):
    staff_add("pat", "--role", "publisher")
    monkeypatch.setenv("BAITBENCH_STAFF_PASSWORD", "another long passphrase")
    assert "password set" in staff_add("pat", "--role", "publisher", "--update",
                                       "--set-password")
    assert User.objects.get(username="pat").check_password("another long passphrase")


def test_with_no_password_and_no_terminal_it_says_where_the_password_comes_from(monkeypatch):
    monkeypatch.delenv("BAITBENCH_STAFF_PASSWORD", raising=False)
    monkeypatch.setattr("sys.stdin", io.StringIO(""))
    with pytest.raises(CommandError) as refused:
        staff_add("nina", "--role", "auditor")
    assert str(refused.value) == ("no password: set BAITBENCH_STAFF_PASSWORD, or run this in a "
                                  "terminal to be asked for one")
    assert not User.objects.filter(username="nina").exists()


def test_it_asks_for_the_password_twice_at_a_terminal(monkeypatch):
    monkeypatch.delenv("BAITBENCH_STAFF_PASSWORD", raising=False)
    monkeypatch.setattr("sys.stdin.isatty", lambda: True, raising=False)
    answers = iter(["first long passphrase", "first long passphrase",
                    "one passphrase", "another passphrase"])
    monkeypatch.setattr("getpass.getpass", lambda prompt="": next(answers))
    staff_add("tess", "--role", "curator")
    assert User.objects.get(username="tess").check_password("first long passphrase")
    with pytest.raises(CommandError, match="the two passwords differ"):
        staff_add("tom", "--role", "curator")


def test_the_password_is_no_argument(password):
    with pytest.raises(CommandError):
        staff_add("x", "--role", "curator", "--password", "in-the-history")
    assert not User.objects.filter(username="x").exists()


@pytest.mark.parametrize("weak, says", [
    ("password", "This password is too short"),
    ("password1234", "This password is too common"),
    ("204863197532", "This password is entirely numeric"),
    ("winifred-smith", "The password is too similar to the username"),
    # What Django's four validators let through (baitbench_site.passwords).
    ("aaaaaaaaaaaaaaaa", "This password is one short part repeated"),
    ("passwordpassword", "This password is one short part repeated"),
    ("baitbenchbaitbench", "This password is one short part repeated"),
    ("qwertyuiopasdfgh", "This password is a run along the keyboard or the alphabet"),
    ("111111111111111a", "This password has fewer than 6 different characters"),
    ("xx-winifred-smith-77", "This password contains the login name"),
])
def test_a_weak_password_is_refused_with_the_rule_it_breaks(monkeypatch, weak, says):
    monkeypatch.setenv("BAITBENCH_STAFF_PASSWORD", weak)
    with pytest.raises(CommandError, match=f"the password is refused: .*{says}"):
        staff_add("winifred-smith", "--role", "publisher")
    assert not User.objects.filter(username="winifred-smith").exists()


def test_the_admins_password_change_refuses_a_weak_password_by_the_same_rules(password):
    staff_add("rhea", "--role", "auditor")
    client = Client()
    client.force_login(User.objects.get(username="rhea"))
    response = client.post("/admin/password_change/", {
        "old_password": PASSWORD, "new_password1": "aaaaaaaaaaaaaaaa",
        "new_password2": "aaaaaaaaaaaaaaaa"})
    assert response.status_code == 200
    assert "This password is one short part repeated." in response.content.decode()
    assert User.objects.get(username="rhea").check_password(PASSWORD)


@pytest.mark.parametrize("name, says", [
    ("bad name/x", "Enter a valid username. This value may contain only letters, numbers, "
                   "and @/./+/-/_ characters."),
    ("a" * 151, "Ensure this value has at most 150 characters (it has 151)."),
])
def test_a_user_name_django_refuses_is_refused_with_the_reason(password, name, says):
    with pytest.raises(CommandError) as refused:
        staff_add(name, "--role", "auditor")
    assert str(refused.value) == f"the user name {name!r} is refused: {says}"
    assert not User.objects.exists()
