"""Today's crawl list (DESIGN "Method", rule 8): glue between stored captures and the core.

For a date D the reference instant t is the end of D (``hacs.clock.reference_instant``): the
estimate uses the observations in [t − w, t), and p is the probability that the site has
changed by the time a crawl made within e days of D looks at it. By default (the ``posterior``
method) that is a change since the newest copy HACS holds, over the rate's posterior under the
collection's prior (``hacs.bayes``); the paper's methods give g = 1 − exp(−λ (t + e − τ)), a
change since the last update. Sites with fewer than two observations in the window get p = 0,
so they only appear when θ is 0 or the budget reaches past every site with a known rate. For a
budget k the list keeps the k sites of highest p: each crawl finds at most one change, so their
sum, the expected number of changes found, is the largest any k sites give.

A learned method (``gp4c``, ``lws``) ranks by the newest scheduler of that kind learned at the
list's level (``scheduling.learning``): the sites it scores first, by its score, then the others;
each entry keeps the default method's p and evidence beside the score, and θ still selects on p.
"""

from __future__ import annotations

import csv
import hashlib
import io
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any

import numpy as np
from django.conf import settings
from django.db import connection, transaction
from numpy.typing import NDArray

from archive.models import Site
from hacs import defaults
from hacs.clock import reference_instant, to_days
from hacs.ranking import crawl_order, crawl_selection, learned_order, round_robin_expected
from scheduling.cells import (
    EXCEL_BOM,
    day_text,
    days_cell,
    interval_cell,
    last_update_cell,
    neutralise,
    rate_cell,
    tau_cell,
)
from scheduling.estimates import estimates_for_window
from scheduling.learning import learned_scorer_latest, learned_scores
from scheduling.models import (
    DEFAULT_METHOD,
    CrawlList,
    CrawlListEntry,
    Estimate,
    Learned,
    LearnedScorer,
    Level,
    estimate_probabilities,
)

# The design's seven columns, then the evidence behind each probability (issue of thin history):
# how many observations over how many days, the 90 % credible interval of the mean interval
# (posterior method), and the newest copy the probability is measured from.
CSV_COLUMNS = [
    "rank",
    "url",
    "author",
    "probability",
    "rate_per_day",
    "interval_days",
    "tau",
    "observations",
    "span_days",
    "interval_low_days",
    "interval_high_days",
    "last_copy",
    "score",
]


# The largest history window and horizon a list is built with, from the page or the command.
MAX_HISTORY_DAYS = 36500
MAX_E_DAYS = 3650


@dataclass(frozen=True)
class CrawlListOptions:
    """What a crawl list is built with; the defaults are the form's and the daily job's."""

    level: str = Level.HOMEPAGE
    method: str = DEFAULT_METHOD
    theta: float | None = None
    budget: int | None = None
    history_days: int = defaults.HISTORY_DAYS
    e_days: float = defaults.E_DAYS

    @classmethod
    def from_settings(cls) -> CrawlListOptions:
        """The configured defaults: ``HACS_THETA``, ``HACS_BUDGET``, ``HACS_HISTORY_DAYS``,
        ``HACS_E_DAYS``."""
        return cls(
            theta=settings.HACS_THETA,
            budget=settings.HACS_BUDGET,
            history_days=settings.HACS_HISTORY_DAYS,
            e_days=settings.HACS_E_DAYS,
        )

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> CrawlListOptions:
        return cls(
            level=str(data["level"]),
            method=str(data["method"]),
            theta=None if data.get("theta") is None else float(data["theta"]),
            budget=None if data.get("budget") is None else int(data["budget"]),
            history_days=int(data["history_days"]),
            e_days=float(data["e_days"]),
        )

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class RankedSite:
    site_id: int
    probability: float
    rate: float | None
    tau: datetime | None
    seed_url: str
    evidence: Estimate  # the estimate behind the probability (observations, span, interval)
    score: float | None = None  # a learned scheduler's score (learned methods)


@dataclass(frozen=True)
class RankedList:
    """A crawl list before it is stored: its sites in order, how many were eligible (≥ 1
    observation in the window), and the learned scheduler that ranked it, if any."""

    sites: list[RankedSite]
    eligible: int
    scorer: LearnedScorer | None = None
    notice: str = ""  # a learned list that does not rank by its scheduler says so here
    # The changes a round-robin list of as many sites was expected to find (posterior p).
    round_robin_expected: float | None = None


def crawl_list_window(*, day: date, history_days: int) -> tuple[datetime, datetime]:
    """The first and last instants of the observations a list for ``day`` reads: [t − w, t)."""
    t = reference_instant(day)
    return t - timedelta(days=history_days), t - timedelta(microseconds=1)


