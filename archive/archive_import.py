"""Sites brought up to date from the configured archive: the CDX queries planned by host, sent
several at a time, and the contents fetched newest first across every site of the run.

* :func:`archive_import` — runs the plan of ``archive.plan.refresh_plan``:
  ``HACS_ARCHIVE_PARALLEL`` queries and fetches in flight at once (threads that only talk to
  the archive; every database write happens on the calling thread, so SQLite's one writer and
  Django's per-thread connections are never at odds), each answer's rows stored for the seed
  whose scope holds them and other people's pages counted and dropped; then the contents every
  site still lacks, newest first across all the sites (so that a run cut short holds the
  recent history that decides today's list), each site finished — updates computed,
  ``finish`` called (estimates), marked done — as soon as its last content arrives. A group's
  size is asked once at most: a server that answers with no number is asked no other size in
  the run (``ArchiveClient.cdx_blocks``).

One slow or broken answer holds only its own thread: its query ends by the query deadline
(``HACS_CDX_QUERY_DEADLINE``) and fails its sites with a sentence, the others go on. The
archive's rate limit is shared through Redis by every thread and worker, so running in
parallel never sends the archive more than the configured rate.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import time
from collections import Counter, defaultdict, deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, wait
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from archive.captures import CaptureCounts, ScopeIndex, captures_store
from archive.daemon_pool import DaemonPool
from archive.models import ArchiveCheck, Capture, LinkSnapshot, QueryMemory, Site
from archive.plan import SIZE_MAX_AGE, late_captures_record, refresh_plan
from archive.snapshots import (
    SnapshotWanted,
    snapshot_from_body,
    snapshots_missing,
    snapshots_save,
    updates_compute,
)
from archive.status import sites_finish
from archive.wayback import ArchiveClient, ArchiveError, SizeUnknownError
from hacs import defaults
from hacs.clock import to_days
from hacs.formats import cdx
from hacs.formats.canon import SeedScope
from hacs.formats.queries import EARLIEST, CdxQuery, group_too_big
from hacs.index_lag import late_margins
from hacs.refresh_budget import audit_draw

log = logging.getLogger(__name__)

__all__ = ["QueryOutcome", "RunLimits", "archive_import"]

SAVE_SECONDS = 10.0  # and at least this often while contents come in
SAVE_EVERY = 50  # contents saved, and finished sites finished, this many fetches at a time
LEFT_LATER = "older contents left for the history pass"  # a site's count, and the job's


@dataclass(frozen=True)
class RunLimits:
    """How a run talks to the archive: contents and queries in flight, and when a group's answer
    is too big (its next refresh splits it)."""

    parallel: int = defaults.ARCHIVE_PARALLEL
    group_max_rows: int = defaults.GROUP_MAX_ROWS
    group_max_pages: int = defaults.GROUP_MAX_PAGES
    audit_share: float = (
        defaults.AUDIT_SHARE
    )  # grouped queries whose sample homepage is also asked exactly
    group_max_blocks: int = (
        defaults.GROUP_MAX_BLOCKS
    )  # index blocks (~3,000 lines) a group's range may span
    history_days: int = defaults.HISTORY_DAYS  # the daily list's window: its contents come first
    # An import fetches only the contents of each site's last ``history_days`` of copies; the
    # older ones wait for the history pass (``archive_import(history=True)``).
    older_later: bool = True

    @classmethod
    def from_settings(cls) -> RunLimits:
        return cls(
            parallel=settings.HACS_ARCHIVE_PARALLEL,
            group_max_rows=settings.HACS_REFRESH_GROUP_MAX_ROWS,
            group_max_pages=settings.HACS_REFRESH_GROUP_MAX_PAGES,
            audit_share=settings.HACS_REFRESH_AUDIT_SHARE,
            group_max_blocks=settings.HACS_REFRESH_GROUP_MAX_BLOCKS,
            history_days=settings.HACS_HISTORY_DAYS,
            older_later=settings.HACS_OLDER_HISTORY_LATER,
        )


@dataclass
class QueryOutcome:
    """What one query brought: the sites it answered for and what happened to each."""

    query: CdxQuery
    started: datetime
    records: list[cdx.CdxRecord] = field(default_factory=list)
    bad_lines: int = 0
    pages: int = 0
    failure: str = ""


@dataclass(frozen=True)
class _Audit:
    """An exact query of one homepage of a group, and what the group's answer held of it."""

    host: str
    homepage: str
    group_started: datetime
    held: frozenset[datetime]  # the homepage's capture times in the group's answer


