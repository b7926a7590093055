"""`run_release` (DESIGN section 8): the scope it records and what it hands to the queue."""

from __future__ import annotations

import datetime as dt
import io
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from runs_app import drains
from runs_app.models import Drain, Generation, JurorVerdict, RefusalCheck, StageRun, WorkStatus
from runs_app.selectors import release_active_scope


@pytest.fixture
def enqueued(monkeypatch: pytest.MonkeyPatch) -> list[tuple]:
    calls: list[tuple] = []
    monkeypatch.setattr(drains, "async_task", lambda *args, **kwargs: calls.append(args))
    return calls


def run_release(*args: str, capture) -> str:
    out = io.StringIO()
    with capture(execute=True):
        call_command("run_release", *args, stdout=out)
    return out.getvalue()


@pytest.mark.django_db
def test_one_stage_is_the_whole_scope_and_only_its_drains_are_queued(
    small_demo_release, enqueued, django_capture_on_commit_callbacks
):
    # An operator who asks for generation only must not start paying for the jury.
    output = run_release("small.0", "--stage", "generate",
                         capture=django_capture_on_commit_callbacks)

    assert release_active_scope(small_demo_release) == ["generate"]
    assert "generate" in output and "this stage only" in output
    assert enqueued and all(path == drains.TASK_PATH for path, _ in enqueued)
    tickets = {ticket_id for _, ticket_id in enqueued}
    assert tickets == set(Drain.objects.filter(release=small_demo_release)
                          .values_list("pk", flat=True))


@pytest.mark.django_db
def test_the_whole_release_starts_every_stage_of_its_stage_set(
    small_demo_release, enqueued, django_capture_on_commit_callbacks
):
    run_release("small.0", capture=django_capture_on_commit_callbacks)

    config = small_demo_release.parsed_config()
    assert release_active_scope(small_demo_release) == config.stages
    assert enqueued


@pytest.mark.django_db
def test_a_stage_outside_the_release_stage_set_is_refused(
    imported_scenarios, tmp_path, settings, django_capture_on_commit_callbacks
):
    text = (settings.RELEASES_DIR / "demo.0.yaml").read_text()
    text = text.replace("code: demo.0", "code: nouptake.0").replace(
        "tasks: [T1, T2, T3, T4]", "tasks: [T1]\nstages: [generate, refusal, jury, panel]")
    (tmp_path / "nouptake.0.yaml").write_text(text)
    settings.RELEASES_DIR = tmp_path

    with pytest.raises(CommandError, match="does not run uptake; its stages are generate, "
                                           "refusal, jury, panel"):
        run_release("nouptake.0", "--stage", "uptake",
                    capture=django_capture_on_commit_callbacks)
    assert not StageRun.objects.exists()


@pytest.mark.django_db
def test_sync_with_one_stage_runs_that_stage_and_plans_nothing_after_it(
    small_demo_release, django_capture_on_commit_callbacks
):
    output = run_release("small.0", "--stage", "refusal", "--sync",
                         capture=django_capture_on_commit_callbacks)
    assert "refusal: 0 finished now" in output  # nothing generated yet

    run_release("small.0", "--stage", "generate", "--sync",
                capture=django_capture_on_commit_callbacks)
    assert not RefusalCheck.objects.exists()  # generate alone plans nothing after it

    run_release("small.0", "--stage", "refusal", "--sync",
                capture=django_capture_on_commit_callbacks)
    assert RefusalCheck.objects.filter(status="done").count() == 16
    assert not JurorVerdict.objects.exists()


@pytest.mark.django_db
def test_sync_says_which_rows_other_workers_hold(small_demo_release,
                                                 django_capture_on_commit_callbacks):
    # A queued drain's worker holds some of the stage's rows: --sync leaves them to it and
    # says so, rather than counting them as pending with nothing to show for it.
    run_release("small.0", "--stage", "generate", capture=django_capture_on_commit_callbacks)
    held = Generation.objects.filter(release=small_demo_release).order_by("pk")[:5]
    Generation.objects.filter(pk__in=[row.pk for row in held]).update(
        status=WorkStatus.CLAIMED, claimed_by="other-host:1", claim_token="other",
        lease_expires_at=timezone.now() + dt.timedelta(minutes=20))

    output = run_release("small.0", "--stage", "generate", "--sync",
                         capture=django_capture_on_commit_callbacks)

    assert "0 pending, 5 claimed by other workers of 16" in output, output
    assert "5 row(s) were claimed by other workers, which finish them" in output


@pytest.mark.django_db
def test_a_stage_whose_input_never_ran_says_what_it_waits_for(
    small_demo_release, django_capture_on_commit_callbacks
):
    out, err = io.StringIO(), io.StringIO()
    with django_capture_on_commit_callbacks(execute=True):
        call_command("run_release", "small.0", "--stage", "jury", "--sync", stdout=out,
                     stderr=err)
    assert ("warning: jury reads what refusal writes, and refusal has not run: jury has "
            "nothing to do until refusal is started too") in err.getvalue()
    assert "jury: 0 finished now" in out.getvalue()

    err = io.StringIO()
    with django_capture_on_commit_callbacks(execute=True):
        call_command("run_release", "small.0", "--stage", "generate", "--sync",
                     stdout=io.StringIO(), stderr=err)
    assert "warning" not in err.getvalue()  # generate reads from no stage


MODULES_AFTER_START = (
    "import sys, runpy\n"
    "sys.argv = ['manage.py', *sys.argv[1:]]\n"
    "try:\n"
    "    runpy.run_path('manage.py', run_name='__main__')\n"
    "except SystemExit:\n"
    "    pass\n"
    "print('admin' if 'audits_app.admin' in sys.modules else 'no admin', "
    "'scipy' if 'scipy' in sys.modules else 'no scipy', "
    "'httpx' if 'httpx' in sys.modules else 'no httpx')\n"
)


def modules_after(*command: str) -> str:
    """What a manage.py process had imported once its command ended (a fresh process: this
    one set Django up long ago)."""
    root = Path(__file__).resolve().parents[2]
    env = os.environ | {"BAITBENCH_DEV": "1", "DATABASE_URL": "sqlite:///:memory:"}
    done = subprocess.run([sys.executable, "-c", MODULES_AFTER_START, *command], cwd=root,
                          env=env, capture_output=True, text=True, timeout=120)
    return done.stdout.strip().splitlines()[-1]


def test_run_release_starts_without_the_admin_while_other_commands_load_it():
    # Idle workers wait for the drains run_release queues: it does not spend its start-up
    # importing every admin page and the statistics behind them, nor the drain loop and the
    # HTTP client (a queued start runs neither). The site still has them.
    assert modules_after("run_release", "--help") == "no admin no scipy no httpx"
    assert modules_after("shell", "-c", "pass").startswith("admin ")
