"""The nightly refresh as HACS ships it, night after night, in process (``bench.nightly_refresh``).

**The choice is the nightly job's own.** Each night the states that
``operations.refresh.refresh_choice`` builds — ``hacs.refresh_budget.site_state`` of each seed
the job refreshes (every seed first asked at its import: those holding captures and those the
archive had not captured), from its captures of the last year, its last and first check,
whether it holds a capture, and its probability on tonight's provisional list (its *stake*) —
go with the plan's queries and their costs to ``hacs.refresh_budget.choose_queries`` under the
shipped ``RefreshPolicy``, within the budget ``operations.jobs.nightly_refresh`` gives it
(``default_budget``, scaled to the collection), a group that tonight's recall audit samples
costing a request more.

**The plan is the import's.** ``hacs.formats.queries.plan_queries`` with each seed's ``from``
from ``refresh_from`` (``archive.plan.refresh_seeds``): the longest lag
(``HACS_CDX_INDEX_LAG_DAYS``) for a seed alone and for a group not asked wide in 30 days, the lag
measured on the host from the late captures counted so far (``hacs.index_lag.host_lag``) for the
others; split groups, hosts asked seed by seed after a failed audit. The job imports the chosen
sites, which plans them again.

**The import is mirrored step by step** from ``archive.archive_import``: a group not sized in 30
days first asks its size (one request), and one too big waits for the next night's plan
(``defer_splits``); pages follow resume keys (5,000 rows a page); a group whose answer took more
than 4 pages or 20,000 rows is split on its next plan, at once when it failed for its size; a
share of the groups audits a homepage exactly; rows go to the seed whose scope holds them
(depth ≤ 2 stored, other people's pages dropped); each seed's check moves on, its first check is
kept, and the captures found that were made before the last answer's newest row count, per host,
as late (``hacs.index_lag.late_margins``). The archive answers in this process with the fake
Internet Archive's own query code (``testbed.ia_server.cdx_answer``).

**The list** (:class:`ListWorld`): the daily crawl list at the homepage level, built each morning
after the refresh from what HACS holds — the homepage observations of the last three years
(archive captures learned, and the crawls imported back), flagged as updates from the
collection's truth (a homepage gains one link a version) — ranked by HACS's default probability
(the posterior since the newest copy, as ``hacs.replay``'s ``hacs`` policy reads it, its prior
refitted weekly), its top k crawled. A
crawl finds a change when the homepage gained a version since the newest copy that exists: the
library's last crawl or the newest archive capture made before it, learned or not (as
``hacs.replay`` reads it). Its top 2k, with their probabilities, are the next night's stakes.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields
from datetime import UTC, date, datetime
from functools import lru_cache

import numpy as np

from bench.collection import DAY, Collection, timestamp_text
from bench.paper_refresh import (
    AUDIT_SHARE,
    LAG_DAYS,
    SIZING_EVERY_DAYS,
    SIZING_MAX_BLOCKS,
    Answer,
    FirstImport,
    GroupMemory,
    World,
    audit_of,
    seconds_of,
)
from hacs.bayes import GammaPrior, fit_interval_prior, interval_evidence, interval_posterior
from hacs.formats.queries import SHARED_HOSTS, CdxQuery, RefreshSeed, plan_queries, refresh_from
from hacs.index_lag import add_margins, host_lag, index_lag, late_margins
from hacs.ranking import posterior_probabilities, rank_order
from hacs.refresh_budget import (
    RATE_WINDOW_DAYS,
    RefreshPolicy,
    audited_groups,
    choose_queries,
    site_state,
)
from hacs.replay import ReplayState, truth_flags

WIDE_EVERY_DAYS = 30  # archive.plan.WIDE_MAX_AGE
PAGE_SLACK = 0.02  # operations.jobs.PAGE_SLACK
HISTORY_DAYS = 1095  # the daily list's window (HACS_HISTORY_DAYS)
E_DAYS = 1.0  # the daily list's horizon (HACS_E_DAYS)
CRAWL_AT = 0.25  # the day's crawls, after the 03:00 refresh and the 05:00 list
PRIOR_EVERY_DAYS = 7.0  # the list's prior is fitted again after this (ListWorld.scores)


@dataclass
class Tally:
    """One night of the shipped refresh (or a sum of nights)."""

    queries: int = 0  # first requests of the queries asked (audits apart)
    groups: int = 0  # of which group queries (host or common-prefix)
    wide: int = 0  # of which groups asked from the longest lag
    pages: int = 0  # further pages (resume keys)
    sizing: int = 0  # size questions
    audit: int = 0  # the recall audit's exact queries (all their pages)
    rows: int = 0  # rows read
    other: int = 0  # rows of other people's pages, dropped
    new: int = 0  # captures stored that HACS did not hold
    late: int = 0  # of which made before the last answer's newest row (counted late)
    checked: int = 0  # sites whose query was answered
    failed: int = 0
    waiting: int = 0  # sites left for the budget
    due_requests: int = 0  # requests the due share paid
    overdue_left: int = 0  # sites past the max age left waiting
    unarchived_asked: int = 0  # seeds without captures asked again
    deferred: int = 0  # sites of groups sizing found too big, left for the next night
    splits: int = 0
    most_pages: int = 0  # the most pages one query took
    most_rows: int = 0  # the most rows one query's answer held

    @property
    def requests(self) -> int:
        return self.queries + self.pages + self.sizing + self.audit

    def add(self, other: Tally) -> None:
        for item in fields(self):
            name = item.name
            mine, theirs = getattr(self, name), getattr(other, name)
            setattr(self, name, max(mine, theirs) if name.startswith("most") else mine + theirs)


def _moment(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, UTC)


@lru_cache(maxsize=200_000)
def _from(anchor: str, margin: float) -> str:
    """``refresh_from`` of a 14-digit anchor (cached: most anchors repeat night after night)."""
    return refresh_from(_moment(seconds_of(anchor)), margin_days=margin)


class Shipped:
    """HACS's nightly refresh of a collection, in process (the module docstring)."""

    def __init__(
        self,
        world: World,
        first: FirstImport,
        *,
        budget: int,
        policy: RefreshPolicy | None = None,
        audit: bool = True,
    ) -> None:
        self.world = world
        self.policy = policy or RefreshPolicy()
        self.budget = budget
        self.share = AUDIT_SHARE if audit else 0.0  # the recall audit's
        self.sites = list(range(len(world.collection.seeds)))  # every seed was asked at import
        self.captured = set(first.own)
        self.own = dict(first.own)  # newest stored capture, 14 digits
        self.seen = dict(first.seen)  # the last answer's newest row (ArchiveCheck.newest_seen)
        self.checked = dict.fromkeys(self.sites, world.start)
        self.first_checked = dict.fromkeys(self.sites, world.start)
        self.times = {s: sorted(first.times.get(s, ())) for s in self.sites}
        self.older = set(first.older)
        self.hosts = [scope.host_key for scope in world.scopes]
        self.memory = GroupMemory()
        self.sized: dict[str, int] = {}
        self.per_seed: set[str] = set()
        self.late: dict[str, list[int]] = {}  # late captures per host, by day of margin
        self.new: set[tuple[str, str]] = set()  # captures stored since the first import
        self.learned: list[tuple[int, str, str]] = []  # tonight's new rows (seed, urlkey, stamp)
        self.asks: dict[int, list[int]] = {}  # when each seed without captures was asked
        self.nights: list[Tally] = []

    # -- The plan (archive.plan) ----------------------------------------------------------
    def lags(self) -> tuple[dict[str, float], float]:
        """``archive.plan.host_lags``: each host's margin, and every host's together."""
        width = int(LAG_DAYS) + 1
        pooled = [sum(c[i] for c in self.late.values() if i < len(c)) for i in range(width)]
        lags = {h: host_lag(c, pooled, cap=LAG_DAYS) for h, c in self.late.items()}
        found = index_lag(pooled, cap=LAG_DAYS)
        return lags, LAG_DAYS if found is None else found

    def seeds(self) -> dict[int, RefreshSeed]:
        """``refresh_seeds``: each seed's ``from`` (None: no capture yet, its whole history)."""
        urls = self.world.collection.seeds
        lags, pooled = self.lags()
        seeds = {}
        for s in self.sites:
            if s not in self.captured:
                seeds[s] = RefreshSeed(s, urls[s].url, None)
                continue
            anchor = max(self.own[s], self.seen.get(s, self.own[s]))
            since = _from(anchor, LAG_DAYS)
            narrow = _from(anchor, lags.get(self.hosts[s], pooled))
            seeds[s] = RefreshSeed(s, urls[s].url, since, narrow)
        return seeds

    def plan(self, seeds: Iterable[RefreshSeed], now: int) -> list[CdxQuery]:
        narrow = {k for k, at in self.memory.wide_at.items() if now - at < WIDE_EVERY_DAYS * DAY}
        return plan_queries(
            list(seeds),
            too_big=self.memory.too_big,
            shared_hosts=SHARED_HOSTS | self.per_seed,
            narrow=narrow,
        )

    def _unsized(self, key: str, now: int) -> bool:
        last = self.sized.get(key)
        return SIZING_MAX_BLOCKS > 0 and (last is None or now - last > SIZING_EVERY_DAYS * DAY)

    # -- A night --------------------------------------------------------------------------
    def night(self, n: int, stakes: Mapping[int, float] | None = None) -> Tally:
        """Night ``n``: tonight's choice (``refresh_choice``), then the job's import."""
        now = self.world.start + n * DAY
        today = now / DAY
        tally = Tally()
        seeds = self.seeds()
        queries = self.plan(seeds.values(), now)
        low = today - RATE_WINDOW_DAYS
        stakes = stakes or {}
        states = {
            s: site_state(
                s,
                [t / DAY for t in self.times[s] if t / DAY >= low],
                now=today,
                checked=self.checked[s] / DAY,
                first_checked=self.first_checked[s] / DAY,
                stake=stakes.get(s, 0.0),
                captured=s in self.captured,
                older=s in self.older,
            )
            for s in self.sites
        }
        cost = {key: max(1, pages) for key, pages in self.memory.pages.items()}
        for query in queries:  # operations.refresh.query_costs
            if query.is_group and self._unsized(query.key, now):
                cost[query.key] = cost.get(query.key, 1) + 1
        for key in audited_groups(queries, datetime.fromtimestamp(now, UTC).date(), self.share):
            cost[key] = cost.get(key, 1) + 1
        # operations.jobs.nightly_refresh keeps PAGE_SLACK of the budget for pages beyond a
        # query's estimate.
        planned = self.budget - math.ceil(PAGE_SLACK * self.budget) if self.budget > 1 else 1
        choice = choose_queries(
            queries, states, now=today, budget=planned, policy=self.policy, cost=cost
        )
        tally.waiting = len(choice.left_out)
        tally.due_requests = choice.due_requests
        tally.overdue_left = choice.overdue_left
        tally.unarchived_asked = choice.unarchived_asked
        self.learned = []
        self._run(self.plan([seeds[s] for s in choice.checked_sites], now), seeds, now, tally)
        self.nights.append(tally)
        return tally

    # -- The run (archive_import._Run) -----------------------------------------------------
    def _run(
        self, queries: list[CdxQuery], seeds: dict[int, RefreshSeed], now: int, tally: Tally
    ) -> None:
        world = self.world
        day = datetime.fromtimestamp(now, UTC).date()
        pending = deque(queries)
        audits: dict[str, tuple[str, str, frozenset[str]]] = {}
        while pending:
            query = pending.popleft()
            if query.key in audits:
                answer = world.ask(query.url, query.since, match_type=query.match_type)
                tally.audit += answer.requests
                tally.rows += len(answer.rows)
                self._audited(audits.pop(query.key), query, answer, now, tally)
                continue
            if query.is_group and self._unsized(query.key, now):
                tally.sizing += 1
                self.sized[query.key] = now
                if world.blocks(query.url, query.match_type) > SIZING_MAX_BLOCKS:
                    self.memory.too_big.add(query.key)
                    tally.splits += 1
                    tally.deferred += len(query.site_ids)  # defer_splits: tomorrow's plan
                    continue
                self.memory.too_big.discard(query.key)
            answer = world.ask(query.url, query.since, match_type=query.match_type)
            tally.queries += 1
            tally.groups += query.is_group
            tally.wide += query.wide
            tally.pages += answer.requests - 1
            tally.rows += len(answer.rows)
            tally.most_pages = max(tally.most_pages, answer.requests)
            tally.most_rows = max(tally.most_rows, len(answer.rows))
            if query.is_group and self.memory.remember(query, answer, now):
                parts = plan_queries([seeds[s] for s in query.site_ids], too_big={query.key})
                if len(parts) > 1:
                    tally.splits += 1
                    pending.extend(parts)
                    continue
            if answer.failure:
                tally.failed += len(query.site_ids)
                continue
            audit = self._audit_of(query, answer, day)
            if audit is not None:
                audits[audit[0].key] = audit[1]
                pending.append(audit[0])
            tally.checked += len(query.site_ids)
            self._store(query, answer, now, tally)

    def _audit_of(
        self, query: CdxQuery, answer: Answer, day: date
    ) -> tuple[CdxQuery, tuple[str, str, frozenset[str]]] | None:
        """``_Run._audit_of``: for a share of the group answers, one homepage asked exactly."""
        if not (query.is_group and self.share > 0):
            return None
        return audit_of(self.world, query, answer, day, self.share)

    def _audited(
        self,
        audit: tuple[str, str, frozenset[str]],
        query: CdxQuery,
        answer: Answer,
        now: int,
        tally: Tally,
    ) -> None:
        host, homepage, held = audit
        if answer.failure:
            return
        if {t for key, t in answer.rows if key == homepage} - held:
            self.per_seed.add(host)
        self._store(query, answer, now, tally, audit=True)

    def _store(
        self, query: CdxQuery, answer: Answer, now: int, tally: Tally, *, audit: bool = False
    ) -> None:
        """``_Run._store_rows``: rows of the members' scopes stored (depth ≤ 2); each member's
        check; the margins the late ones needed, counted for the host."""
        world = self.world
        members = set(query.site_ids)
        start = world.start_stamp
        margins: list[float] = []
        fresh: dict[int, list[int]] = {}
        for row in answer.rows:
            found = world.owner(row[0], members)
            if found is None:
                tally.other += 1
                continue
            site, depth = found
            if depth > 2 or row[1] < start or row in self.new:
                continue
            self.new.add(row)
            self.learned.append((site, row[0], row[1]))
            fresh.setdefault(site, []).append(seconds_of(row[1]))
            tally.new += 1
        newest = max((stamp for _key, stamp in answer.rows), default=None)
        for site in query.site_ids:
            if site in fresh and not audit and site in self.seen:
                times = [t / DAY for t in fresh[site]]
                margins += late_margins(times, seconds_of(self.seen[site]) / DAY)
            for t in fresh.get(site, ()):
                self.times[site].append(t)
                stamp = timestamp_text(t)
                if stamp > self.own.get(site, ""):
                    self.own[site] = stamp
            if site in fresh:
                self.captured.add(site)
            if site not in self.captured:
                self.asks.setdefault(site, [world.start]).append(now)
            self.checked[site] = now
            if newest is not None and newest > self.seen.get(site, ""):
                self.seen[site] = newest
        if margins:
            host = query.key.partition(")")[0]
            counts = self.late.get(host, [])
            self.late[host] = add_margins(counts, margins, days=int(LAG_DAYS) + 1)
            tally.late += len(margins)