@dataclass
class SiteTally:
    """A run's counts for one site, told to ``progress`` when the site ends."""

    counts: Counter[str] = field(default_factory=Counter)
    failure: str = ""
    waiting: int = 0  # contents still to fetch (−1: finished)
    recent: int = 0  # of which captured within the history window the daily list reads
    early: bool = False  # estimated once its recent contents were in
    horizon: datetime = EARLIEST  # its copies from here on are within that window


@dataclass
class _InFlight:
    """What a run has sent and not had back yet, and the queries still to send."""

    pending: deque[CdxQuery]
    asking: set[Future[QueryOutcome]] = field(default_factory=set)
    sizing: dict[Future[int | ArchiveError], CdxQuery] = field(default_factory=dict)
    unsized: set[str] = field(default_factory=set)
    fetching: dict[Future[LinkSnapshot], SnapshotWanted] = field(default_factory=dict)
    asked_once: bool = False  # an answer came: the archive can be reached, send more at once
    fetched_once: bool = False


# --- The run ------------------------------------------------------------------------------------


def archive_import(
    site_ids: Sequence[int],
    client: ArchiveClient,
    *,
    read_captures: bool = True,
    full: bool = False,
    defer_splits: bool = False,
    history: bool = False,
    limits: RunLimits | None = None,
    finish: Callable[[list[int]], object],
    progress: Callable[[int, str, dict[str, int]], None],
) -> tuple[CaptureCounts, Counter[str], int, dict[int, str]]:
    """Bring ``site_ids`` up to date from the archive (see the module docstring); returns the
    captures stored, the fetch counts, the bad CDX lines and the sites that failed with why.

    ``read_captures=False`` only fetches the contents the sites still lack (the retry pass).
    An import that reads captures fetches, with ``limits.older_later``, only the contents of
    each site's last ``limits.history_days`` of copies (those its estimates and the daily list
    read; the older ones are counted as left for later). ``history`` is that later pass: every
    content the sites lack is fetched, and the sites keep their import status (a failure
    leaves the content to be asked again, not the site failed).
    ``defer_splits`` (the nightly refresh, within its budget): a group found too big when its
    size is asked is not asked in parts tonight; its sites keep their last check and wait for
    the next night's choice.
    ``finish(site_ids)`` runs before sites are marked done; ``progress(site_id, failure,
    counts)`` is told once per site as it ends. Sites are marked running at the start and done
    or failed by the end; an archive that cannot be reached fails every site not yet done with
    its one sentence and ends the run.
    """
    limits = limits or RunLimits.from_settings()
    ids = list(dict.fromkeys(site_ids))
    tally = {site_id: SiteTally() for site_id in ids}
    source = client.config.source if read_captures else ""  # the retry pass asks no CDX
    run = _Run(
        client,
        limits,
        tally,
        finish,
        progress,
        source,
        defer_splits=defer_splits,
        older_later=read_captures and limits.older_later and not history,
        history=history,
    )
    if read_captures:
        queries = refresh_plan(ids, source, client.config.index_lag_days, full=full)
        run.go(queries, [])
    else:
        run.go([], ids)
    failed = {i: t.failure for i, t in tally.items() if t.failure}
    return run.captures, run.fetched, run.bad_lines, failed


