"""The nightly CDX request budget: which refresh queries to send tonight (issue 26, point 2).

The Internet Archive answers about 24 CDX requests a minute, so a collection of the paper's size
(19,977 seeds) cannot be refreshed every night, even one query per host
(``hacs.formats.queries.plan_queries``). Each night the refresh spends a budget of requests where
new captures are most likely, and still checks every site at least every ``max_age_days``:

* **The archive's capture rate** of a site (:func:`capture_rate`) is estimated from its capture
  history as HACS estimates update rates (DESIGN rule 5), except that captures, unlike changes,
  are seen whenever they happen: they are fully observed Poisson events, so the MLE over a window
  is n/T. A Gamma prior (``prior_captures`` events over ``prior_days``) keeps a site without a
  capture in the window at a small positive rate: (n + a)/(T + b), the posterior mean.
* **Expected new captures** of a site since its last check (:func:`expected_new`): rate × the
  days since that check.
* **The choice** (:func:`choose_queries`): (a) *due* queries, those holding a site checked
  ``max_age_days`` ago or more, or never, go first, most overdue first; (b) then the others by
  expected new captures per request, the highest first, ties by the query's key, while the
  budget allows: a query that does not fit is skipped and a smaller one after it may still fit;
  (c) when the due queries alone exceed the budget, the most overdue go first up to the budget
  and the choice says how many due sites wait (the max age is not kept tonight).

Pure (stdlib and the project's pure CDX query planner; no Django) and deterministic: the same
input gives the same choice in the same order.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass

from hacs.formats.queries import CdxQuery

__all__ = [
    "LIST_OTHERS_WEIGHT",
    "RefreshChoice",
    "SiteState",
    "capture_rate",
    "choose_queries",
    "default_budget",
    "expected_new",
    "list_weights",
]

#: Why a site was left out of tonight's refresh.
LEFT_OUT_BUDGET = "budget"


def capture_rate(
    times_days: Sequence[float],
    now_days: float,
    *,
    window_days: float = 365.0,
    prior_captures: float = 1.0,
    prior_days: float = 365.0,
) -> float:
    """The archive's capture rate of one site, in captures a day, at ``now_days``.

    The captures of the ``window_days`` before ``now_days`` are Poisson events seen in full, so
    the rate's MLE is n/T, and with a Gamma(a = ``prior_captures``, b = ``prior_days``) prior
    its posterior mean is (n + a)/(T + b) (:func:`_posterior_mean_rate`). The exposure T starts
    where the window starts or, for a site the archive first captured inside the window, at its
    first capture: before it the archive was not watching the site. That first capture opens the
    exposure and is not one of its n events (given a Poisson event at t₁, the events after it in
    (t₁, now] are Poisson with mean λ·(now − t₁)); a site whose first capture is older than the
    window has every capture of the window counted.

    Times are taken as given: two captures at the same instant count twice (a CDX answer lists
    distinct (urlkey, timestamp) rows; merging the rows of several urls of one page is the
    caller's reading). Captures after ``now_days`` are not made yet and are ignored. With no
    capture at all, T = 0 and the rate is the prior's mean a/b; with neither prior nor exposure
    it is 0.
    """
    _check_finite("now_days", now_days)
    _check_positive("window_days", window_days)
    if prior_captures < 0 or prior_days < 0:
        raise ValueError(
            f"the prior needs prior_captures ≥ 0 and prior_days ≥ 0; "
            f"got {prior_captures} and {prior_days}"
        )
    made = [float(t) for t in times_days if t <= now_days]
    if any(not math.isfinite(t) for t in made):
        raise ValueError("capture times must be finite days")
    if not made:
        return _posterior_mean_rate(0, 0.0, prior_captures, prior_days)
    first = min(made)
    opens = max(now_days - window_days, first)
    n = sum(1 for t in made if t > opens)
    return _posterior_mean_rate(n, now_days - opens, prior_captures, prior_days)


def _posterior_mean_rate(n: int, exposure: float, a: float, b: float) -> float:
    """(n + a)/(T + b): the Gamma–Poisson posterior mean of a rate seen as n events in T days
    (HACS paper, Section II-B: the Poisson model of a site's events; with a = b = 0 the MLE n/T
    of fully observed events). 0 when nothing was seen and there is no prior."""
    denominator = exposure + b
    return (n + a) / denominator if denominator > 0 else 0.0


def expected_new(rate: float, checked_days: float, now_days: float) -> float:
    """The captures the archive most likely made of a site since it was last checked:
    rate × (now − checked)."""
    if not rate >= 0 or not math.isfinite(rate):
        raise ValueError(f"rate must be a finite number ≥ 0; got {rate}")
    _check_finite("checked_days", checked_days)
    _check_finite("now_days", now_days)
    if checked_days > now_days:
        raise ValueError(f"checked ({checked_days}) lies after now ({now_days})")
    return rate * (now_days - checked_days)


@dataclass(frozen=True)
class SiteState:
    """What the refresh knows of a site: its archive capture rate (a day) and when it was last
    checked (days; None: never, so it is due)."""

    site_id: int
    rate: float
    checked: float | None


@dataclass(frozen=True)
class RefreshChoice:
    """Tonight's refresh: the queries to send, in send order, and what waits.

    ``left_out`` maps every site of a query not sent to why (``"budget"``). ``due_sites`` counts
    the sites checked ``max_age_days`` ago or more (or never); ``due_left`` those of them left out,
    so the max age is kept tonight when it is 0. ``expected_covered`` and ``expected_total`` are
    the expected new captures (:func:`expected_new`) of the sites checked and of all sites; a
    never-checked site counts as checked ``max_age_days`` ago.
    """

    queries: tuple[CdxQuery, ...]
    requests: int
    budget: int
    left_out: Mapping[int, str]
    due_sites: int
    due_left: int
    expected_covered: float
    expected_total: float

    @property
    def max_age_kept(self) -> bool:
        return self.due_left == 0

    @property
    def checked_sites(self) -> tuple[int, ...]:
        """The sites the chosen queries check, in send order."""
        return tuple(site for query in self.queries for site in query.site_ids)


def choose_queries(
    queries: Sequence[CdxQuery],
    sites: Mapping[int, SiteState],
    *,
    now: float,
    budget: int,
    max_age_days: float,
    cost: Mapping[str, int] | None = None,
    weight: Mapping[int, float] | None = None,
) -> RefreshChoice:
    """The queries to send tonight within ``budget`` CDX requests, by the module's rule.

    ``sites`` holds the state of every site of ``queries`` (each site in one query only);
    ``cost[key]`` is the requests a query is expected to take (its pages the last time; default
    1). Raises ``ValueError`` naming the query or site for a site without a state, a site in two
    queries, a check after ``now``, a cost below 1 or a negative budget.
    """
    _check_finite("now", now)
    _check_positive("max_age_days", max_age_days)
    if isinstance(budget, bool) or not isinstance(budget, int) or budget < 0:
        raise ValueError(f"budget must be a whole number of requests ≥ 0; got {budget!r}")
    costs = cost or {}
    planned: list[_Planned] = []
    owner: dict[int, str] = {}
    for query in queries:
        members = []
        for site_id in query.site_ids:
            if site_id in owner:
                raise ValueError(
                    f"site {site_id} is in two queries: {owner[site_id]!r}, {query.key!r}"
                )
            owner[site_id] = query.key
            if site_id not in sites:
                raise ValueError(f"site {site_id} of query {query.key!r} has no state")
            members.append(sites[site_id])
        requests = costs.get(query.key, 1)
        if isinstance(requests, bool) or not isinstance(requests, int) or requests < 1:
            raise ValueError(
                f"cost of query {query.key!r} must be a whole number ≥ 1; got {requests!r}"
            )
        planned.append(_plan(query, members, requests, now, max_age_days, weight or {}))

    due = sorted((p for p in planned if p.due), key=lambda p: (-p.overdue, p.query.key))
    others = sorted(
        (p for p in planned if not p.due), key=lambda p: (-p.value / p.cost, p.query.key)
    )
    chosen: list[_Planned] = []
    left = budget
    for p in (*due, *others):
        if p.cost <= left:
            chosen.append(p)
            left -= p.cost
    sent = {id(p) for p in chosen}
    waiting = [p for p in planned if id(p) not in sent]
    return RefreshChoice(
        queries=tuple(p.query for p in chosen),
        requests=budget - left,
        budget=budget,
        left_out={site: LEFT_OUT_BUDGET for p in waiting for site in p.query.site_ids},
        due_sites=sum(p.due_sites for p in planned),
        due_left=sum(p.due_sites for p in waiting),
        expected_covered=math.fsum(p.value for p in chosen),
        expected_total=math.fsum(p.value for p in planned),
    )


@dataclass(frozen=True)
class _Planned:
    """A query with what the choice reads of it."""

    query: CdxQuery
    cost: int
    value: float  # expected new captures of its sites
    due: bool
    due_sites: int
    overdue: float  # the days since its least recently checked site was checked (∞: never)


def _plan(
    query: CdxQuery, members: list[SiteState], cost: int, now: float, max_age_days: float,
    weight: Mapping[int, float],
) -> _Planned:  # fmt: skip
    value = 0.0
    due_sites = 0
    overdue = -math.inf
    for site in members:
        share = weight.get(site.site_id, 1.0)
        if site.checked is None:
            age = math.inf
            value += expected_new(site.rate, now - max_age_days, now) * share
        else:
            if site.checked > now:
                raise ValueError(
                    f"site {site.site_id} was checked ({site.checked}) after now ({now})"
                )
            age = now - site.checked
            value += expected_new(site.rate, site.checked, now) * share
        due_sites += age >= max_age_days
        overdue = max(overdue, age)
    return _Planned(query, cost, value, due_sites > 0, due_sites, overdue)


#: How much a site off tonight's provisional list counts beside one on it (:func:`list_weights`).
LIST_OTHERS_WEIGHT = 0.01


def list_weights(
    listed: Collection[int], site_ids: Iterable[int], *, others: float = LIST_OTHERS_WEIGHT
) -> dict[int, float]:
    """The weights ``choose_queries`` gives the expected new captures of ``site_ids``: 1 for
    the sites on tonight's provisional list (the list the defaults would build, at twice its
    budget), ``others`` for the rest. A capture HACS has not learned matters most where the list
    is about to send a crawler: it would crawl a copy the archive already made, and find
    nothing (measured by the closed-loop replay, ``bench.refresh_replay``; docs/readings.md)."""
    if not 0 <= others <= 1:
        raise ValueError(f"others must lie in [0, 1]; got {others}")
    chosen = set(listed)
    return {site: 1.0 if site in chosen else others for site in site_ids}


def default_budget(cdx_per_minute: float, minutes: float = 40.0) -> int:
    """The CDX requests a night's refresh may send: the archive's rate × the minutes given to it,
    rounded down (960 at 24 a minute in 40 minutes, which leaves the 05:00 list room)."""
    _check_positive("cdx_per_minute", cdx_per_minute)
    _check_positive("minutes", minutes)
    # round() first: 0.1 × 30 is 3.0000000000000004 and 0.7 × 30 is 20.999999999999996.
    return math.floor(round(cdx_per_minute * minutes, 9))


def _check_finite(name: str, value: float) -> None:
    if not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number of days; got {value}")


def _check_positive(name: str, value: float) -> None:
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be a finite number > 0; got {value}")
