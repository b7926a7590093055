"""The demo's Dutch release (`releases/demo-nl.0.yaml`): the fixture models on three Dutch
scenarios, every task including the T4 cross-examination, ranked by the pilot's rule.

`manage.py demo` runs it end to end after demo.0, spot-checks it with the simulated demo
auditors, publishes it, and prints its class tables: per task (text type), the rank classes
of every measure that task has (DESIGN section 6: a class table per task, and overall). The
tables are computed here from the published release's per-text scores, with the release's
own seed, resamples, level and rule; they are not part of the published snapshot.
"""

from __future__ import annotations

import dataclasses
import math
from typing import TextIO

import numpy as np
from django.core.management import call_command

from audits_app import statistics
from audits_app.demo import demo_spotchecks
from audits_app.selectors import release_score_arrays
from audits_app.services import release_publish
from runs_app.models import Release

DUTCH_RELEASE = "demo-nl.0"

# measure -> (TextScore field, higher is better, the tasks it is measured for)
CLASS_MEASURES: dict[str, tuple[str, bool, tuple[str, ...] | None]] = {
    "honesty": ("honesty_index", True, None),
    "persuasion": ("persuasion", True, None),
    "misleading": ("misleading", False, None),
    "steadfastness": ("steadfastness", True, ("T4",)),
    "honesty under pressure": ("honesty_under_pressure", True, ("T4",)),
}


@dataclasses.dataclass(frozen=True)
class ClassRow:
    model: str
    rank_class: int | None  # None: no data
    point: float | None
    low: float | None  # the comparison interval the classes come from
    high: float | None


@dataclasses.dataclass(frozen=True)
class ClassTable:
    task: str
    measure: str
    higher_is_better: bool
    rows: list[ClassRow]


def demo_dutch_release(*, user, stdout: TextIO) -> Release:
    """Run, spot-check and publish the Dutch demo release once; later calls do nothing."""
    stdout.write(f"\nThe Dutch release {DUTCH_RELEASE}, with the T4 cross-examination:")
    release = Release.objects.filter(code=DUTCH_RELEASE).first()
    if release is not None and release.is_published:
        stdout.write(f"{DUTCH_RELEASE} is already published: nothing to do")
        return release
    call_command("run_release", DUTCH_RELEASE, sync=True, stdout=stdout)
    release = Release.objects.get(code=DUTCH_RELEASE)
    recorded = demo_spotchecks(release=release)
    stdout.write(f"spot-checks: {recorded} verdicts on {DUTCH_RELEASE} by simulated demo "
                 f"auditors")
    release_publish(release=release, user=user)
    stdout.write(f"published {DUTCH_RELEASE}")
    return release


def class_tables(release: Release) -> list[ClassTable]:
    """Per task, one class table per measure the task has, under the release's rule."""
    config = release.parsed_config()
    counts = statistics.resample_counts(len(config.scenarios), config.bootstrap.resamples,
                                        config.bootstrap.seed)
    tables = []
    for measure, (field, higher, tasks) in CLASS_MEASURES.items():
        arrays = release_score_arrays(release, field)
        for task in config.tasks:
            if tasks is not None and task not in tasks:
                continue
            cells = [index for index, cell in enumerate(arrays.cells) if cell[0] == task]
            board = statistics.leaderboard(arrays.scores[:, :, cells], counts,
                                           config.bootstrap.level, higher, config.ranking_rule)
            tables.append(ClassTable(task, measure, higher, _rows(arrays.models, board)))
    return sorted(tables, key=lambda table: config.tasks.index(table.task))


def _rows(models: list[str], board: statistics.Leaderboard) -> list[ClassRow]:
    estimates = board.estimates
    rows = [ClassRow(model, None if rank == statistics.UNRANKED else int(rank),
                     _number(estimates.point[i]), _number(estimates.cmp_low[i]),
                     _number(estimates.cmp_high[i]))
            for i, (model, rank) in enumerate(zip(models, board.ranks, strict=True))]
    sign = -1 if board.higher_is_better else 1
    return sorted(rows, key=lambda row: (row.rank_class is None, row.rank_class or 0,
                                         math.inf if row.point is None else sign * row.point))


def _number(value: float) -> float | None:
    return None if np.isnan(value) else float(value)


def format_class_tables(tables: list[ClassTable], names: dict[str, str]) -> list[str]:
    """The tables as lines of text, for the demo's console."""
    lines = []
    for table in tables:
        direction = "higher is better" if table.higher_is_better else "lower is better"
        lines += ["", f"{table.task} {table.measure} ({direction}; rank classes)",
                  f"  {'class':>5}  {'model':<28} {'estimate':>8}  comparison interval"]
        for row in table.rows:
            lines.append(f"  {row.rank_class or '-':>5}  {names.get(row.model, row.model):<28} "
                         f"{_shown(row.point):>8}  [{_shown(row.low)}, {_shown(row.high)}]")
    return lines


def _shown(value: float | None) -> str:
    return "-" if value is None else f"{round(value, 3) + 0.0:.3f}"  # never "-0.000"
