"""The nightly CDX request budget: which refresh queries to send tonight.

The Internet Archive answers about 24 CDX requests a minute, so a collection of the paper's size
(19,977 seeds) cannot be refreshed every night, even one query per host
(``hacs.formats.queries.plan_queries``). Each night the refresh spends a budget of requests, by
one rule that the nightly job, the paper-scale bench and the closed-loop replay all call
(:func:`choose_queries`):

* **The archive's capture rate** of a site (:func:`capture_rate`) is estimated from its capture
  history as HACS estimates update rates (DESIGN rule 5), except that captures, unlike changes,
  are seen whenever they happen: they are fully observed Poisson events, so the MLE over a window
  is n/T. A Gamma prior (``prior_captures`` events over ``prior_days``) keeps a site without a
  capture in the window at a small positive rate: (n + a)/(T + b), the posterior mean.
* **What a check is worth** (:func:`site_price`): the site's expected new captures since its last
  check, rate × age, times the days each would otherwise stay unknown (age / 2 on average): a
  capture HACS has not learned costs every night it stays unlearned, so the price is the
  capture-days a check ends, and the schedule it leads to checks a site about every 1/√rate,
  the square-root rule that keeps the fewest captures unknown on average. On a site of
  tomorrow's provisional list those capture-days count 1 + ``list_gain`` × its probability of
  change: a capture the list does not know of sends a crawler to a copy the archive already
  made, and moves the site's p. A query is worth the sum over its seeds, per request it costs;
  a seed alone on its host pays its one request alone.
* **Deadlines, spread** (:func:`deadline`): a site must be checked ``max_age_days`` after its
  last check. After its first import a site's first deadline falls between ``spread_from`` and
  1 × ``max_age_days``, by a hash of its id, so that a collection imported in one day does not
  fall due on one night a month later. A seed the archive had not captured (no capture from
  this archive yet) is asked again between 7 and 28 days after its first import (a hash of its
  id), then every 28 days (``unarchived_intervals``; never beyond ``max_age_days``).
* **The choice**: (a) the queries holding a site past its deadline are paid first, from at most
  ``due_share`` of the budget: those past ``max_age_days`` first, then by how long they are
  overdue; (b) then the queries not due, by worth per request, the highest first, ties by the
  query's key, while the budget allows: a query that does not fit is skipped and a smaller one
  after it may still fit; (c) what they leave goes to the due queries still waiting, in the
  order of (a). So sites past their deadline never take the whole budget while the list's own
  sites and the host queries want it. The choice says how many sites were due, how many of them
  wait, and how many past ``max_age_days`` wait (the max age is not kept tonight).

Pure (stdlib and the project's pure CDX query planner; no Django) and deterministic: the same
input gives the same choice in the same order.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date

from hacs import defaults
from hacs.formats.queries import CdxQuery
from hacs.index_lag import check_finite as _check_finite
from hacs.index_lag import check_positive as _check_positive

__all__ = [
    "LIST_GAIN",
    "RefreshChoice",
    "RefreshPolicy",
    "SiteState",
    "audit_draw",
    "audited_groups",
    "capture_rate",
    "choose_queries",
    "deadline",
    "default_budget",
    "expected_new",
    "site_price",
    "site_state",
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


#: How much more a capture-day unknown counts on a site of tomorrow's provisional list, per unit
#: of the site's probability of change (``site_price``): chosen on the paper-scale bench, where
#: it keeps the list's changes found within 2 % of a full refresh's at a list of 2 % of the
#: sites a day (docs/readings.md).
LIST_GAIN = 10.0
#: Days between the asks of a seed the archive had not captured: 7 to 28 days after its first
#: import (spread by a hash of its id: all in the first week, they took a third of its budget,
#: docs/readings.md), then every 28 (four weeks: monthly, with nights to spare before the
#: 30-day max age when the due share is full; never beyond the max age). Asked weekly twice
#: more in the first month, the 13 % of a paper-scale collection never captured took a fifth of
#: the budget for a month (docs/readings.md).
UNARCHIVED_INTERVALS = (7.0, 28.0)


@dataclass(frozen=True)
class RefreshPolicy:
    """The nightly refresh's rule, with its settings (the module docstring): the longest a
    site waits between two checks, the share of the budget that pays for sites past their
    deadline, the list's gain, how far a first import's deadlines are spread and the back-off of
    seeds the archive had not captured."""

    max_age_days: float = defaults.REFRESH_MAX_AGE_DAYS
    due_share: float = defaults.REFRESH_DUE_SHARE
    list_gain: float = LIST_GAIN
    spread_from: float = 0.5
    unarchived_intervals: tuple[float, ...] = UNARCHIVED_INTERVALS

    def __post_init__(self) -> None:
        _check_positive("max_age_days", self.max_age_days)
        if not 0 < self.due_share <= 1:
            raise ValueError(f"due_share must lie in (0, 1]; got {self.due_share}")
        if not (math.isfinite(self.list_gain) and self.list_gain >= 0):
            raise ValueError(f"list_gain must be a finite number ≥ 0; got {self.list_gain}")
        if not 0 < self.spread_from <= 1:
            raise ValueError(f"spread_from must lie in (0, 1]; got {self.spread_from}")
        if not self.unarchived_intervals:
            raise ValueError("unarchived_intervals needs at least one interval")
        for interval in self.unarchived_intervals:
            _check_positive("each of unarchived_intervals", interval)


@dataclass(frozen=True)
class SiteState:
    """What the refresh knows of a site: its archive capture rate (a day); when it was last
    checked and first checked, its first import (days; None: never, so it is due; an unknown
    first check counts as long ago); its probability of change when tomorrow's provisional list
    holds it (``stake``, 0 when not); and whether HACS holds a capture of it from this archive
    (``captured``: False for a seed the archive had not captured, asked on a back-off)."""

    site_id: int
    rate: float
    checked: float | None
    first_checked: float | None = None
    stake: float = 0.0
    captured: bool = True


#: The captures of the last year give a site's capture rate (:func:`site_state`).
RATE_WINDOW_DAYS = 365.0


def site_state(
    site_id: int,
    capture_times: Sequence[float],
    *,
    now: float,
    checked: float | None,
    first_checked: float | None = None,
    stake: float = 0.0,
    captured: bool = True,
    older: bool = False,
) -> SiteState:
    """A site's state as the nightly job and the benches build it: its capture rate over the
    last :data:`RATE_WINDOW_DAYS` (:func:`capture_rate` of its capture times in that window,
    days; ``older``: it holds a capture from before the window, so the archive watched it the
    whole window), its checks (days; one after ``now``, a clock that moved back, counts as now)
    and the rest as given."""
    times = sorted(t for t in capture_times if t > now - RATE_WINDOW_DAYS)
    if older:
        times.insert(0, now - RATE_WINDOW_DAYS)  # opens the exposure at the window's start
    rate = capture_rate(times, now, window_days=RATE_WINDOW_DAYS)
    if checked is not None:
        checked = min(checked, now)
        if first_checked is not None:
            first_checked = min(first_checked, checked)
    return SiteState(site_id, rate, checked, first_checked, stake, captured)


@dataclass(frozen=True)
class RefreshChoice:
    """Tonight's refresh: the queries to send, in send order, and what waits.

    ``left_out`` maps every site of a query not sent to why (``"budget"``). ``due_sites`` counts
    the sites past their deadline (:func:`deadline`) and ``due_left`` those of them left out;
    ``overdue_sites`` and ``overdue_left`` the same for the sites checked ``max_age_days`` ago or
    more (or never), so the max age is kept tonight when ``overdue_left`` is 0.
    ``due_requests`` are the requests spent on queries holding a site past its deadline;
    ``unarchived_sites`` and ``unarchived_asked`` count the seeds the archive had not captured,
    and those asked tonight.
    ``expected_covered`` and ``expected_total`` are the expected new captures
    (:func:`expected_new`) of the sites checked and of all sites; a never-checked site counts as
    checked ``max_age_days`` ago.
    """

    queries: tuple[CdxQuery, ...]
    requests: int
    budget: int
    left_out: Mapping[int, str]
    due_sites: int
    due_left: int
    overdue_sites: int
    overdue_left: int
    due_requests: int
    unarchived_sites: int
    unarchived_asked: int
    expected_covered: float
    expected_total: float

    @property
    def max_age_kept(self) -> bool:
        return self.overdue_left == 0

    @property
    def checked_sites(self) -> tuple[int, ...]:
        """The sites the chosen queries check, in send order."""
        return tuple(site for query in self.queries for site in query.site_ids)


def deadline(site: SiteState, policy: RefreshPolicy) -> float:
    """When ``site`` must be checked by (days; −∞ for a site never checked).

    ``max_age_days`` after its last check; but after its first import (its last check is its
    first), between ``spread_from`` and 1 × ``max_age_days`` after it, by a hash of its id
    (:func:`_spread`), so that sites imported together fall due over the second half of the
    window rather than on one night. A seed the archive had not captured is asked again after
    ``unarchived_intervals`` (7 to 28, then every 28 days: :func:`_unarchived_first`,
    :func:`_unarchived_interval`), none beyond ``max_age_days``.
    """
    if site.checked is None:
        return -math.inf
    first = site.first_checked
    fresh = first is not None and site.checked <= first
    if site.captured:
        if fresh:
            return site.checked + policy.max_age_days * _spread(site.site_id, policy.spread_from)
        return site.checked + policy.max_age_days
    if fresh:
        return site.checked + min(_unarchived_first(site.site_id, policy), policy.max_age_days)
    elapsed = math.inf if first is None else site.checked - first
    return site.checked + min(_unarchived_interval(elapsed, policy), policy.max_age_days)


def _unarchived_first(site_id: int, policy: RefreshPolicy) -> float:
    """The first ask of a seed the archive had not captured, after its import: between the
    first interval and the second (7 to 28 days with the defaults), by a hash of its id, so that
    a collection's uncaptured seeds do not all come back in its first week, where their asks
    took the budget of the busiest sites; the first interval exactly when nothing is spread
    (``spread_from`` 1); with one interval, spread as the deadlines are."""
    intervals = policy.unarchived_intervals
    if len(intervals) == 1:
        return intervals[0] * _spread(site_id, policy.spread_from)
    if policy.spread_from >= 1:
        return intervals[0]
    low, high = intervals[0], max(intervals[0], intervals[1])
    return low + (high - low) * _spread(site_id, 0.0)


def _unarchived_interval(elapsed: float, policy: RefreshPolicy) -> float:
    """The wait after an ask made ``elapsed`` days after a seed's first import: the asks fall
    at the intervals' running sums (7, 35, 63… days with the default 7 and 28), so an ask
    before the first sum waits the first interval, one before the second the second, and so on;
    the last repeats."""
    intervals = policy.unarchived_intervals
    passed = 0.0
    for interval in intervals[:-1]:
        passed += interval
        if elapsed < passed:
            return interval
    return intervals[-1]


def _spread(site_id: int, low: float) -> float:
    """A number in [low, 1) fixed for a site: splitmix64 of its id, scaled."""
    x = (site_id * 0x9E3779B97F4A7C15 + 0x632BE59BD9B4E019) & _MASK
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _MASK
    x ^= x >> 31
    return low + (1.0 - low) * (x / 2.0**64)


_MASK = (1 << 64) - 1


def site_price(site: SiteState, now: float, policy: RefreshPolicy) -> float:
    """What checking ``site`` tonight is worth (the module docstring): its expected new
    captures since its last check, rate × age (a never-checked site's age is ``max_age_days``),
    times the days each would otherwise stay unknown, age / 2 on average, counted
    1 + ``list_gain`` × ``stake`` times (``stake``: its probability of change when tomorrow's
    provisional list holds it)."""
    age = policy.max_age_days if site.checked is None else now - site.checked
    return site.rate * age * (age / 2) * (1 + policy.list_gain * site.stake)


def choose_queries(
    queries: Sequence[CdxQuery],
    sites: Mapping[int, SiteState],
    *,
    now: float,
    budget: int,
    policy: RefreshPolicy | None = None,
    cost: Mapping[str, int] | None = None,
) -> RefreshChoice:
    """The queries to send tonight within ``budget`` CDX requests, by the module's rule.

    ``sites`` holds the state of every site of ``queries`` (each site in one query only);
    ``cost[key]`` is the requests a query is expected to take (its pages the last time, and one
    more when its size is to be asked; default 1). Raises ``ValueError`` naming the query or
    site for a site without a state, a site in two queries, a check after ``now``, a first check
    after the last, a rate or stake out of range, a cost below 1 or a negative budget.
    """
    policy = policy or RefreshPolicy()
    _check_finite("now", now)
    if isinstance(budget, bool) or not isinstance(budget, int) or budget < 0:
        raise ValueError(f"budget must be a whole number of requests ≥ 0; got {budget!r}")
    planned = _planned(queries, sites, now, policy, cost or {})
    chosen = _select(planned, budget, policy)
    return _summary(planned, chosen, budget)


def _select(planned: list[_Planned], budget: int, policy: RefreshPolicy) -> list[_Planned]:
    """The rule's choice, in send order: (a) the due share, past the max age first, then the
    longest overdue; (b) the queries not due, by worth per request; (c) what they leave, to the
    due ones left. A query that does not fit is skipped and a smaller one after it may fit."""
    chosen: list[_Planned] = []
    due = sorted(
        (p for p in planned if p.due_sites),
        key=lambda p: (not p.overdue_sites, -p.late, p.query.key),
    )
    share = min(budget, math.ceil(policy.due_share * budget - 1e-9))
    if budget >= 2:
        share = min(share, budget - 1)
    left = budget
    for p in due:
        if p.cost <= share:
            chosen.append(p)
            share -= p.cost
            left -= p.cost
    sent = {id(p) for p in chosen}
    others = sorted(
        (p for p in planned if not p.due_sites), key=lambda p: (-p.value / p.cost, p.query.key)
    )
    for p in (*others, *(p for p in due if id(p) not in sent)):
        if id(p) not in sent and p.cost <= left:
            chosen.append(p)
            sent.add(id(p))
            left -= p.cost
    return chosen


def _summary(planned: list[_Planned], chosen: list[_Planned], budget: int) -> RefreshChoice:
    """Tonight's choice with what it spends and what waits."""
    sent = {id(p) for p in chosen}
    waiting = [p for p in planned if id(p) not in sent]
    return RefreshChoice(
        queries=tuple(p.query for p in chosen),
        requests=sum(p.cost for p in chosen),
        budget=budget,
        left_out={site: LEFT_OUT_BUDGET for p in waiting for site in p.query.site_ids},
        due_sites=sum(p.due_sites for p in planned),
        due_left=sum(p.due_sites for p in waiting),
        overdue_sites=sum(p.overdue_sites for p in planned),
        overdue_left=sum(p.overdue_sites for p in waiting),
        due_requests=sum(p.cost for p in chosen if p.due_sites),
        unarchived_sites=sum(p.unarchived for p in planned),
        unarchived_asked=sum(p.unarchived for p in chosen),
        expected_covered=math.fsum(p.expected for p in chosen),
        expected_total=math.fsum(p.expected for p in planned),
    )


@dataclass(frozen=True)
class _Planned:
    """A query with what the choice reads of it."""

    query: CdxQuery
    cost: int
    value: float  # what checking its sites is worth (site_price)
    expected: float  # expected new captures of its sites
    due_sites: int  # its sites past their deadline
    overdue_sites: int  # its sites past the max age (or never checked)
    late: float  # the most days any of its sites is past its deadline (∞: never checked)
    unarchived: int  # its seeds the archive had not captured


def _planned(
    queries: Sequence[CdxQuery],
    sites: Mapping[int, SiteState],
    now: float,
    policy: RefreshPolicy,
    costs: Mapping[str, int],
) -> list[_Planned]:
    """Each query with its cost and what its sites are worth, the input checked."""
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
            members.append(_checked_state(sites[site_id], now))
        requests = costs.get(query.key, 1)
        if isinstance(requests, bool) or not isinstance(requests, int) or requests < 1:
            raise ValueError(
                f"cost of query {query.key!r} must be a whole number ≥ 1; got {requests!r}"
            )
        planned.append(_plan(query, members, requests, now, policy))
    return planned


def _checked_state(site: SiteState, now: float) -> SiteState:
    """``site`` if its fields make sense at ``now``; else a ``ValueError`` naming it."""
    name = f"site {site.site_id}"
    if not (math.isfinite(site.rate) and site.rate >= 0):
        raise ValueError(f"{name}: rate must be a finite number ≥ 0; got {site.rate}")
    if not 0 <= site.stake <= 1:
        raise ValueError(f"{name}: stake must lie in [0, 1]; got {site.stake}")
    if site.checked is not None:
        _check_finite(f"{name}'s check", site.checked)
        if site.checked > now:
            raise ValueError(f"{name} was checked ({site.checked}) after now ({now})")
    if site.first_checked is not None:
        _check_finite(f"{name}'s first check", site.first_checked)
        if site.checked is None or site.first_checked > site.checked:
            raise ValueError(
                f"{name} was first checked ({site.first_checked}) after its last check "
                f"({site.checked})"
            )
    return site


def _plan(
    query: CdxQuery, members: list[SiteState], cost: int, now: float, policy: RefreshPolicy
) -> _Planned:
    value = expected = 0.0
    due_sites = overdue_sites = unarchived = 0
    late = -math.inf
    for site in members:
        value += site_price(site, now, policy)
        checked = now - policy.max_age_days if site.checked is None else site.checked
        expected += expected_new(site.rate, checked, now)
        ends = deadline(site, policy)
        if ends <= now:
            due_sites += 1
            late = max(late, now - ends)
        overdue_sites += site.checked is None or now - site.checked >= policy.max_age_days
        unarchived += not site.captured
    return _Planned(query, cost, value, expected, due_sites, overdue_sites, late, unarchived)


def audit_draw(day: date, key: str) -> float:
    """The recall audit's draw for a group query on a day, in [0, 1): the group is audited
    (one of its homepages also asked exactly) when the draw falls below the audit's share. A
    hash of both, so that every group is audited now and then, a run is repeatable, and the
    nightly choice knows which groups tonight's audit samples (each costs a request more)."""
    digest = hashlib.sha256(f"{day.isoformat()} {key}".encode()).hexdigest()
    return int(digest[:8], 16) / 2**32


def audited_groups(queries: Sequence[CdxQuery], day: date, share: float) -> set[str]:
    """The keys of the group queries tonight's recall audit samples (:func:`audit_draw`)."""
    return {q.key for q in queries if q.is_group and audit_draw(day, q.key) < share}


def default_budget(cdx_per_minute: float, minutes: float = 40.0) -> int:
    """The CDX requests a night's refresh may send: the archive's rate × the minutes given to it,
    rounded down (960 at 24 a minute in 40 minutes, which leaves the 05:00 list room)."""
    _check_positive("cdx_per_minute", cdx_per_minute)
    _check_positive("minutes", minutes)
    # round() first: 0.1 × 30 is 3.0000000000000004 and 0.7 × 30 is 20.999999999999996.
    return math.floor(round(cdx_per_minute * minutes, 9))
