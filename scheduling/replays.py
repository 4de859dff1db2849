"""Closed-loop replay on the collection's own history (``hacs.replay``): the `simulate` command
and the Evaluation page's replay section.

Every site's observations before the period are its history; the changes a crawl can find are
the archive's update observations in the period (a change seen at time x happened by x), or,
for the demo archive, its true change times (``truth.json``), which also give the list that
knows the true rates. Two schedules crawl operators know run beside HACS's (``hacs.baselines``):
Apache Nutch's adaptive fetch interval, seeded from the history, and LambdaCrawl's optimal crawl
rates for the posterior mean rates. The newest GP4C and LWS learned at the level are replayed
beside them.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from archive.models import Site
from hacs import defaults
from hacs.clock import day_start, to_days
from hacs.formats.canon import seed_key
from hacs.replay import PolicyResult, replay
from scheduling.estimates import timelines_load
from scheduling.learning import learned_replay_policies

POLICY_LABELS = {
    "hacs": "HACS (posterior, since the newest copy)",
    "mle_since_copy": "MLE, since the newest copy",
    "paper": "The paper's g (since the last update)",
    "round_robin": "Round-robin (oldest copy first)",
    "random": "Random",
    "nutch_adaptive": "Nutch adaptive (interval ×0.8 / ×1.4)",
    "lambdacrawl": "LambdaCrawl (optimal rates, posterior means)",
    "true_rates": "A list that knows the true rates",
}
DEFAULT_SHARES = (0.02, 0.05)


def replay_collection(
    *,
    level: str,
    start: date,
    days: int = 28,
    shares: tuple[float, ...] = DEFAULT_SHARES,
    e_days: float = defaults.E_DAYS,
    truth: dict[str, Any] | None = None,
    seed: int = 0,
    progress: Callable[[float], None] | None = None,
) -> dict[str, Any]:
    """Replay ``days`` days of crawling from ``start`` for each budget share; JSON-ready.
    ``progress`` receives the finished share of the replays, 0 … 1."""
    begin = day_start(start)
    stop = day_start(start + timedelta(days=days))
    assert begin is not None and stop is not None
    t0 = to_days(begin)
    site_ids = [int(pk) for pk in Site.objects.order_by("pk").values_list("pk", flat=True)]
    arrays = _history_arrays(level, begin, site_ids)
    if truth is None:
        changes, rates = _archive_changes(level, stop, t0, site_ids), None
    else:
        changes, rates = _truth_changes(truth, level, site_ids)
    policies = [p for p in POLICY_LABELS if p != "true_rates" or rates is not None]
    learned = learned_replay_policies(level)
    labels = {**POLICY_LABELS, **{name: label for name, (_, label) in learned.items()}}
    extra = {name: policy for name, (policy, _) in learned.items()}
    period = _Period(arrays, changes, t0, days, policies, e_days, rates, seed, extra)
    budgets = []
    for n, share in enumerate(shares):
        budget = min(max(1, round(share * len(site_ids))), len(site_ids))
        done = _share_progress(progress, n, len(shares))
        results = period.replay(budget, done) if site_ids else []
        budgets.append({"share": share, "budget": budget, "rows": _result_rows(results, labels)})
    return {
        "level": level,
        "start": start.isoformat(),
        "days": days,
        "e_days": e_days,
        "sites": len(site_ids),
        "changes_from": "the demo archive's truth" if truth else "the archive's updates",
        "budgets": budgets,
    }


@dataclass(frozen=True)
class _Period:
    """What every budget's replay of the period shares (``hacs.replay.replay``'s arguments)."""

    history: tuple[np.ndarray, np.ndarray, np.ndarray]
    changes: list[list[float]]
    start: float
    days: int
    policies: list[str]
    e_days: float
    true_rates: list[float] | None
    seed: int
    extra: dict[str, Any]

    def replay(self, budget: int, progress: Callable[[float], None]) -> list[PolicyResult]:
        """The period replayed with ``budget`` crawls a day."""
        return replay(
            history=self.history,
            changes=self.changes,
            start=self.start,
            days=self.days,
            budget=budget,
            policies=self.policies,
            e_days=self.e_days,
            true_rates=self.true_rates,
            seed=self.seed,
            extra=self.extra,
            progress=progress,
        )


def _history_arrays(
    level: str, begin: datetime, site_ids: list[int]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every site, in pk order: its history before the period (possibly empty), as the
    (times, updated, offsets) arrays ``hacs.replay.replay`` reads."""
    history = timelines_load(level=level, end=begin)
    position = {pk: i for i, pk in enumerate(site_ids)}
    times: list[list[float]] = [[] for _ in site_ids]
    flags: list[list[bool]] = [[] for _ in site_ids]
    for i, pk in enumerate(history.site_ids.tolist()):
        a, b = int(history.offsets[i]), int(history.offsets[i + 1])
        times[position[pk]] = history.times[a:b].tolist()
        flags[position[pk]] = history.updated[a:b].tolist()
    counts = np.array([len(t) for t in times], dtype=np.int64)
    offsets = np.concatenate(([0], np.cumsum(counts))).astype(np.int64)
    return (
        np.array([x for t in times for x in t], dtype=np.float64),
        np.array([x for f in flags for x in f], dtype=np.bool_),
        offsets,
    )