# --- The crawl list -------------------------------------------------------------------------


@dataclass
class ListWorld:
    """A daily crawl list of ``k`` sites, day after day, from what HACS holds (module docstring).

    ``sites`` are the seeds it ranks (those with a homepage observation in the window at the
    first import); ``made`` each one's homepage observations the archive made (days, sorted,
    learned or not), ``versions`` the times its homepage gained a link (days, sorted)."""

    sites: list[int]
    made: list[np.ndarray]
    versions: list[np.ndarray]
    k: int
    state: ReplayState
    index: dict[int, int] = field(default_factory=dict)  # seed → position in ``sites``
    found: list[int] = field(default_factory=list)  # changes found, day by day
    blind: list[int] = field(default_factory=list)  # crawls of a site whose newest archive copy
    # HACS had not learned, day by day (a crawl the refresh could have spared)
    last_crawl: np.ndarray = field(default_factory=lambda: np.zeros(0))
    known: list[set[float]] = field(default_factory=list)
    prior: tuple[float, GammaPrior] | None = None  # when it was fitted, and the prior

    @classmethod
    def start(
        cls,
        sites: list[int],
        history: list[np.ndarray],
        made: list[np.ndarray],
        versions: list[np.ndarray],
        k: int,
        now: float,
    ) -> ListWorld:
        """The list's view after the first import: each site's homepage observations of the
        window before ``now``, flagged from the truth."""
        times, flags = [], []
        for own, changes in zip(history, versions, strict=True):
            kept = own[own >= now - HISTORY_DAYS].tolist()
            times.append(kept)
            flags.append(truth_flags(kept, 0, changes))
        state = ReplayState(
            times=times,
            updated=flags,
            last_copy=np.array([t[-1] if t else -np.inf for t in times]),
            now=now,
            e_days=E_DAYS,
            rng=np.random.default_rng(0),
            true_rates=None,
            budget=k,
            start=now,
        )
        world = cls(sites, made, versions, k, state)
        world.index = {s: i for i, s in enumerate(sites)}
        world.last_crawl = np.full(len(sites), -np.inf)
        world.known = [set(t) for t in times]
        return world

    def learn(self, seed: int, moment: float) -> None:
        """HACS learned an archive observation of ``seed``'s homepage made at ``moment``: it
        joins the timeline in time order and the flags after it are read again."""
        i = self.index.get(seed)
        if i is None or moment in self.known[i]:
            return
        self.known[i].add(moment)
        times = self.state.times[i]
        at = int(np.searchsorted(times, moment))
        times.insert(at, moment)
        self.state.updated[i][at:] = truth_flags(times, at, self.versions[i])
        self.state.last_copy[i] = max(self.state.last_copy[i], moment)

    def scores(self, now: float) -> np.ndarray:
        """HACS's default probability for each site (``hacs.replay``'s ``hacs`` policy: the
        posterior since the newest copy), under the collection's prior refitted every
        :data:`PRIOR_EVERY_DAYS` (the daily list refits it each day; it moves little from one
        day to the next, and fitting it is most of the bench's time)."""
        self.state.now = now
        times, flags, offsets = self.state.arrays()
        evidence = interval_evidence(times, flags, offsets)
        if self.prior is None or now - self.prior[0] >= PRIOR_EVERY_DAYS:
            self.prior = (now, fit_interval_prior(evidence))
        alpha, beta = interval_posterior(self.prior[1], evidence)
        return posterior_probabilities(alpha, beta, self.state.last_copy, now, E_DAYS)

    def stakes(self, now: float) -> dict[int, float]:
        """Tonight's provisional list with its probabilities: the top 2k (``provisional_list``)."""
        p = self.scores(now)
        order = rank_order(p, self.state.last_copy, np.arange(p.size))
        return {self.sites[i]: float(min(1.0, max(0.0, p[i]))) for i in order[: 2 * self.k]}

    def crawl(self, now: float) -> int:
        """The day's list crawled: changes found (module docstring)."""
        p = self.scores(now)
        order = rank_order(p, self.state.last_copy, np.arange(p.size))
        found = blind = 0
        for i in order[: self.k].tolist():
            made = self.made[i]
            archive = made[np.searchsorted(made, now) - 1] if np.searchsorted(made, now) else -1e9
            blind += archive > self.state.last_copy[i]
            since = max(self.last_crawl[i], float(archive))
            changes = self.versions[i]
            changed = np.searchsorted(changes, now, "right") > np.searchsorted(
                changes, since, "right"
            )
            found += bool(changed)
            self.last_crawl[i] = now
            times = self.state.times[i]
            times.append(now)
            self.known[i].add(now)
            self.state.updated[i] += truth_flags(times, len(times) - 1, changes)
            self.state.last_copy[i] = now
        self.found.append(found)
        self.blind.append(blind)
        return found