class _Run:
    """One run's shared state: the client, the limits, each site's tally and the callbacks."""

    def __init__(
        self,
        client: ArchiveClient,
        limits: RunLimits,
        tally: dict[int, SiteTally],
        finish: Callable[[list[int]], object],
        progress: Callable[[int, str, dict[str, int]], None],
        source: str,
        *,
        defer_splits: bool = False,
        older_later: bool = False,
        history: bool = False,
    ) -> None:
        self.client = client
        self.defer_splits = defer_splits
        self.older_later = older_later  # contents before a site's window wait for later
        self.history = history  # the history pass: sites keep their import status
        self.left_later: set[tuple[int, str, str]] = set()  # (site, urlkey, digest) left
        self.recent: dict[tuple[int, str, str], bool] = {}  # a wanted content in a site's window
        self.limits = limits
        self.tally = tally
        self.finish = finish
        self.progress = progress
        self.source = source
        self.audits: dict[str, _Audit] = {}  # by the audit query's key
        self.cannot_count = False  # the server answered a size question with no number
        self.captures = CaptureCounts()
        self.fetched: Counter[str] = Counter()
        self.bad_lines = 0
        # Contents to fetch, newest first (a heap of (−days to its first capture, order,
        # content)), the sites waiting for each, and those fetched but not saved yet.
        self.wanted: list[tuple[float, int, SnapshotWanted]] = []
        self.holders: dict[tuple[str, str], list[int]] = defaultdict(list)
        self.unsaved: list[tuple[SnapshotWanted, LinkSnapshot]] = []
        self._order = itertools.count()  # ties of the heap, in the order contents were wanted

    # -- The loop -----------------------------------------------------------------------------
    def go(self, queries: Sequence[CdxQuery], fetch_only: list[int]) -> None:
        """Run ``queries`` and fetch the contents their sites lack (or, with ``fetch_only``,
        those sites' contents), both at once: ``limits.parallel`` queries and twice as many
        fetches in flight, each kind starting alone until its first answer shows the archive can
        be reached. Contents are fetched newest first among the sites whose answers are in, so
        that one slow query holds nobody; a group too big is split at once; an archive that
        cannot be reached fails every site not yet done with its one sentence."""
        flight = _InFlight(deque(queries), unsized=self._unsized(queries))
        due = time.monotonic() + SAVE_SECONDS
        self._want(fetch_only)
        with (
            DaemonPool(self.limits.parallel, "cdx") as cdx_pool,
            DaemonPool(self.limits.parallel, "memento") as memento_pool,
        ):
            while True:
                self._send(flight, cdx_pool, memento_pool)
                if not flight.asking and not flight.fetching and not flight.sizing:
                    break
                running: list[Future[Any]] = [*flight.asking, *flight.fetching, *flight.sizing]
                done, _running = wait(running, return_when=FIRST_COMPLETED)
                for future in done:
                    self._landed(flight, future)
                if self.client.unreachable is not None:
                    for future in flight.fetching:
                        future.cancel()
                    break
                if len(self.unsaved) >= SAVE_EVERY or not flight.fetching or time.monotonic() > due:
                    self._save()
                    due = time.monotonic() + SAVE_SECONDS
        self._save()
        unreachable = self.client.unreachable
        left = [i for i, t in self.tally.items() if not t.failure and t.waiting >= 0]
        if unreachable is not None:
            self._fail(left, str(unreachable))
        else:
            self._finish(left)  # every content answered: nothing is left but by a bug

    def _send(self, flight: _InFlight, cdx_pool: DaemonPool, memento_pool: DaemonPool) -> None:
        """Send queries, size questions and fetches while there is room for them in flight."""
        room = self.limits.parallel if flight.asked_once else 1
        while flight.pending and len(flight.asking) + len(flight.sizing) < room:
            query = flight.pending.popleft()
            if query.key in flight.unsized and not self.cannot_count:
                flight.unsized.discard(query.key)
                flight.sizing[cdx_pool.submit(self._size, query)] = query
            else:
                flight.asking.add(cdx_pool.submit(self._ask, query))
        room = 2 * self.limits.parallel if flight.fetched_once else 1
        while self.wanted and len(flight.fetching) < room:
            item = heapq.heappop(self.wanted)[2]
            flight.fetching[memento_pool.submit(self._fetch, item)] = item

    def _landed(self, flight: _InFlight, future: Future[Any]) -> None:
        """Take in one answer: a group's size, a content, or a query's rows."""
        if future in flight.sizing:
            flight.asked_once = True
            query = flight.sizing.pop(future)
            parts = self._sized(query, future.result())
            # Never the group itself again: its size was asked once tonight.
            flight.unsized |= self._unsized([p for p in parts if p.key != query.key])
            flight.pending.extendleft(reversed(parts))
            return
        if future in flight.fetching:
            flight.fetched_once = True
            self._fetched(flight.fetching.pop(future), future.result())
            return
        flight.asking.discard(future)
        flight.asked_once = True
        outcome = future.result()
        if self.client.unreachable is not None:
            outcome.failure = str(self.client.unreachable)
        split = self._remember(outcome)
        if split:
            flight.pending.extend(split)
            return
        flight.pending.extend(self._audit_of(outcome))
        self._answered(outcome)

    def _unsized(self, queries: Sequence[CdxQuery]) -> set[str]:
        """The group queries whose size must be asked before them (the Internet Archive's
        dialect only): never sized, or sized more than ``SIZE_MAX_AGE`` ago."""
        groups = [q.key for q in queries if q.is_group]
        if not groups or self.client.config.dialect != "ia" or self.limits.group_max_blocks <= 0:
            return set()
        if self.cannot_count:  # the server answered a size question with no number
            return set()
        fresh = QueryMemory.objects.filter(
            source=self.source,
            kind=QueryMemory.Kind.GROUP,
            key__in=groups,
            sized_at__gte=timezone.now() - SIZE_MAX_AGE,
        )
        return set(groups) - set(fresh.values_list("key", flat=True))

    def _size(self, query: CdxQuery) -> int | ArchiveError:
        """The index blocks a group's range spans, or why they could not be counted (on a pool
        thread: network only)."""
        try:
            return self.client.cdx_blocks(query.url, match_type=query.match_type)
        except ArchiveError as error:
            return error
        except ValueError as error:
            return ArchiveError(str(error))

    def _sized(self, query: CdxQuery, blocks: int | ArchiveError) -> list[CdxQuery]:
        """The group as it will be asked: itself, or split when its range spans more index
        blocks than the archive reads for one query (remembered, so the next plans split it).
        A size the server could not count is asked once: the group is asked without it, and a
        server that answers the size question with no number (``SizeUnknownError``) is asked no
        other size for the rest of the run."""
        if isinstance(blocks, ArchiveError):  # not counted: ask it; its answer's size still counts
            if isinstance(blocks, SizeUnknownError) and not self.cannot_count:
                self.cannot_count = True
                log.warning("%s", blocks)
            else:
                log.info("The size of %s could not be asked: %s", query.key, blocks)
            self.tally[query.site_ids[0]].counts["group sizes the archive did not count"] += 1
            return [query]
        too_big = blocks > self.limits.group_max_blocks
        QueryMemory.objects.update_or_create(
            source=self.source,
            kind=QueryMemory.Kind.GROUP,
            key=query.key,
            defaults={"blocks": blocks, "sized_at": timezone.now(), "too_big": too_big},
        )
        if not too_big:
            return [query]
        if self.defer_splits:
            # Within a nightly budget the parts wait for tomorrow's choice, which prices them;
            # their sites keep their data and their last check, so they come first then.
            for site_id in query.site_ids:
                self.tally[site_id].counts["sites waiting for a split group"] += 1
            log.info("%s spans %d index blocks; split from the next refresh", query.key, blocks)
            return []
        parts = refresh_plan(query.site_ids, self.source, self.client.config.index_lag_days)
        log.info("%s spans %d index blocks; asking it in %d parts", query.key, blocks, len(parts))
        return parts

    def _answered(self, outcome: QueryOutcome) -> None:
        """A query's answer: its rows stored (or its sites failed), its sites' contents wanted."""
        counts = self.store(outcome)
        self.captures.merge(counts)
        self.bad_lines += outcome.bad_lines
        if not outcome.failure:  # an audit's rows too: a missed capture's content is wanted
            self._want(list(outcome.query.site_ids))

    def _want(self, site_ids: list[int]) -> None:
        """Queue the contents ``site_ids`` lack (not those already queued or in flight for
        them); finish the sites that wait for none."""
        site_ids = [i for i in site_ids if self.tally[i].waiting >= 0 and not self.tally[i].failure]
        if not site_ids:
            return
        wanted, holders = _wanted_by_site(site_ids)
        self._horizons(site_ids)
        for item in wanted:
            key = (item.urlkey, item.digest)
            # A content is within a site's window when any copy of it there is (the newest).
            newest = {i: stamp for i, stamp in holders[key].items() if i in self.tally}
            recent = {i: stamp >= self.tally[i].horizon for i, stamp in newest.items()}
            if self.older_later and not any(recent.values()):
                for site_id in newest:  # before every holder's window: the history pass's
                    if (site_id, *key) not in self.left_later:
                        self.left_later.add((site_id, *key))
                        self.tally[site_id].counts[LEFT_LATER] += 1
                continue
            new = key not in self.holders
            held = self.holders[key]
            for site_id in newest:
                if site_id not in held:
                    held.append(site_id)
                    self.tally[site_id].waiting += 1
                    self.tally[site_id].recent += recent[site_id]
                    self.recent[(site_id, *key)] = recent[site_id]
            if new:
                heapq.heappush(self.wanted, (-to_days(item.moment), next(self._order), item))
        self._finish([i for i in site_ids if self.tally[i].waiting == 0])

    def _horizons(self, site_ids: list[int]) -> None:
        """Each site's window: its copies within ``history_days`` (and a day, the list's date
        being after the copy) of its newest observation. Of a collection the archive still
        captures, that is the daily list's window; of an archive that ended, the last years it
        holds, which the Evaluation page reads first."""
        newest = (
            Capture.objects.filter(site_id__in=site_ids, is_observation=True)
            .values("site_id")
            .annotate(newest=Max("timestamp"))
            .values_list("site_id", "newest")
        )
        for site_id, moment in newest:
            start = moment - timedelta(days=self.limits.history_days + 1)
            self.tally[site_id].horizon = max(start, EARLIEST)

    def _ask(self, query: CdxQuery) -> QueryOutcome:
        """Send one query (on a pool thread: network only, no database)."""
        outcome = QueryOutcome(query, timezone.now())

        def parse(text: str) -> tuple[cdx.CdxParseResult, str | None]:
            result = cdx.parse_cdx(text)
            return result, result.resume_key

        def row_keys(page: cdx.CdxParseResult) -> Iterator[tuple[str, datetime]]:
            return ((r.urlkey, r.timestamp) for r in page.records)

        try:
            for page in self.client.cdx_pages(
                query.url, parse, since=query.since, row_keys=row_keys, match_type=query.match_type
            ):
                outcome.pages += 1
                outcome.records.extend(page.records)
                outcome.bad_lines += page.skipped
        except ArchiveError as error:
            outcome.failure = str(error)
        except Exception as error:  # a bug must fail these sites, not the run
            log.exception("The CDX query for %s failed", query.url)
            outcome.failure = _unexpected(f"The CDX query for {query.url}", error)
        return outcome

    def _remember(self, outcome: QueryOutcome) -> list[CdxQuery]:
        """Record a group's size for the next plan; returns the group split when its answer
        was too big to keep asking as one (those parts run now, in this same run)."""
        query = outcome.query
        if not query.is_group:
            return []
        too_big = group_too_big(
            pages=outcome.pages,
            rows=len(outcome.records),
            failed_for_size=bool(outcome.failure) and _too_big_failure(outcome.failure),
            max_pages=self.limits.group_max_pages,
            max_rows=self.limits.group_max_rows,
        )
        QueryMemory.objects.update_or_create(
            source=self.source,
            kind=QueryMemory.Kind.GROUP,
            key=query.key,
            defaults={"rows": len(outcome.records), "pages": outcome.pages, "too_big": too_big},
        )
        if query.wide and not outcome.failure:
            QueryMemory.objects.filter(
                source=self.source, kind=QueryMemory.Kind.GROUP, key=query.key
            ).update(wide_at=outcome.started)
        if too_big and outcome.failure:
            parts = refresh_plan(query.site_ids, self.source, self.client.config.index_lag_days)
            if len(parts) > 1:
                log.info(
                    "%s was too big to ask at once; asking it in %d parts", query.key, len(parts)
                )
                return parts
        return []

    def _audit_of(self, outcome: QueryOutcome) -> list[CdxQuery]:
        """The recall audit: for a share of the grouped answers, one member's homepage asked
        exactly (``matchType=exact``, the same ``from``), because the Internet Archive leaves
        some indexes out of prefix and host queries. Chosen by a hash of the group and the day
        (``hacs.refresh_budget.audit_draw``), so that every group is audited now and then, a run
        is repeatable, and the nightly choice prices tonight's audits."""
        query = outcome.query
        if not query.is_group or outcome.failure or self.limits.audit_share <= 0:
            return []
        draw = audit_draw(outcome.started.date(), query.key)
        if draw >= self.limits.audit_share:
            return []
        site_id = query.site_ids[int(draw * 2**32) % len(query.site_ids)]
        site = Site.objects.filter(pk=site_id).values_list("seed_url", flat=True).first()
        if site is None:
            return []
        scope = SeedScope.from_url(site)
        held = frozenset(r.timestamp for r in outcome.records if r.urlkey == scope.homepage)
        audit = CdxQuery(site, "exact", (site_id,), query.since, f"audit {scope.homepage}")
        self.audits[audit.key] = _Audit(scope.host_key, scope.homepage, outcome.started, held)
        return [audit]

    def _audited(self, outcome: QueryOutcome, counts: CaptureCounts) -> None:
        """Compare an exact answer with its group's: captures the group's answer lacked (before
        the group was asked) are misses; a host with misses is asked one seed at a time from
        the next refresh on."""
        audit = self.audits.pop(outcome.query.key)
        exact = {
            r.timestamp
            for r in outcome.records
            if r.urlkey == audit.homepage and r.timestamp < audit.group_started
        }
        missed = len(exact - audit.held)
        site = self.tally[outcome.query.site_ids[0]].counts
        site["homepages audited exactly"] += 1
        site["captures missed by grouped queries"] += missed
        memory, _created = QueryMemory.objects.get_or_create(
            source=self.source, kind=QueryMemory.Kind.HOST, key=audit.host
        )
        if missed:
            memory.misses += missed
            memory.per_seed = True
            log.warning(
                "The archive's grouped answer for %s lacked %d captures of %s that an exact query "
                "found; its seeds are asked one at a time from now on.",
                audit.host,
                missed,
                audit.homepage,
            )
        memory.save()

    def store(self, outcome: QueryOutcome) -> CaptureCounts:
        """Store an answer's rows for the seeds whose scopes hold them (other people's pages
        are counted, never stored) and record when the sites were checked; or fail its sites."""
        query = outcome.query
        if query.key in self.audits:
            if outcome.failure:  # the group's answer stands; the audit is tried another night
                log.info("The recall audit %s failed: %s", query.key, outcome.failure)
                self.audits.pop(query.key)
                return CaptureCounts()
            counts = self._store_rows(outcome)
            self._audited(outcome, counts)
            return counts
        if outcome.failure:
            self._fail(query.site_ids, outcome.failure)
            return CaptureCounts()
        counts = self._store_rows(outcome)
        for site_id in query.site_ids:
            site = self.tally[site_id].counts
            site["captures added"] += counts.written.get(site_id, 0)
            site["bad CDX lines"] += outcome.bad_lines if len(query.site_ids) == 1 else 0
        if query.is_group:
            others = counts.skipped.pop("outside every seed", 0)
            counts.skipped["other people's pages (group queries)"] += others
            # The job's counts add up its sites': the group's are told with its first site.
            self.tally[query.site_ids[0]].counts["other people's pages dropped"] += others
        return counts

    def _store_rows(self, outcome: QueryOutcome) -> CaptureCounts:
        """Store an answer's rows, record each site's check, and count the margins the
        captures the archive indexed late needed (``archive.plan.late_captures_record``)."""
        query = outcome.query
        audit = query.key in self.audits
        seeds = Site.objects.filter(pk__in=query.site_ids).values_list("pk", "seed_url")
        margins: list[float] = []
        with transaction.atomic():
            counts = captures_store(
                records=outcome.records,
                source=self.source,
                index=ScopeIndex(seeds),
                keep_times=query.since is not None and not audit,
            )
            # A row dated after the query (a broken index line) must not move ``from`` ahead.
            moments = (r.timestamp for r in outcome.records if r.timestamp <= outcome.started)
            newest = max(moments, default=None)
            for site_id in query.site_ids:
                check, created = ArchiveCheck.objects.get_or_create(
                    site_id=site_id,
                    source=self.source,
                    defaults={
                        "checked_at": outcome.started,
                        "newest_seen": newest,
                        "first_checked_at": outcome.started,
                    },
                )
                if created:
                    continue
                if check.newest_seen is not None and site_id in counts.new_times:
                    times = (to_days(t) for t in counts.new_times[site_id])
                    margins += late_margins(times, to_days(check.newest_seen))
                check.checked_at = outcome.started
                if newest is not None and (check.newest_seen is None or newest > check.newest_seen):
                    check.newest_seen = newest
                check.save(update_fields=["checked_at", "newest_seen"])
            host = query.key.partition(")")[0]
            late_captures_record(self.source, host, margins, self.client.config.index_lag_days)
        first = self.tally[query.site_ids[0]].counts
        first["CDX rows read"] += len(outcome.records)
        first["captures the archive indexed late"] += len(margins)
        if audit:
            first["captures added"] += counts.written.get(query.site_ids[0], 0)
        return counts

    def _fail(self, site_ids: Sequence[int], reason: str) -> None:
        for site_id in site_ids:
            if not self.tally[site_id].failure:
                self.tally[site_id].failure = reason
                if not self.history:  # the history pass leaves the site as it was
                    sites_finish(failed={site_id: reason})
                self.progress(site_id, reason, dict(self.tally[site_id].counts))

    # -- Contents -----------------------------------------------------------------------------
    def _fetch(self, item: SnapshotWanted) -> LinkSnapshot:
        """Fetch and parse one content (on a pool thread: no database)."""
        try:
            memento = self.client.fetch_memento(item.timestamp, item.url)
            return snapshot_from_body(
                urlkey=item.urlkey,
                digest=item.digest,
                url=item.url,
                body=memento.body,
                content_type=memento.content_type,
                truncated=memento.truncated,
            )
        except ArchiveError as error:
            return LinkSnapshot(
                urlkey=item.urlkey,
                digest=item.digest,
                status=LinkSnapshot.Status.FAILED,
                error=str(error)[:2000],
            )

    def _fetched(self, item: SnapshotWanted, snapshot: LinkSnapshot) -> None:
        failed = snapshot.status == LinkSnapshot.Status.FAILED
        self.fetched["fetch failed" if failed else "fetched"] += 1
        self.unsaved.append((item, snapshot))

    def _save(self) -> None:
        """Save the contents fetched so far and finish the sites that waited for nothing else."""
        if not self.unsaved:
            return
        pending, self.unsaved = self.unsaved, []
        snapshots_save([snapshot for _item, snapshot in pending])
        ready, early = [], []
        for item, snapshot in pending:
            failed = snapshot.status == LinkSnapshot.Status.FAILED
            key = (item.urlkey, item.digest)
            for site_id in self.holders.pop(key, []):
                site = self.tally[site_id]
                site.counts["fetch failures" if failed else "fetches"] += 1
                site.waiting -= 1
                site.recent -= self.recent.pop((site_id, *key), False)
                if site.failure:
                    continue
                if site.waiting == 0:
                    ready.append(site_id)
                elif site.recent == 0 and not site.early and not self.history:
                    site.early = True
                    early.append(site_id)
        self._estimate_early([i for i in early if i not in ready])
        self._finish(ready)

    def _estimate_early(self, site_ids: list[int]) -> None:
        """Sites whose contents within the daily list's window are all in while older ones are
        still to come (contents go newest first): their updates and estimates now, so that a
        run cut short, or the morning's list, already reads them. The site stays running until
        its last content is in and it is finished."""
        if not site_ids:
            return
        try:
            updates_compute(site_ids=site_ids)
            self.finish(site_ids)
        except Exception:  # the site's finish will try again and say why
            log.exception("Estimating sites %s early failed", site_ids[:10])

    def _finish(self, site_ids: list[int]) -> None:
        """Sites whose contents are all in: updates, estimates (``finish``), marked done. When
        the batch fails, each site is tried alone, so that one site's trouble fails only it.

        Not one transaction: the updates are written a site at a time and the estimates are
        computed before their short write, so that on SQLite a login never waits for a batch.
        Both are recomputed whole, so a batch cut short anywhere is simply done again: its sites
        are marked done only at the end."""
        if not site_ids:
            return
        site_ids = sorted(site_ids)
        try:
            updates_compute(site_ids=site_ids)
            self.finish(site_ids)
        except Exception as error:
            if len(site_ids) > 1:
                for site_id in site_ids:
                    self._finish([site_id])
                return
            log.exception("Finishing site %s failed", site_ids[0])
            url = Site.objects.filter(pk=site_ids[0]).values_list("seed_url", flat=True).first()
            reason = _unexpected(f"Importing {url}", error)
            self._fail(site_ids, reason)
            return
        if not self.history:
            sites_finish(done=site_ids)
        by_count: dict[int, list[int]] = defaultdict(list)
        for site_id in site_ids:  # what the history pass has still to fetch: now, or nothing
            by_count[self.tally[site_id].counts[LEFT_LATER]].append(site_id)
        for count, ids in by_count.items():
            Site.objects.filter(pk__in=ids).update(older_pending=count)
        for site_id in site_ids:
            site = self.tally[site_id]
            site.waiting = -1  # finished: later saves never finish it twice
            self.progress(site_id, "", dict(site.counts))