def crawl_list_rank(*, day: date, options: CrawlListOptions) -> RankedList:
    """The ranked sites of a crawl list. A learned method without a learned scheduler at the
    list's level raises ``scheduling.learning.NoLearnedScorer`` (its message says what to do)."""
    learned = options.method in Learned.values
    scorer = learned_scorer_latest(options.method, options.level) if learned else None
    t = reference_instant(day)
    start, end = crawl_list_window(day=day, history_days=options.history_days)
    found = estimates_for_window(
        level=options.level,
        method=DEFAULT_METHOD if learned else options.method,
        start=start,
        end=end,
    )
    for site_id in Site.objects.filter(paused=True).values_list("pk", flat=True):
        found.pop(site_id, None)  # a paused seed is on no list
    if not found:
        return RankedList([], 0, scorer)
    ids = list(found)
    estimates = [found[i] for i in ids]
    taus = np.array([np.nan if e.tau_days is None else e.tau_days for e in estimates])
    p = estimate_probabilities(estimates, t_days=to_days(t), e_days=options.e_days)
    urls = dict(Site.objects.filter(pk__in=ids).values_list("pk", "seed_url"))
    seed_urls = [urls.get(site_id, "") for site_id in ids]
    score = np.full(len(ids), np.nan)
    if scorer is None:
        order = crawl_order(p, taus, seed_urls, to_days(t))
    else:
        scored = learned_scores(scorer, day=day, e_days=options.e_days)
        by_site = dict(zip(scored.site_ids.tolist(), scored.scores.tolist(), strict=True))
        score = np.array([by_site.get(site_id, np.nan) for site_id in ids])
        order = learned_order(score, p, taus, seed_urls, to_days(t))
    kept = crawl_selection(order, p, theta=options.theta, budget=options.budget)
    notice = "" if scorer is None else learned_notice(scorer, score, p, kept, options.theta)
    round_robin = None
    if learned or options.method == DEFAULT_METHOD:  # p is the posterior's
        copies = [np.nan if e.last_copy_days is None else e.last_copy_days for e in estimates]
        round_robin = round_robin_expected(p, copies, seed_urls, len(kept))
    ranked = [
        RankedSite(
            site_id=ids[i],
            probability=float(p[i]),
            rate=estimates[i].rate,
            tau=estimates[i].tau,
            seed_url=seed_urls[i],
            evidence=estimates[i],
            score=None if np.isnan(score[i]) else float(score[i]),
        )
        for i in kept
    ]
    return RankedList(ranked, len(ids), scorer, notice, round_robin)


def learned_notice(
    scorer: LearnedScorer,
    score: NDArray[np.float64],
    p: NDArray[np.float64],
    kept: list[int],
    theta: float | None,
) -> str:
    """Why a learned list is not ranked by its scheduler, in a sentence; empty when it is.
    θ selects on HACS's probability, so it can remove every site the scheduler scored; and a
    scheduler that gives every listed site one score leaves them in the probability's order."""
    kind = scorer.kind.upper()
    scored = np.isfinite(score)
    listed = [i for i in kept if scored[i]]
    if not scored.any():
        return (
            f"The {kind} scheduler scored no site with a copy in the window: the list is in "
            "HACS's probability order."
        )
    values = {float(score[i]) for i in listed}
    if len(listed) < 2 or len(values) != 1:
        return ""
    value = values.pop()
    removed = scored & (score != value)
    removed[kept] = False
    if theta is not None and removed.any():
        return (
            f"θ {theta:g} removed every site the {kind} scheduler told apart from the listed "
            f"ones (their P(change) is at most {float(p[removed].max()):.3f}); every listed site "
            f"has the same score ({value:.4g}), so the list is in HACS's probability order. "
            "Build it with a budget k and no θ to rank by the scheduler."
        )
    return (
        f"The {kind} scheduler gave every listed site the same score ({value:.4g}): it does "
        "not tell them apart, so they are in HACS's probability order."
    )


# What makes two stored lists the same list: their date and options, the learned scheduler that
# ranked them, the number of eligible sites, and every entry's rank, site, probability and
# evidence (what the page and the CSV show). Floats are compared exactly: a list built again
# from unchanged estimates repeats them bit for bit.
ENTRY_FIELDS = (
    "rank",
    "site_id",
    "probability",
    "rate",
    "tau",
    "observations",
    "updates",
    "span_days",
    "interval_low",
    "interval_high",
    "interval_open",
    "last_copy",
    "prior_share",
    "score",
)


