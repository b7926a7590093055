"""bench/scaleout.py stopped by SIGTERM (`timeout`, `kill`) cleans up as on Ctrl-C: its
`finally` stops the `qcluster` process groups it started and drops its database. By default
SIGTERM ended Python at once, and `timeout 240` left some 20 clusters and the database."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

from django.conf import settings

SCRIPT = textwrap.dedent("""
    import os, signal, subprocess, sys, time
    from bench import scaleout
    scaleout.stop_cleanly_on_sigterm()
    # A process in a session of its own, as each qcluster is: nothing else stops it.
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             start_new_session=True)
    try:
        # Printed inside the try: the test sends SIGTERM as soon as it reads this line.
        print(child.pid, flush=True)
        time.sleep(60)
    finally:
        os.killpg(child.pid, signal.SIGKILL)
        child.wait()
        print("cleaned up", flush=True)
""")


def test_sigterm_runs_the_clean_up_of_the_bench():
    bench = subprocess.Popen([sys.executable, "-c", SCRIPT], cwd=settings.BASE_DIR,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    child = int(bench.stdout.readline())
    bench.terminate()  # SIGTERM to the bench's own process only
    out, err = bench.communicate(timeout=30)

    assert out == "cleaned up\n", err
    assert bench.returncode == 143  # 128 + SIGTERM, as a shell reports a process it ended
    try:
        os.kill(child, 0)
    except ProcessLookupError:
        pass
    else:
        os.kill(child, 9)
        raise AssertionError(f"the bench's child {child} outlived it")
