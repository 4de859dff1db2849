"""Progress, reported one way.

Every piece of work that tells how far it has come — an import reading a file, a site's import
ending, an evaluation in percent, the demo archive being written — says it with one
:class:`Progress` value, and every reader adds it up with :func:`progress_apply`: the job's
record (``jobs.runner.JobRun.report``, which the Jobs page reads) and a terminal's bar
(``jobs.bar``) alike. The value says what changed since the last report, so reports from
several threads or processes add up in any order.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

FAILURES_KEPT = 500  # a state lists the last failures; its counts count them all


@dataclass(frozen=True)
class Progress:
    """What changed since the last report.

    * ``done`` — units of the total finished (a site, a file, a percent).
    * ``total`` — the number of units, when the work learns it.
    * ``fraction`` — for work measured as a share (0 … 1): it finishes the units up to that
      share of the total (never fewer than are done).
    * ``counts`` — numbers to add up (``captures``, ``bytes read`` …).
    * ``notes`` — values shown as they are (a health check's answers, the best fitness so far).
    * ``item`` — the unit this report is about; with ``failure``, why it failed (listed and
      counted as ``failed``). An item reported done after it was marked interrupted loses the
      mark.
    * ``started`` — ids of the items (sites) the work has started, so that they are found if
      it stops.
    """

    done: int = 0
    total: int | None = None
    fraction: float | None = None
    counts: Mapping[str, int] = field(default_factory=dict)
    notes: Mapping[str, object] = field(default_factory=dict)
    item: str = ""
    failure: str = ""
    started: Sequence[int] = ()

    def __post_init__(self) -> None:
        if self.done < 0:
            raise ValueError(f"done must not be negative; got {self.done}")
        if self.fraction is not None and not 0.0 <= self.fraction <= 1.0:
            raise ValueError(f"fraction must lie in 0 … 1; got {self.fraction}")
        if self.failure and not self.item:
            raise ValueError("a failure names its item")

    def against(self, state: ProgressState) -> Progress | None:
        """This report as ``state`` would change: its fraction turned into units done, its
        started items less those ``state`` names already; None when it says nothing new (a
        share that has not moved a whole unit, items already known)."""
        done = self.done
        if self.fraction is not None:
            total = self.total if self.total is not None else state.total
            done += max(int(self.fraction * total) - state.done, 0)
        known = set(state.items)
        started = tuple(i for i in self.started if i not in known)
        changed = replace(self, done=done, fraction=None, started=started)
        if changed == Progress():
            return None
        return changed


Report = Callable[[Progress], None]


def report_nothing(progress: Progress) -> None:
    """The report of work nobody follows."""
    return None


def inside_units(report: Report) -> Report:
    """``report`` for the work inside a unit only (the sites a file started, the bytes read),
    not the unit's end: for a caller that reports the unit under a name of its own."""

    def inside(progress: Progress) -> None:
        if not progress.item:
            report(progress)

    return inside


class ProgressState(Protocol):
    """Where progress adds up: a job's record (``jobs.models.JobRecord``) or a :class:`Tally`."""

    done: int
    total: int
    counts: dict[str, Any]
    items: list[int]
    failures: list[dict[str, Any]]


@dataclass
class Tally:
    """Progress added up in memory: a terminal's bar for work that keeps no job."""

    done: int = 0
    total: int = 0
    counts: dict[str, Any] = field(default_factory=dict)
    items: list[int] = field(default_factory=list)
    failures: list[dict[str, Any]] = field(default_factory=list)
    item: str = ""  # the newest item named


def progress_apply(state: ProgressState, progress: Progress) -> None:
    """Add ``progress`` (as :meth:`Progress.against` gave it) to ``state``."""
    if progress.total is not None:
        state.total = progress.total
    if progress.started:
        present = set(state.items)
        state.items = [*state.items, *(i for i in progress.started if i not in present)]
    if progress.item and progress.done:
        state.failures = [
            f
            for f in state.failures
            if not (f.get("item") == progress.item and f.get("interrupted"))
        ]
    state.done += progress.done
    for name, value in progress.counts.items():
        state.counts[name] = state.counts.get(name, 0) + value
    state.counts.update(progress.notes)
    if progress.failure:
        entry = {"item": progress.item, "reason": progress.failure}
        state.failures = [*state.failures, entry][-FAILURES_KEPT:]
        state.counts["failed"] = state.counts.get("failed", 0) + 1
    if isinstance(state, Tally) and progress.item:
        state.item = progress.item