@dataclass(frozen=True)
class StoredList:
    """A list after :func:`crawl_list_store`: the new one, or the identical one already stored
    (``new`` False)."""

    crawl_list: CrawlList
    new: bool

    def summary(self) -> str:
        """One sentence for the page and the terminal."""
        crawl = self.crawl_list
        count = crawl.entries.count()
        built = f"{count} of {crawl.eligible_sites} sites"
        short = " ".join(filter(None, ["", list_shortfall(crawl, count), crawl.notice]))
        what = "Daily crawl list" if crawl.is_daily else "Crawl list"
        if self.new:
            kept = "" if crawl.is_daily else _EXPERIMENT
            return f"{what} for {day_text(crawl.date)} built: {built}.{short}{kept}"
        when = crawl.created_at.astimezone(UTC)
        return (
            f"{what} for {day_text(crawl.date)}: {built}.{short} Same as the list built at "
            f"{when:%H:%M} UTC on {day_text(when)} {crawl.built_by}; not stored again."
        )


_EXPERIMENT = (
    " Stored as an experiment: the daily job builds the day's list that Overview, the feed and "
    "the hand-offs use."
)


def list_shortfall(crawl_list: CrawlList, count: int | None = None) -> str:
    """Why a list holds fewer sites than its budget k, in a sentence; empty when it holds k or
    has no budget. ``count`` is the number of its entries, when known."""
    k = crawl_list.budget
    n = crawl_list.entries.count() if count is None else count
    if k is None or n >= k:
        return ""
    theta, eligible = crawl_list.theta, crawl_list.eligible_sites
    sites = "site" if n == 1 else "sites"
    if theta is not None and n < eligible:
        return (
            f"It holds {n:,} {sites}, not the budget's {k:,}: only {n:,} reach the threshold "
            f"θ {theta:g}. A list built with a budget and no θ fills its k."
        )
    return (
        f"It holds {n:,} {sites}, not the budget's {k:,}: only {eligible:,} "
        f"{'site has' if eligible == 1 else 'sites have'} a capture in the "
        f"{crawl_list.history_days:,}-day history window."
    )


def crawl_list_store(
    *, day: date, options: CrawlListOptions, source: str, user: Any = None, terminal_user: str = ""
) -> StoredList:
    """Rank the sites for ``day`` and store the list with its parameters and who built it.

    The daily job (``source`` DAILY_JOB) stores the one daily list of ``day``: once it exists,
    it is returned as it is (a run taken over after a crash hands off the list the first run
    built), and a list built by hand is never taken for it. A list built by hand is an
    experiment; when the newest stored list with the same date and options is identical
    (``ENTRY_FIELDS``), that one is returned and nothing is stored."""
    daily = source == CrawlList.Source.DAILY_JOB
    if daily:
        existing = CrawlList.objects.daily_for(day)
        if existing is not None:
            return StoredList(existing, new=False)
    ranked_list = crawl_list_rank(day=day, options=options)
    # The list's parameters are its options (the fields of CrawlListOptions) on its date.
    parameters = {"date": day, **options.to_json(), "scorer": ranked_list.scorer}
    entries = [_entry(rank, r) for rank, r in enumerate(ranked_list.sites, start=1)]
    with transaction.atomic():
        crawl_list_lock({"daily": day} if daily else parameters)
        same = (
            CrawlList.objects.daily().filter(date=day)
            if daily
            else CrawlList.objects.filter(**parameters)
        )
        previous = same.select_related("created_by").order_by("-created_at", "-pk").first()
        if previous is not None and (
            daily or _same_entries(previous, ranked_list.eligible, entries)
        ):
            return StoredList(previous, new=False)
        crawl_list = CrawlList.objects.create(
            **parameters,
            eligible_sites=ranked_list.eligible,
            source=source,
            is_daily=daily,
            notice=ranked_list.notice,
            round_robin_expected=ranked_list.round_robin_expected,
            created_by=user if getattr(user, "is_authenticated", False) else None,
            terminal_user=terminal_user,
        )
        for entry in entries:
            entry.crawl_list = crawl_list
        CrawlListEntry.objects.bulk_create(entries, batch_size=2000)
    return StoredList(crawl_list, new=True)


