"""The one progress bar a terminal draws: a job's record as it changes (``JobRun.bar``), or the
reports of work that keeps no job (:func:`terminal_progress`). Nothing is drawn when standard
error is not a terminal (a cron, a pipe, a test)."""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from tqdm import tqdm

from hacs.progress import Progress, ProgressState, Report, Tally, progress_apply


def drawing() -> bool:
    """Whether a bar is drawn: standard error is a terminal."""
    return sys.stderr.isatty()


class ProgressBar:
    """A tqdm bar of a progress state: done of the total, or the count ``count`` of the count
    ``of`` (bytes read of bytes in files); ``postfix`` names a count or note shown beside it."""

    def __init__(
        self,
        desc: str,
        *,
        total: int = 0,
        unit: str = "it",
        count: str = "",
        of: str = "",
        postfix: str = "",
    ) -> None:
        self.count, self.of, self.postfix = count, of, postfix
        self._lock = threading.Lock()
        self._shown = tqdm(
            desc=desc,
            total=total or None,
            unit=unit,
            unit_scale=unit == "B",
            leave=False,
            disable=not drawing(),
        )

    def draw(self, state: ProgressState, *, item: str = "") -> None:
        """Show ``state``; ``item`` (the unit being worked on) replaces the description."""
        with self._lock:
            shown = self._shown
            total = state.counts.get(self.of, 0) if self.of else state.total
            if total:
                shown.total = total
            position = state.counts.get(self.count, 0) if self.count else state.done
            moved = position - shown.n
            if item:
                shown.set_description_str(item, refresh=not moved)
            if self.postfix in state.counts:
                value = state.counts[self.postfix]
                text = f"{value} {self.postfix}" if isinstance(value, int) else str(value)
                shown.set_postfix_str(text, refresh=not moved)
            if moved > 0:
                shown.update(moved)

    def close(self) -> None:
        with self._lock:
            self._shown.close()


@contextmanager
def terminal_progress(
    desc: str, *, total: int = 0, unit: str = "it", count: str = "", of: str = "", postfix: str = ""
) -> Iterator[Report]:
    """Yield the report of work that keeps no job (a replay, the demo archive being written):
    its :class:`Progress` adds up in a :class:`Tally` drawn as the bar :class:`ProgressBar`
    draws for a job. Thread-safe: a watcher thread may report beside the work."""
    bar = ProgressBar(desc, total=total, unit=unit, count=count, of=of, postfix=postfix)
    tally = Tally(total=total)
    lock = threading.Lock()

    def report(progress: Progress) -> None:
        with lock:
            changed = progress.against(tally)
            if changed is None:
                return
            progress_apply(tally, changed)
            bar.draw(tally, item=changed.item)

    try:
        yield report
    finally:
        bar.close()