def _unexpected(what: str, error: BaseException) -> str:
    """The sentence of a failure HACS did not foresee (a bug), naming what stopped."""
    return (
        f"{what} stopped on an unexpected error ({type(error).__name__}: {str(error)[:300]}); "
        "the log has the details: fix the cause, then run import_archive --failed."
    )


def _too_big_failure(reason: str) -> bool:
    """A group query that failed for its size (pages, bytes or time) rather than a fault."""
    return any(
        words in reason
        for words in (
            "HACS_CDX_MAX_PAGES",
            "HACS_MAX_CDX_BYTES",
            "within",
            "kept sending more pages",
        )
    )


def _wanted_by_site(
    site_ids: list[int],
) -> tuple[list[SnapshotWanted], dict[tuple[str, str], dict[int, datetime]]]:
    """The contents the sites lack, newest first, and for each the sites whose observations
    (revisits too) hold it, with the newest such copy's time."""
    wanted = snapshots_missing(site_ids=site_ids)
    keys = {(w.urlkey, w.digest) for w in wanted}
    holders: dict[tuple[str, str], dict[int, datetime]] = defaultdict(dict)
    if keys:
        rows = (
            Capture.objects.filter(site_id__in=site_ids, is_observation=True)
            .values("urlkey", "digest", "site_id")
            .annotate(newest=Max("timestamp"))
            .values_list("urlkey", "digest", "site_id", "newest")
        )
        for urlkey, digest, site_id, moment in rows:
            key = (urlkey, digest)
            if key in keys:
                holders[key][site_id] = moment
    return wanted, holders