def _entry(rank: int, ranked: RankedSite) -> CrawlListEntry:
    """The stored entry of a ranked site, with the evidence behind its probability."""
    evidence = ranked.evidence
    return CrawlListEntry(
        rank=rank,
        site_id=ranked.site_id,
        probability=ranked.probability,
        rate=ranked.rate,
        tau=ranked.tau,
        observations=evidence.observations,
        updates=evidence.updates,
        span_days=evidence.span_days,
        interval_low=evidence.interval_low,
        interval_high=evidence.interval_high,
        interval_open=evidence.interval_open,
        last_copy=evidence.last_copy,
        prior_share=evidence.prior_share,
        score=ranked.score,
    )


def crawl_list_lock(parameters: dict[str, Any]) -> None:
    """Hold the lists with these parameters until the current transaction ends, so that two
    builds of one list at the same instant (the daily job and a librarian's click) store it
    once: the second waits, then finds the first's list identical.

    PostgreSQL takes a transaction-scoped advisory lock on a digest of the parameters. SQLite
    needs none: HACS opens its transactions IMMEDIATE (``hacs_site.env``), one writer at a time.
    """
    if connection.vendor != "postgresql":
        return
    text = "crawl-list|" + "|".join(
        f"{key}={_key_text(parameters[key])}" for key in sorted(parameters)
    )
    digest = hashlib.blake2b(text.encode(), digest_size=8).digest()
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_advisory_xact_lock(%s)", [int.from_bytes(digest, "big", signed=True)]
        )


def _key_text(value: Any) -> str:
    """The same text for the same parameter from the page, the job or the command line (an
    enum member or its string, 0 or 0.0, a scorer or its key)."""
    if value is None:
        return ""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return repr(float(value))
    return str(getattr(value, "pk", value))


def _same_entries(stored: CrawlList, eligible: int, entries: list[CrawlListEntry]) -> bool:
    if stored.eligible_sites != eligible or stored.entries.count() != len(entries):
        return False
    rows = stored.entries.order_by("rank").values_list(*ENTRY_FIELDS)
    fresh = ([getattr(entry, name) for name in ENTRY_FIELDS] for entry in entries)
    return all(list(row) == values for row, values in zip(rows.iterator(2000), fresh, strict=True))


def crawl_list_rows(crawl_list: CrawlList) -> Iterator[list[str]]:
    """The list's CSV rows (header first), in rank order, one query."""
    yield CSV_COLUMNS
    rows = crawl_list.entries.order_by("rank").values_list(
        "rank",
        "site__seed_url",
        "site__author",
        "probability",
        "rate",
        "tau",
        "updates",
        "observations",
        "span_days",
        "interval_low",
        "interval_high",
        "last_copy",
        "score",
    )
    for row in rows.iterator(chunk_size=5000):
        rank, url, author, probability, rate, tau, updates, count, span, low, high, copy, score = (
            row
        )
        yield [
            str(rank),
            neutralise(url),
            neutralise(author),
            f"{probability:.6f}",
            rate_cell(rate),
            interval_cell(rate),
            last_update_cell(tau, updates),
            str(count),
            days_cell(span),
            days_cell(low),
            days_cell(high),
            tau_cell(copy),
            "" if score is None else f"{score:.6g}",
        ]


def crawl_list_csv(crawl_list: CrawlList, *, excel: bool = False) -> Iterator[str]:
    """The CSV text, streamed a few hundred rows at a time; for ``excel`` it begins with a
    UTF-8 byte order mark (``scheduling.cells.EXCEL_BOM``)."""
    if excel:
        yield EXCEL_BOM
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    for n, row in enumerate(crawl_list_rows(crawl_list)):
        writer.writerow(row)
        if n % 500 == 0:
            yield buffer.getvalue()
            buffer.seek(0)
            buffer.truncate()
    yield buffer.getvalue()


def crawl_list_seed_urls(crawl_list: CrawlList, *, tag_id: int | None = None) -> Iterator[str]:
    """The list's seed URLs in rank order; with a tag, only the sites carrying it."""
    entries = crawl_list.entries.order_by("rank")
    if tag_id is not None:
        entries = entries.filter(site__tags=tag_id)
    yield from entries.values_list("site__seed_url", flat=True).iterator(chunk_size=5000)


def seed_list_lines(urls: Iterable[str], header: Sequence[str] = ()) -> Iterator[str]:
    """A seed list as crawlers take it (Heritrix, Browsertrix, Archive-It): ``#`` comment lines
    saying where it comes from, then one URL a line."""
    for line in header:
        yield f"# {line}\n"
    for url in urls:
        yield url + "\n"


def crawl_list_urls(crawl_list: CrawlList) -> Iterator[str]:
    """The list's seed list, one URL a line in rank order (the download and ``crawl_list``)."""
    return seed_list_lines(crawl_list_seed_urls(crawl_list))
