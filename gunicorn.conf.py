"""gunicorn's settings for `make serve` (README, "Production"), read from the environment.

gunicorn reads this file from the working directory by itself; its own variables
(`GUNICORN_CMD_ARGS`, `FORWARDED_ALLOW_IPS`, `WEB_CONCURRENCY`) still apply on top.
"""

import gc
import multiprocessing
import os

bind = os.environ.get("BAITBENCH_BIND", "127.0.0.1:8000")
# One process per core and one more, each with two threads (gunicorn's gthread worker when
# above 1: a request waiting on the database or the cache lets another run, and connections
# are kept alive between requests). Requests here take milliseconds of CPU, not waits: on two
# cores the arena's crowd (bench/arena.py) recorded 209 votes/s at 4.7 ms of CPU a request
# with 3 x 2, against 185-189 votes/s at 5.2-5.3 ms with gunicorn's 2 x cores + 1 = 5 x 4
# (more processes and threads than cores only contend for them).
workers = int(os.environ.get("WEB_CONCURRENCY", multiprocessing.cpu_count() + 1))
threads = int(os.environ.get("BAITBENCH_WEB_THREADS", 2))
# Each worker (thread) keeps its database connection between requests, checked before use
# (settings.py): a new PostgreSQL connection per request cost more than an arena vote.
os.environ.setdefault("BAITBENCH_DB_CONN_MAX_AGE", "600")
# Load the site once, in the master, before forking: settings that production refuses stop
# gunicorn itself with their one line, instead of each worker failing in turn.
preload_app = True
# Requests and errors to stderr, where the service manager keeps them.
accesslog = "-"
errorlog = "-"
# Page and API answers come from the frozen snapshot and take milliseconds; a request still
# running after this long is stuck, and its worker is replaced.
timeout = int(os.environ.get("BAITBENCH_WEB_TIMEOUT", 60))
# No `gunicornc` control socket: it lives at one path per user, which a second instance on
# the same machine (another site, a test) would take over.
control_socket_disable = True


def pre_fork(server, worker):
    """Nothing the master opened while loading the site may be shared with a worker: a
    database connection kept by both would interleave their queries on one socket.

    What loading the site made (modules, settings, URLs, the models' metadata) lives as long
    as the process: `gc.freeze` keeps it out of every later garbage collection, which would
    otherwise walk those objects again and again in every worker (about a tenth of an arena
    vote's CPU), and out of the pages a collection writes to, so workers keep sharing them
    with the master."""
    from django.db import connections

    connections.close_all()
    gc.freeze()
