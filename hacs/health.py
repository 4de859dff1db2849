"""Seed health: whether a seed has moved, is gone, is no longer captured or stopped changing.

Pure module (stdlib, NumPy and ``hacs.formats.canon``): no Django, no network. Times are days
since 1970-01-01 UTC (``hacs.clock.to_days``). The rules, which docs/using.md's "Seed health"
section states for librarians:

* A homepage capture (depth 0) is **good** when it is an observation (DESIGN rule 1), **gone**
  when it answered 404 or 410, **away** when it answered a redirect (3xx) whose target is not
  in the seed's scope, and **neutral** otherwise. The target is the capture's ``Location``
  resolved against the capture's URL; a target inside the scope (``SeedScope.contains``: other
  scheme, ``www.``, a trailing slash, an ``index.html`` or any page under the seed's path) is
  the web server tidying a URL, not a move, so such a redirect is neutral; a redirect whose
  target is not recorded is away, with the target unknown (when the target is the seed itself,
  as for http → https, the archive's crawler captures it next, and that good capture ends the
  run). Other answers (5xx, 403, non-HTML, revisits without their original) say nothing about
  where the seed lives and are neutral.
* The **trailing run** is the newest decisive (good, gone or away) captures after the last good
  one. The seed is flagged when that run holds at least ``recent`` captures, or when it is
  every decisive capture the seed has (nothing good was ever captured). It is **moved** when the
  newest capture of the run is away, **gone** when it is gone; the evidence is the unbroken
  stretch of that same answer at the end of the run: its first time and its length, and for a
  move the newest known target in it.
* **Not captured lately** (stale): the seed has homepage captures and its newest good one is
  missing or more than ``stale_after_days`` days before now.
* **Stopped changing**: from a homepage estimate with at least two observations, the span
  observed without a new link, q = last copy − τ (τ is the last update, or the first
  observation when there was none), is at least ``min_days`` and either the estimate has no
  update (or λ = 0) or q is at least ``factor`` mean intervals (q·λ ≥ factor). Under a Poisson
  process a quiet span of five mean intervals happens with probability e⁻⁵ ≈ 0.7 %.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from urllib.parse import urljoin

import numpy as np
from numpy.typing import ArrayLike, NDArray

from hacs.formats.canon import SeedScope

__all__ = [
    "GONE_STATUSES",
    "CaptureHealth",
    "Answer",
    "answer_of",
    "capture_health",
    "is_stale",
    "redirect_target",
    "stopped_changing",
]

#: HTTP statuses that say the page is gone (Not Found, Gone).
GONE_STATUSES = frozenset({404, 410})


class Answer(StrEnum):
    """What one homepage capture says about where the seed lives."""

    GOOD = "good"
    GONE = "gone"
    AWAY = "away"
    NEUTRAL = "neutral"


@dataclass(frozen=True)
class CaptureHealth:
    """What a seed's homepage captures say about it.

    ``problem`` is ``"moved"``, ``"gone"`` or ``""``; ``since``/``count`` describe the unbroken
    stretch of that answer at the end of the trailing run; ``target`` is the newest known
    redirect target in it (``""`` when unknown or not moved); ``status`` the newest answer's
    HTTP status. ``last_good`` is the newest good capture (None when there is none);
    ``captured`` whether there is any homepage capture at all.
    """

    problem: str = ""
    since: float | None = None
    count: int = 0
    target: str = ""
    status: int | None = None
    last_good: float | None = None
    captured: bool = False


def redirect_target(location: str | None, url: str) -> str:
    """The redirect's target: ``location`` resolved against the capture's ``url`` ("" when the
    location is not recorded)."""
    location = (location or "").strip()
    if not location:
        return ""
    try:
        return urljoin(url, location)
    except ValueError:
        return location


def answer_of(
    *, good: bool, status: int | None, location: str | None, url: str, scope: SeedScope
) -> tuple[Answer, str]:
    """One capture's answer and, for a redirect away, its target ("" when unknown)."""
    if good:
        return Answer.GOOD, ""
    if status in GONE_STATUSES:
        return Answer.GONE, ""
    if status is not None and 300 <= status < 400:
        target = redirect_target(location, url)
        if target and scope.contains(target):
            return Answer.NEUTRAL, ""
        return Answer.AWAY, target
    return Answer.NEUTRAL, ""


