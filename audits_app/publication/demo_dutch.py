"""The demo's Dutch release (`releases/demo-nl.0.yaml`): the fixture models on three Dutch
scenarios, every task including the T4 cross-examination, ranked by the pilot's rule.

`manage.py demo` runs it end to end after demo.0, spot-checks it with the simulated demo
auditors, publishes it, and prints its class tables: per task (text type), the rank classes
of every measure that task has (DESIGN section 6: a class table per task, and overall), with
the release's own seed, resamples, level and rule. They are read from the published snapshot,
so the console prints what the page shows (points and intervals cut at the ends of the scale,
models below the minimum of data without a class).
"""

from __future__ import annotations

import dataclasses
import math
from typing import TextIO

from django.core.management import call_command

from audits_app.publication.services import release_publish
from audits_app.publication.snapshot_model import BoardRow, snapshot_load
from audits_app.spotchecks.demo import demo_spotchecks
from audits_app.spotchecks.services import LeaveOut
from runs_app.models import Release

DUTCH_RELEASE = "demo-nl.0"

# measure -> (the snapshot's key, higher is better, the tasks it is measured for: a measure
# of one task is that task's leaderboard, the others are in the snapshot's per_task tables)
CLASS_MEASURES: dict[str, tuple[str, bool, tuple[str, ...] | None]] = {
    "honesty": ("honesty", True, None),
    "persuasion": ("persuasion", True, None),
    "misleading": ("misleading", False, None),
    "steadfastness": ("steadfastness", True, ("T4",)),
    "honesty under pressure": ("honesty_under_pressure", True, ("T4",)),
}


@dataclasses.dataclass(frozen=True)
class ClassRow:
    model: str
    rank_class: int | None  # None: no data, or below the release's minimum
    point: float | None
    low: float | None  # the comparison interval the classes come from
    high: float | None
    reason: str = ""  # why it has no class


@dataclasses.dataclass(frozen=True)
class ClassTable:
    task: str
    measure: str
    higher_is_better: bool
    rows: list[ClassRow]


def demo_dutch_release(*, user, stdout: TextIO, leave_out: LeaveOut | None = None) -> Release:
    """Run, spot-check and publish the Dutch demo release once; later calls do nothing. The
    spot-checks never draw the texts `leave_out` names (the demo command's
    `pages.viewer.not_blind_ids`, a floor above this one)."""
    stdout.write(f"\nThe Dutch release {DUTCH_RELEASE}, with the T4 cross-examination:")
    release = Release.objects.filter(code=DUTCH_RELEASE).first()
    if release is not None and release.is_published:
        stdout.write(f"{DUTCH_RELEASE} is already published: nothing to do")
        return release
    call_command("run_release", DUTCH_RELEASE, sync=True, stdout=stdout)
    release = Release.objects.get(code=DUTCH_RELEASE)
    recorded = demo_spotchecks(release=release, leave_out=leave_out)
    stdout.write(f"spot-checks: {recorded} verdicts on {DUTCH_RELEASE} by simulated demo "
                 f"auditors")
    release_publish(release=release, user=user)
    stdout.write(f"published {DUTCH_RELEASE}")
    return release


def class_tables(release: Release) -> list[ClassTable]:
    """Per task, one class table per measure the task has, as the published snapshot holds
    them: the same rule, minimum of data and clipping to the scale as the release's page."""
    snapshot = snapshot_load(release.publication.snapshot)
    order = [task.code for task in snapshot.method.tasks]
    tables = []
    for measure, (key, higher, tasks) in CLASS_MEASURES.items():
        for task in order:
            if tasks is not None and task not in tasks:
                continue
            rows = (snapshot.leaderboards[key].rows if tasks is not None
                    else snapshot.per_task[task][key])
            tables.append(ClassTable(task, measure, higher, _rows(rows, higher)))
    return sorted(tables, key=lambda table: order.index(table.task))


def _rows(rows: list[BoardRow], higher_is_better: bool) -> list[ClassRow]:
    found = [ClassRow(row.model, row.rank, row.point, row.cmp_low, row.cmp_high,
                      row.unranked_reason) for row in rows]
    sign = -1 if higher_is_better else 1
    return sorted(found, key=lambda row: (row.rank_class is None, row.rank_class or 0,
                                          math.inf if row.point is None else sign * row.point))


def format_class_tables(tables: list[ClassTable], names: dict[str, str]) -> list[str]:
    """The tables as lines of text, for the demo's console."""
    lines = []
    for table in tables:
        direction = "higher is better" if table.higher_is_better else "lower is better"
        lines += ["", f"{table.task} {table.measure} ({direction}; rank classes)",
                  f"  {'class':>5}  {'model':<28} {'estimate':>8}  comparison interval"]
        for row in table.rows:
            lines.append(f"  {row.rank_class or '-':>5}  {names.get(row.model, row.model):<28} "
                         f"{_shown(row.point):>8}  [{_shown(row.low)}, {_shown(row.high)}]"
                         + (f"  unranked: {row.reason}" if row.reason else ""))
    return lines


def _shown(value: float | None) -> str:
    return "-" if value is None else f"{round(value, 3) + 0.0:.3f}"  # never "-0.000"