def homepage_truth(
    collection: Collection, sites: list[int], nights: int
) -> tuple[list[np.ndarray], list[np.ndarray], list[np.ndarray]]:
    """For each seed of ``sites``: its homepage observations in the history (days, sorted), every
    homepage observation the archive makes through ``nights`` (days, sorted: made, indexed or
    not) and its homepage's version times (days). Call after the nights were drawn."""
    homes = np.array([collection.seeds[s].pages[0] for s in sites], dtype=np.int64)
    slot = np.full(len(collection.urls), -1, dtype=np.int64)
    slot[homes] = np.arange(len(sites))
    parts = [collection.history, *collection._night_times[:nights]]
    history: list[list[float]] = [[] for _ in sites]
    made: list[list[float]] = [[] for _ in sites]
    for n, (pages, seconds) in enumerate(parts):
        mine = slot[pages] >= 0
        pages, seconds = pages[mine], seconds[mine]
        kinds, _noise = collection._flags(pages, seconds)
        keep = kinds == 0
        for page, second in zip(pages[keep].tolist(), seconds[keep].tolist(), strict=True):
            made[slot[page]].append(second / DAY)
            if n == 0:
                history[slot[page]].append(second / DAY)
    mask = (1 << 40) - 1
    versions = []
    for home in homes.tolist():
        keys = collection.version_keys[
            collection.version_offsets[home] : collection.version_offsets[home + 1]
        ]
        versions.append(np.sort((keys & mask) / DAY))
    return ([np.array(sorted(h)) for h in history], [np.array(sorted(m)) for m in made], versions)