def capture_health(
    *,
    seed_url: str,
    times: Sequence[float],
    good: Sequence[bool],
    statuses: Sequence[int | None],
    locations: Sequence[str | None],
    urls: Sequence[str],
    recent: int = 3,
) -> CaptureHealth:
    """The moved/gone verdict and the newest good capture of one seed, from its homepage
    captures (any order; sorted by time here, stably). Raises ``ValueError`` for sequences of
    different lengths, ``recent`` < 1, or a seed URL that is not an http(s) URL."""
    n = len(times)
    if not (len(good) == len(statuses) == len(locations) == len(urls) == n):
        raise ValueError("times, good, statuses, locations and urls must have the same length")
    if recent < 1:
        raise ValueError(f"recent must be at least 1, not {recent}")
    scope = SeedScope.from_url(seed_url)
    order = sorted(range(n), key=lambda i: times[i])
    answers: list[tuple[float, Answer, str, int | None]] = []
    last_good: float | None = None
    for i in order:
        answer, target = answer_of(
            good=bool(good[i]), status=statuses[i], location=locations[i], url=urls[i], scope=scope
        )
        if answer is Answer.GOOD:
            last_good = float(times[i])
        if answer is not Answer.NEUTRAL:
            answers.append((float(times[i]), answer, target, statuses[i]))
    run = 0
    while run < len(answers) and answers[-1 - run][1] is not Answer.GOOD:
        run += 1
    if run == 0 or (run < recent and run < len(answers)):
        return CaptureHealth(last_good=last_good, captured=n > 0)
    newest = answers[-1][1]
    stretch = 0
    while stretch < run and answers[-1 - stretch][1] is newest:
        stretch += 1
    tail = answers[len(answers) - stretch :]
    target = next((t for _time, _a, t, _s in reversed(tail) if t), "")
    return CaptureHealth(
        problem="moved" if newest is Answer.AWAY else "gone",
        since=tail[0][0],
        count=stretch,
        target=target,
        status=answers[-1][3],
        last_good=last_good,
        captured=True,
    )


def is_stale(
    *, last_good: float | None, captured: bool, now: float, stale_after_days: float
) -> bool:
    """True when a captured seed's newest good homepage capture is missing or more than
    ``stale_after_days`` days before ``now``."""
    if stale_after_days < 0 or not math.isfinite(stale_after_days):
        raise ValueError(f"stale_after_days must be a finite number ≥ 0, not {stale_after_days}")
    if not captured:
        return False
    return last_good is None or now - last_good > stale_after_days


def stopped_changing(
    *,
    rate: ArrayLike,
    tau: ArrayLike,
    last_copy: ArrayLike,
    observations: ArrayLike,
    updates: ArrayLike,
    factor: float = 5.0,
    min_days: float = 365.0,
) -> NDArray[np.bool_]:
    """Which estimates say their site stopped changing (one flag per estimate).

    q = last copy − τ; stopped when observations ≥ 2, q ≥ ``min_days`` and (updates = 0 or
    λ = 0 or q·λ ≥ ``factor``). Unknown values (NaN) never flag.
    """
    if not (factor > 0 and math.isfinite(factor)):
        raise ValueError(f"factor must be a finite number > 0, not {factor}")
    if not (min_days >= 0 and math.isfinite(min_days)):
        raise ValueError(f"min_days must be a finite number ≥ 0, not {min_days}")
    lam = np.asarray(rate, dtype=np.float64)
    quiet = np.asarray(last_copy, dtype=np.float64) - np.asarray(tau, dtype=np.float64)
    obs = np.asarray(observations, dtype=np.float64)
    upd = np.asarray(updates, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        known = np.isfinite(lam) & np.isfinite(quiet) & (obs >= 2)
        never = (upd == 0) | (lam == 0)
        flagged = known & (quiet >= min_days) & (never | (quiet * lam >= factor))
    result: NDArray[np.bool_] = np.asarray(flagged, dtype=np.bool_)
    return result
