"""What a policy of the closed-loop replay (``hacs.replay``) knows on a day. Kept apart so that
the peers' policies (``hacs.baselines``) and the replay that runs them both build on it."""

from __future__ import annotations

from dataclasses import dataclass
from itertools import chain

import numpy as np
from numpy.typing import NDArray

from hacs.defaults import HISTORY_DAYS

__all__ = ["BoolArray", "FloatArray", "IntArray", "ReplayState"]

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]
BoolArray = NDArray[np.bool_]


@dataclass
class ReplayState:
    """What a policy knows on a day: every site's timeline so far, and its newest copy."""

    times: list[list[float]]
    updated: list[list[bool]]
    last_copy: FloatArray  # −∞ for a site with no copy at all
    now: float
    e_days: float
    rng: np.random.Generator
    true_rates: FloatArray | None
    budget: int | None = None  # the day's number of crawls k (LambdaCrawl spends it)
    start: float = -np.inf  # the period's first day: the timelines' crawls are from it on
    history_days: float = HISTORY_DAYS  # the crawl list's history window w

    @property
    def list_instant(self) -> float:
        """The reference instant of the day's crawl list: the end of the day of ``now``
        (``hacs.clock.reference_instant``; times in days from a midnight UTC)."""
        return float(np.floor(self.now)) + 1.0

    def arrays(self) -> tuple[FloatArray, BoolArray, IntArray]:
        counts = np.array([len(t) for t in self.times], dtype=np.int64)
        offsets = np.zeros(counts.size + 1, dtype=np.int64)
        np.cumsum(counts, out=offsets[1:])
        times = np.fromiter(chain.from_iterable(self.times), np.float64, int(offsets[-1]))
        flags = np.fromiter(chain.from_iterable(self.updated), np.bool_, int(offsets[-1]))
        return times, flags, offsets