def _archive_changes(
    level: str, stop: datetime, t0: float, site_ids: list[int]
) -> list[list[float]]:
    """The changes a crawl can find: the archive's update observations from ``t0`` to ``stop``."""
    whole = timelines_load(level=level, end=stop)
    position = {pk: i for i, pk in enumerate(site_ids)}
    changes: list[list[float]] = [[] for _ in site_ids]
    for i, pk in enumerate(whole.site_ids.tolist()):
        a, b = int(whole.offsets[i]), int(whole.offsets[i + 1])
        seen = whole.times[a:b][whole.updated[a:b]]
        changes[position[pk]] = seen[seen >= t0].tolist()
    return changes


def _share_progress(
    progress: Callable[[float], None] | None, n: int, shares: int
) -> Callable[[float], None]:
    """The progress callback of the ``n``-th of ``shares`` replays: the whole run's share."""

    def done(fraction: float) -> None:
        if progress is not None:
            progress((n + fraction) / shares)

    return done


def _result_rows(results: list[PolicyResult], labels: dict[str, str]) -> list[dict[str, Any]]:
    """One JSON-ready row per replayed policy, labelled."""
    return [
        {
            **asdict(r),
            "label": labels[r.policy],
            "utilisation": r.utilisation,
            "coverage": r.coverage,
        }
        for r in results
    ]


def _truth_changes(
    truth: dict[str, Any], level: str, site_ids: list[int]
) -> tuple[list[list[float]], list[float]]:
    """True change times (days since 1970) and rates of the stored sites, by homepage key."""
    origin = date.fromisoformat(str(truth["generator"]["start"]))
    base = day_start(origin)
    assert base is not None
    offset = to_days(base)
    by_key = {seed_key(s["seed_url"]): s for s in truth["sites"]}
    keys = dict(Site.objects.filter(pk__in=site_ids).values_list("pk", "canonical_key"))
    changes: list[list[float]] = []
    rates: list[float] = []
    for pk in site_ids:
        site = by_key.get(keys[pk])
        if site is None:
            changes.append([])
            rates.append(0.0)
            continue
        changes.append([offset + float(x) for x in site["update_times"][level]])
        rates.append(float(site["rate_per_day"][level]))
    return changes, rates


def truth_load(path: Path) -> dict[str, Any]:
    """A demo archive's ``truth.json`` (``make_demo_archive`` writes it)."""
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    if "sites" not in data or "generator" not in data:
        raise ValueError(f"{path} is not a demo archive's truth file (no sites or generator)")
    return data


__all__ = ["DEFAULT_SHARES", "POLICY_LABELS", "replay_collection", "truth_load"]
