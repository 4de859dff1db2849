"""The archive's new captures a nightly refresh holds, read two ways (``bench.nightly_refresh``).

* **On night N of the run** (the issue's reading): of the new captures the archive has indexed
  by night N (made after the first import, in the seeds' scopes), the share HACS holds after
  that night's refresh. Night 7 mixes a capture indexed on night 1, which had seven refreshes to
  be found, with one indexed on night 7, which had one; and the first nights follow an import
  that checked every site at once.
* **N nights after it became visible**: of the captures indexed on a night v with v + N − 1 no
  later than the last night, the share HACS held by the refresh of night v + N − 1 (the refresh
  of night v, after that night's indexing, is its first chance). A capture the archive has not
  indexed cannot be held by any refresh, so each capture's clock starts when it is indexed, and
  every capture counted had the same N refreshes to be found.

Pure bookkeeping over (urlkey, stamp) rows; a kind of host per row (``kind_of``) splits both.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence

Row = tuple[str, str]


class HeldCaptures:
    """When each new capture became visible in the archive's index, and when a run held it."""

    def __init__(self, kind_of: Callable[[str], str]) -> None:
        self.kind_of = kind_of
        self.visible: dict[Row, int] = {}  # the night the archive indexed it
        self.kinds: dict[Row, str] = {}

    def index(self, night: int, rows: Iterable[Row]) -> None:
        """The archive indexed ``rows`` on ``night`` (a row indexed twice keeps its first)."""
        for row in rows:
            if row not in self.visible:
                self.visible[row] = night
                self.kinds[row] = self.kind_of(row[0])

    def on_night(self, held: set[Row], night: int, kinds: Sequence[str]) -> dict[str, float]:
        """The first reading: the share of the rows indexed by ``night`` that ``held`` holds,
        per kind, over the seeds alone (every kind but the first), and over all."""
        total: Counter[str] = Counter()
        found: Counter[str] = Counter()
        for row, visible in self.visible.items():
            if visible <= night:
                kind = self.kinds[row]
                total[kind] += 1
                found[kind] += row in held
        return _shares(found, total, kinds)

    def after_visible(
        self, held_at: dict[Row, int], nights: int, last: int, kinds: Sequence[str]
    ) -> dict[str, float]:
        """The second reading: of the rows indexed on a night v ≤ ``last`` − ``nights`` + 1,
        the share held (``held_at``: the night a run first held each row) by night
        v + ``nights`` − 1; NaN when no row had that long."""
        total: Counter[str] = Counter()
        found: Counter[str] = Counter()
        for row, visible in self.visible.items():
            if visible + nights - 1 <= last:
                kind = self.kinds[row]
                total[kind] += 1
                found[kind] += held_at.get(row, last + 1) <= visible + nights - 1
        return _shares(found, total, kinds)


def _shares(found: Counter[str], total: Counter[str], kinds: Sequence[str]) -> dict[str, float]:
    """Each kind's share, the lone seeds' (every kind but the first) and all's; NaN for none."""
    lone = kinds[1:]
    shares = {k: _share(found[k], total[k]) for k in kinds}
    shares["lone"] = _share(sum(found[k] for k in lone), sum(total[k] for k in lone))
    shares["all"] = _share(sum(found.values()), sum(total.values()))
    return shares


def _share(found: int, total: int) -> float:
    return found / total if total else float("nan")
