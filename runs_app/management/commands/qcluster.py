"""`manage.py qcluster`: django-q2's worker cluster, stopping within seconds on SIGTERM or SIGINT.

django-q2's own command stops by setting a multiprocessing Event that its sentinel waits on.
When the whole process group gets the signal (what systemd sends, and a terminal's Ctrl-C),
the sentinel dies at once (SIGTERM keeps its default action there) and can die holding that
Event's lock: the parent then waits on the lock for ever, and systemd kills it only after
its stop timeout. A stop the sentinel did carry out would still wait for every running drain
task to end, which may take many minutes.

So here the parent stops the cluster itself: it ends every process below it (SIGTERM, SIGKILL
after a grace), and once they are surely gone hands the rows their workers held back to the
other workers at once (`runs_app.tasks.workers_stopped`). Only the calls in flight are lost,
as with any killed worker (DESIGN section 5); nothing waits for a lease to expire.

This command replaces django-q2's because `runs_app` comes before `django_q` in
INSTALLED_APPS (the first app naming a command wins).
"""

from __future__ import annotations

import os
import signal
import socket
import threading
import time
from pathlib import Path

from django.conf import settings
from django.core.management.base import CommandError
from django.db import DatabaseError
from django_q.cluster import Cluster
from django_q.management.commands.qcluster import Command as DjangoQCommand

from runs_app.tasks import preload_for_drains, workers_stopped

# Seconds the cluster's processes get to end on SIGTERM before they are killed.
GRACE_SECONDS = 3.0
PROC = Path("/proc")


def descendants(root: int) -> list[int]:
    """Every process below `root`, children first (Linux's /proc: the cluster's workers are
    the sentinel's children, not the parent's)."""
    children: dict[int, list[int]] = {}
    for stat in PROC.glob("[0-9]*/stat"):
        try:
            # "pid (name) state ppid ...": the name may hold spaces and parentheses.
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue  # the process ended while we looked
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def running(pid: int) -> bool:
    """Alive: a zombie has ended (the sentinel is reaped by multiprocessing as the command
    exits, its workers by whoever adopted them)."""
    try:
        state = (PROC / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def end_processes(pids: list[int], grace: float) -> None:
    """SIGTERM each, then SIGKILL what still runs after `grace` seconds; returns when all are
    gone."""
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 10.0)):
        for pid in pids:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + wait
        while any(running(pid) for pid in pids) and time.monotonic() < deadline:
            time.sleep(0.05)
        pids = [pid for pid in pids if running(pid)]
        if not pids:
            return


class Command(DjangoQCommand):
    help = ("Starts a background worker (a django-q2 cluster) that stops within seconds on "
            "SIGTERM or SIGINT, handing the rows its workers held to the other workers.")

    def handle(self, *args, **options) -> None:
        settings.SECRET_KEY  # noqa: B018 - refuses to start without one, as django-q2 does
        if options.get("cluster_name"):
            os.environ["Q_CLUSTER_NAME"] = options["cluster_name"]
        stopping = threading.Event()
        preload_for_drains()  # before the cluster forks its workers: they start loaded
        cluster = Cluster()
        # After Cluster() installed django-q2's handler: the signal only asks the loop below
        # to stop; nothing waits on a lock the sentinel may hold.
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda signum, frame: stopping.set())
        try:
            cluster.start()
        except RuntimeError:  # the sentinel died while starting: from our signal, or not
            if not stopping.is_set():
                raise
        if options.get("run_once") and not stopping.is_set():
            cluster.stop()
            return
        # The processes are listed while they run: a signal to the whole group ends the
        # workers at once, and the dead are no longer found below the sentinel. Only the
        # last list counts: a pid that ended long ago may belong to another worker now.
        seen: set[int] = set()
        while not stopping.is_set() and cluster.sentinel.is_alive():
            seen = set(descendants(os.getpid()))
            stopping.wait(0.5)
        exit_code = None if stopping.is_set() else cluster.sentinel.exitcode
        self.stop(seen, grace=GRACE_SECONDS)
        if exit_code is not None:
            raise CommandError(f"the cluster's sentinel exited with code {exit_code}")

    def stop(self, seen: set[int], *, grace: float) -> None:
        live = descendants(os.getpid())
        end_processes(live, grace)
        pids = sorted(seen | set(live))
        host = socket.gethostname()
        try:
            released = workers_stopped([f"{host}:{pid}" for pid in pids])
        except DatabaseError as error:  # the rows stay claimed until their leases expire
            self.stderr.write(f"qcluster stopped: {len(live)} process(es) ended; their claimed "
                              f"rows could not be handed back ({error}): they are free again "
                              f"once their leases expire")
            return
        self.stderr.write(f"qcluster stopped: {len(live)} process(es) ended, {released} "
                          f"claimed row(s) handed back to the other workers")
