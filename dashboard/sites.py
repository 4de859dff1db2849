"""Queries behind the Sites table and the Site page: glue between the ORM and the pure core.

* :func:`site_rows` — the Sites table as one query whatever the number of sites: each site
  joined (``FilteredRelation``) to the one stored estimate of the chosen level and method,
  searched, filtered and ordered in SQL, including by the probability of change;
* :func:`site_row_values` — the display values of one page of that query;
* :func:`site_history` — one site's captures, updates (with the links each added) and timeline
  figure, from two queries;
* :func:`site_estimates` — the site's stored estimates and their probability curves.
"""

from __future__ import annotations

import csv
import io
import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from typing import Any

import numpy as np
from django.core.paginator import Paginator
from django.db.models import (
    BooleanField,
    Case,
    DateTimeField,
    F,
    FilteredRelation,
    FloatField,
    OrderBy,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
    Value,
    When,
)
from django.urls import reverse

from archive.models import ArchiveCheck, Capture, LinkSnapshot, Site
from archive.wayback import ArchiveConfig
from dashboard import charts
from dashboard.health import health_filter, row_badges, stopped_annotation
from dashboard.sources import HandOffNames, is_library_crawl, source_label
from hacs.clock import from_days, reference_instant, to_days
from hacs.estimators import accesses, update_instants
from hacs.formats.canon import surt_to_url
from hacs.formats.cdx import memento_url
from hacs.updates import is_window_update, timeline_order
from hacs_demo.files import LOCAL_WARC_NAME
from scheduling import cells
from scheduling.cells import Moment, interval_text
from scheduling.estimates import exposure_expression
from scheduling.models import DEFAULT_METHOD, Estimate, Level, Method, estimate_probabilities

# --- The Sites table --------------------------------------------------------------------------

# The History filter, by what the window's copies showed: an update, none, or too few copies to
# estimate (no estimate at all counts as too few). By the updates, not by λ: the posterior (the
# default estimate) gives a site without an update a rate above 0 from the collection's prior.
HISTORY_FILTERS = {
    "estimated": "Updates seen",
    "no_update": "No update seen",
    "insufficient": "Insufficient history",
}

# Sort keys of the Sites table, with the direction a first click on the column asks for.
SORT_KEYS = {
    "author": "asc",
    "url": "asc",
    "interval": "asc",
    "probability": "desc",
    "updated": "desc",
    "observations": "desc",
    "updates": "desc",
}
DEFAULT_SORT = "-probability"


@dataclass(frozen=True)
class SiteListQuery:
    """What the Sites table shows: search text, filters, the estimate to show, the order.

    ``sort`` is a key of :data:`SORT_KEYS`, prefixed with ``-`` for descending order.
    """

    q: str = ""
    tag: str = ""
    status: str = ""
    history: str = ""
    health: str = ""
    level: str = Level.HOMEPAGE
    method: str = DEFAULT_METHOD
    sort: str = DEFAULT_SORT

    @property
    def sort_key(self) -> str:
        return self.sort.lstrip("-")

    @property
    def descending(self) -> bool:
        return self.sort.startswith("-")


def site_rows(
    *, query: SiteListQuery, t_days: float, e_days: float, window_start: float | None = None
) -> QuerySet[Site]:
    """The Sites table as one queryset, ready to paginate (a count and a page of rows).

    With ``window_start`` (days: the crawl list's history window's first instant), a site whose
    newest copy is older has no probability of change here, as on the crawl list, which does
    not hold it: it is *not captured lately* and sorts after the sites with one.

    Each site is joined to its estimate at ``query.level`` by ``query.method`` (at most one,
    by the estimate's unique constraint), so the table costs the same queries at 20,000 sites
    as at 20. Ordering by probability happens in SQL: p = 1 − exp(−λ (t + e − τ)) is increasing
    in ``λ · (t + e − τ)``, so that product orders the rows. Unknown values (no estimate, λ
    unknown, no update) sort last in both directions; the canonical key breaks ties so that
    pages never overlap.
    """
    exposure = exposure_expression(
        method=query.method, t_days=t_days, e_days=e_days, prefix="est__"
    )
    archive_source = ArchiveConfig.from_settings().source  # "archive asked" in the Import cell
    rows = (
        Site.objects.search(query.q)
        .annotate(
            est=FilteredRelation(
                "estimates",
                condition=Q(estimates__level=query.level, estimates__method=query.method),
            )
        )
        .annotate(
            est_id=F("est__id"),
            est_rate=F("est__rate"),
            est_tau=F("est__tau"),
            est_tau_days=F("est__tau_days"),
            est_observations=F("est__observations"),
            est_updates=F("est__updates"),
            est_shape=F("est__posterior_shape"),
            est_beta=F("est__posterior_rate"),
            est_last_copy=F("est__last_copy"),
            est_last_copy_days=F("est__last_copy_days"),
            est_span_days=F("est__span_days"),
            est_interval_low=F("est__interval_low"),
            est_interval_high=F("est__interval_high"),
            est_interval_open=F("est__interval_open"),
            captured_lately=(
                Value(True)
                if window_start is None
                else Case(
                    When(_copied_since(window_start), then=Value(True)),
                    default=Value(False),
                    output_field=BooleanField(),
                )
            ),
            p_key=(
                exposure
                if window_start is None
                else Case(
                    When(_copied_since(window_start), then=exposure),
                    default=None,
                    output_field=FloatField(),
                )
            ),
            last_update=Case(
                When(est__updates__gt=0, then=F("est__tau")),
                default=None,
                output_field=DateTimeField(),
            ),
            health_stopped=stopped_annotation(),
            archive_asked=Subquery(
                ArchiveCheck.objects.filter(site=OuterRef("pk"), source=archive_source)
                .order_by()
                .values("checked_at")[:1]
            ),
        )
        .defer("import_error")
        .select_related("health")
        .prefetch_related("tags")
    )
    if query.tag:
        rows = rows.filter(tags__name=query.tag)
    if query.status == "paused":
        rows = rows.filter(paused=True)
    elif query.status:
        rows = rows.filter(import_status=query.status)
    if query.history == "estimated":
        rows = rows.filter(est__rate__isnull=False, est__updates__gt=0)
    elif query.history == "no_update":
        rows = rows.filter(est__rate__isnull=False, est__updates=0)
    elif query.history == "insufficient":
        rows = rows.filter(est__rate__isnull=True)
    if query.health:
        rows = health_filter(rows, query.health, now=from_days(t_days) or datetime.now(UTC))  # type: ignore[assignment]  # same rows, fewer
    return rows.order_by(*_ordering(query.sort_key, query.descending), "canonical_key")


def _copied_since(window_start: float) -> Q:
    """Estimates with a copy from ``window_start`` on (one without a recorded copy is given the
    benefit of the doubt: only a copy known to be older makes a site not captured lately)."""
    return Q(est__last_copy_days__gte=window_start) | Q(est__last_copy_days__isnull=True)


def _ordering(key: str, descending: bool) -> list[OrderBy]:
    def by(expression: Any, desc: bool) -> OrderBy:
        return OrderBy(expression, descending=desc, nulls_last=True)

    if key == "author":
        return [by(F("author"), descending)]
    if key == "url":
        return [by(F("seed_url"), descending)]
    if key == "interval":
        # 1/λ ascending is λ descending; λ = 0 ("no update seen") is the longest interval.
        return [by(F("est_rate"), not descending)]
    if key == "updated":
        return [by(F("last_update"), descending)]
    if key == "observations":
        return [by(F("est_observations"), descending)]
    if key == "updates":
        return [by(F("est_updates"), descending)]
    return [by(F("p_key"), descending)]


@dataclass(frozen=True)
class SiteRow:
    """One line of the Sites table, with the values it shows."""

    site: Site
    tags: list[str]
    has_estimate: bool
    rate: float | None
    interval_days: float | None
    probability: float | None
    last_update: datetime | None
    observations: int | None
    updates: int | None
    span_days: float | None = None
    interval_low: float | None = None
    interval_high: float | None = None
    # An open interval: the mean interval is at most ``interval_high`` days, no lower bound
    # (``hacs.bayes.interval_bounds``).
    interval_open: bool = False
    last_copy: datetime | None = None
    # A copy in the crawl list's history window (``site_rows``' ``window_start``): without one,
    # the site is not captured lately and shows no probability of change.
    captured_lately: bool = True
    # Seed health problems, as (Health filter key, label) pairs (``dashboard.health``).
    badges: tuple[tuple[str, str], ...] = ()

    @property
    def updated(self) -> Moment | None:
        """τ as every page writes it (``scheduling.cells``)."""
        return cells.moment(self.last_update)

    @property
    def interval(self) -> str:
        return interval_text(self.rate)


def site_row_values(
    sites: Iterable[Site], *, method: str, t_days: float, e_days: float
) -> list[SiteRow]:
    """Display values of a page of :func:`site_rows` (no queries beyond the page's own)."""
    found: list[SiteRow] = []
    page = list(sites)
    estimates = [
        Estimate(
            method=method,
            rate=getattr(site, "est_rate", None),
            tau_days=getattr(site, "est_tau_days", None),
            posterior_shape=getattr(site, "est_shape", None),
            posterior_rate=getattr(site, "est_beta", None),
            last_copy_days=getattr(site, "est_last_copy_days", None),
        )
        for site in page
    ]
    probabilities = estimate_probabilities(estimates, t_days=t_days, e_days=e_days)
    now = from_days(t_days) or datetime.now(UTC)
    for site, estimate, probability in zip(page, estimates, probabilities, strict=True):
        rate = estimate.rate
        found.append(
            SiteRow(
                site=site,
                tags=[tag.name for tag in site.tags.all()],
                has_estimate=getattr(site, "est_id", None) is not None,
                rate=rate,
                interval_days=1.0 / rate if rate else None,
                probability=(
                    None
                    if rate is None or not getattr(site, "captured_lately", True)
                    else float(probability)
                ),
                last_update=getattr(site, "last_update", None),
                observations=getattr(site, "est_observations", None),
                updates=getattr(site, "est_updates", None),
                span_days=getattr(site, "est_span_days", None),
                interval_low=getattr(site, "est_interval_low", None),
                interval_high=getattr(site, "est_interval_high", None),
                interval_open=bool(getattr(site, "est_interval_open", False)),
                last_copy=getattr(site, "est_last_copy", None),
                captured_lately=bool(getattr(site, "captured_lately", True)),
                badges=tuple(row_badges(site, now=now)),
            )
        )
    return found


# --- One site's history -----------------------------------------------------------------------

_KIND_GROUP: dict[str, str] = {
    Capture.Kind.OBSERVATION: "observation",
    Capture.Kind.REVISIT: "revisit",
    Capture.Kind.REDIRECT: "redirect_error",
    Capture.Kind.ERROR: "redirect_error",
}
_KIND_LABEL: dict[str, str] = {value: str(label) for value, label in Capture.Kind.choices}
# How the Site page counts captures of each kind ("64 observations; 57 revisits; …").
_KIND_PLURAL: dict[str, str] = {
    Capture.Kind.OBSERVATION: "observations",
    Capture.Kind.REVISIT: "revisits",
    Capture.Kind.REVISIT_ORPHAN: "revisits without their original",
    Capture.Kind.REDIRECT: "redirects",
    Capture.Kind.ERROR: "errors",
    Capture.Kind.NON_HTML: "not HTML",
    Capture.Kind.DUPLICATE: "repeated rows",
}
_KIND_SINGULAR: dict[str, str] = {
    Capture.Kind.OBSERVATION: "observation",
    Capture.Kind.REVISIT: "revisit",
    Capture.Kind.REVISIT_ORPHAN: "revisit without its original",
    Capture.Kind.REDIRECT: "redirect",
    Capture.Kind.ERROR: "error",
    Capture.Kind.NON_HTML: "not HTML",
    Capture.Kind.DUPLICATE: "repeated row",
}


def _kind_counts(kinds: Counter[str]) -> list[tuple[str, int]]:
    """The captures by kind as the Site page counts them: a revisit is an observation (the
    content of an earlier capture, DESIGN rule 1), so observations count them, as the
    estimates do, and say how many they hold."""
    counted = Counter(kinds)
    revisits = counted.pop(Capture.Kind.REVISIT, 0)
    counted[Capture.Kind.OBSERVATION] += revisits
    found = []
    for value in Capture.Kind.values:
        n = counted.get(value, 0)
        if not n:
            continue
        label = (_KIND_SINGULAR if n == 1 else _KIND_PLURAL)[value]
        if value == Capture.Kind.OBSERVATION and revisits:
            label += (
                f" ({revisits} of them {'a revisit' if revisits == 1 else 'revisits'}: the "
                "content of an earlier capture)"
            )
        found.append((label, n))
    return found


#: The source of the captures ``load_demo`` imports from the demo archive HACS keeps itself.
DEMO_ARCHIVE_SOURCE = f"warc:{LOCAL_WARC_NAME}"


def capture_archive_url(source: str, *, wayback_url: str) -> str:
    """Where a capture is replayed, by the archive it came from: the synthetic demo archive's
    captures in the replay HACS serves of it (``/demo-archive``), since no public archive ever
    held them; the library's own crawls nowhere (empty: their WARC files are the library's, not
    an archive's HACS can link to); every other capture in ``wayback_url``, the configured
    Wayback Machine."""
    if is_library_crawl(source):
        return ""
    if source == DEMO_ARCHIVE_SOURCE:
        sample = reverse("demo-archive", args=["0" * 14, "u"])
        return sample[: -len("/00000000000000/u")]
    return wayback_url


@dataclass(frozen=True)
class AddedLink:
    url: str
    replay_url: str


@dataclass(frozen=True)
class CaptureRow:
    timestamp: datetime
    url: str
    depth: int
    kind: str
    status: int | None
    wayback_url: str
    source: str = ""  # where it came from, in words (``dashboard.sources``)
    crawl: bool = False  # made by the library's own crawler

    @property
    def kind_label(self) -> str:
        return _KIND_LABEL.get(self.kind, self.kind)

    @property
    def replay_url(self) -> str:
        """The capture in its archive; empty for a library crawl's, which no archive holds."""
        if not self.wayback_url:
            return ""
        return memento_url(self.wayback_url, self.timestamp, self.url)


@dataclass(frozen=True)
class UpdateRow:
    """An update by DESIGN rule 3 over the page's whole history, with the links it added
    (in SURT form, sorted)."""

    capture: CaptureRow
    previous: CaptureRow | None
    added: list[str]

    @property
    def is_homepage(self) -> bool:
        return self.capture.depth == 0

    @property
    def added_links(self) -> list[AddedLink]:
        """The added links as URLs, each with the archive's copy nearest the update."""
        links = [surt_to_url(link) for link in self.added]
        moment, wayback = self.capture.timestamp, self.capture.wayback_url
        # A library crawl's update links the pages themselves: no archive holds that copy.
        return [
            AddedLink(url, memento_url(wayback, moment, url) if wayback else url) for url in links
        ]


@dataclass
class SiteHistory:
    capture_count: int = 0
    kind_counts: list[tuple[str, int]] = field(default_factory=list)
    first_capture: datetime | None = None
    last_capture: datetime | None = None
    updates: list[UpdateRow] = field(default_factory=list)
    homepage_update_count: int = 0
    recent_captures: list[CaptureRow] = field(default_factory=list)
    timeline: charts.Figure | None = None


@dataclass
class PageObservation:
    """An observation of a page that takes part in update detection (it has a page index)."""

    row: CaptureRow
    iso: str
    page_key: str
    page_index: int
    link_floor: int
    new_links: int | None
    snapshot_id: int | None

    @property
    def is_update(self) -> bool:
        # DESIGN rule 3 in the window that starts at the page's first observation (j = 0).
        return bool(is_window_update(self.page_index, self.link_floor, 0))


def _timeline(observations: list[PageObservation]) -> list[PageObservation]:
    """The observations merged into one timeline by DESIGN rule 4 (``hacs.updates``), as the
    estimates merge them: by time, then page, then the page's own order."""
    pages = {key: n for n, key in enumerate(dict.fromkeys(o.page_key for o in observations))}
    order = timeline_order(
        np.zeros(len(observations), dtype=np.int64),
        [to_days(o.row.timestamp) for o in observations],
        [pages[o.page_key] for o in observations],
        [o.page_index for o in observations],
    )
    return [observations[i] for i in order]


def site_history(*, site: Site, wayback_url: str, recent: int = 100) -> SiteHistory:
    """Everything the Site page shows about a site's captures, from at most two queries.

    Captures are read once; when the site has updates, the link sets of its observations are
    read once more (each distinct content once) to list the links each update added: the links
    of its snapshot that no earlier observation of the same page held.
    """
    history = SiteHistory()
    rows = (
        Capture.objects.filter(site=site)
        .order_by("timestamp", "urlkey")
        .values_list(
            "timestamp",
            "url",
            "page_key",
            "depth",
            "kind",
            "status",
            "page_index",
            "link_floor",
            "new_links",
            "snapshot_id",
            "source",
        )
    )
    captures: list[tuple[CaptureRow, str]] = []
    observations: list[PageObservation] = []
    kinds: Counter[str] = Counter()
    archives: dict[str, str] = {}  # each capture's replay, by the source it came from
    labels: dict[str, str] = {}  # and its source in words
    names = HandOffNames()
    for (
        moment,
        url,
        page_key,
        depth,
        kind,
        status,
        page_index,
        floor,
        new,
        snapshot_id,
        source,
    ) in rows:
        if source not in archives:
            archives[source] = capture_archive_url(source, wayback_url=wayback_url)
            labels[source] = source_label(source, names)
        row = CaptureRow(
            moment,
            url,
            depth,
            kind,
            status,
            archives[source],
            labels[source],
            is_library_crawl(source),
        )
        iso = _iso(moment)
        captures.append((row, iso))
        kinds[kind] += 1
        if page_index is not None and floor is not None:
            observations.append(
                PageObservation(row, iso, page_key, page_index, floor, new, snapshot_id)
            )
    if not captures:
        return history

    history.capture_count = len(captures)
    history.kind_counts = _kind_counts(kinds)
    history.first_capture = captures[0][0].timestamp
    history.last_capture = captures[-1][0].timestamp
    history.recent_captures = [row for row, _iso in reversed(captures[-recent:])]
    history.updates = _updates_with_links(site, observations)
    history.homepage_update_count = sum(1 for u in history.updates if u.is_homepage)
    history.timeline = charts.timeline_figure(
        [
            _level_timeline("Homepage", [c for c in captures if c[0].depth == 0], observations, 0),
            _level_timeline("Website", captures, observations, None),
        ]
    )
    return history


def _updates_with_links(site: Site, observations: list[PageObservation]) -> list[UpdateRow]:
    """The site's updates, newest first, each with the links it added to its page."""
    pages = observed_pages(observations)
    if not pages:
        return []
    # One query for every link set the site's observations point to (each content once).
    snapshot_ids = Capture.objects.filter(
        site=site, is_observation=True, page_index__isnull=False
    ).values("snapshot_id")
    return page_updates(pages, snapshot_links(snapshot_ids))


def observed_pages(observations: Iterable[PageObservation]) -> list[list[PageObservation]]:
    """The observations grouped by page, each page in its own order, keeping only the pages
    with an update."""
    by_page: dict[str, list[PageObservation]] = defaultdict(list)
    for obs in observations:
        by_page[obs.page_key].append(obs)
    pages = [sorted(obs, key=lambda o: o.page_index) for obs in by_page.values()]
    return [obs for obs in pages if any(o.is_update for o in obs)]


def snapshot_links(snapshot_ids: Any) -> dict[int, frozenset[str]]:
    """The link sets of the given snapshots (ids or a subquery of them), by id, in one query."""
    return {
        pk: frozenset(text.split("\n")) if text else frozenset()
        for pk, text in LinkSnapshot.objects.filter(pk__in=snapshot_ids).values_list("pk", "links")
    }


def page_updates(
    pages: Iterable[Sequence[PageObservation]], links: dict[int, frozenset[str]]
) -> list[UpdateRow]:
    """The updates of whole pages (each page's observations in its own order), newest first,
    each with the links it added: those of its snapshot that no earlier observation of the page
    held. The Site page and the feeds (``dashboard.feeds``) both list updates through it."""
    updates: list[UpdateRow] = []
    for page in pages:
        seen: set[str] = set()
        for i, obs in enumerate(page):
            held = links.get(obs.snapshot_id or -1, frozenset())
            if obs.is_update:
                previous = page[i - 1].row if i else None
                updates.append(UpdateRow(obs.row, previous, sorted(held - seen)))
            seen |= held
    updates.sort(key=lambda u: (u.capture.timestamp, u.capture.url), reverse=True)
    return updates


def _moment(days: float) -> datetime:
    moment = from_days(days)
    assert moment is not None  # observation times are finite
    return moment


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S")


def _short(url: str) -> str:
    """A capture's URL without scheme and host, for hover boxes: every page of a site shares
    the host, and a timeline can hold thousands of points."""
    rest = url.partition("://")[2]
    path = rest[rest.find("/") :] if "/" in rest else "/"
    return path if rest else url


def _level_timeline(
    name: str,
    captures: Sequence[tuple[CaptureRow, str]],
    observations: Sequence[PageObservation],
    depth: int | None,
) -> charts.LevelTimeline:
    """One level's rows of the timeline: its captures, updates and interpolated instants.

    The interpolated instant of an update is the midpoint between it and the observation
    before it in the level's timeline (DESIGN rules 4 and 6); observations at the same instant
    are one access, as in ``hacs.estimators``.
    """
    groups: dict[str, list[charts.Mark]] = defaultdict(list)
    for row, iso in captures:
        status = "" if row.status is None else f" {row.status}"
        source = f" · {row.source}" if row.source else ""
        text = f"{_short(row.url)} · {row.kind}{status}{source}"
        group = _KIND_GROUP.get(row.kind, "other")
        if row.crawl and group in ("observation", "revisit"):
            group = "crawl"
        groups[group].append(charts.Mark(iso, text))
    level_obs = _timeline([o for o in observations if depth is None or o.row.depth == depth])
    updates = [
        charts.Mark(o.iso, f"{_short(o.row.url)} · {o.new_links or 0} new links")
        for o in level_obs
        if o.is_update
    ]
    # Rules 4 and 6 by the core's functions: one access per instant, each update moved to the
    # midpoint with the access before it.
    times = [to_days(o.row.timestamp) for o in level_obs]
    timeline = accesses(times, [o.is_update for o in level_obs], [0, len(times)])
    midpoints, _site = update_instants(timeline, "interpolated")
    at = np.flatnonzero(timeline.updated)
    interpolated = [
        charts.Mark(
            _iso(_moment(midpoint)),
            f"midpoint of {cells.day_text(_moment(before))} and {cells.day_text(_moment(after))}",
        )
        for midpoint, before, after in zip(
            midpoints.tolist(),
            timeline.times[at - 1].tolist(),
            timeline.times[at].tolist(),
            strict=True,
        )
    ]
    return charts.LevelTimeline(
        name=name, captures=dict(groups), updates=updates, interpolated=interpolated
    )


# --- One site's estimates ---------------------------------------------------------------------


@dataclass(frozen=True)
class EstimateRow:
    level: str
    level_label: str
    method: str
    method_label: str
    estimate: Estimate | None
    probability: float | None
    captured_lately: bool = True  # a copy in the crawl list's history window

    @property
    def is_default(self) -> bool:
        return self.level == Level.HOMEPAGE and self.method == DEFAULT_METHOD

    @property
    def tau(self) -> Moment | None:
        """τ as every page writes it (``scheduling.cells``)."""
        return None if self.estimate is None else cells.moment(self.estimate.tau)

    @property
    def interval(self) -> str:
        return "" if self.estimate is None else interval_text(self.estimate.rate)

    @property
    def rate_text(self) -> str:
        """λ to three significant figures (rates span several orders of magnitude)."""
        rate = None if self.estimate is None else self.estimate.rate
        return "" if rate is None else f"{rate:.3g}"


@dataclass
class SiteEstimates:
    rows: list[EstimateRow]
    figure: charts.Figure | None
    dates: tuple[date, date]

    @property
    def any_open(self) -> bool:
        """Whether an estimate's interval is open (captured too rarely to say how often)."""
        return any(row.estimate is not None and row.estimate.interval_open for row in self.rows)

    @property
    def any_prior_led(self) -> bool:
        """Whether a shown probability rests mostly on the collection's prior."""
        return any(
            row.estimate is not None and row.estimate.rests_on_prior and row.probability is not None
            for row in self.rows
        )


def site_estimates(
    *,
    site: Site,
    today: date,
    e_days: float,
    theta: float | None,
    horizon_days: int = 90,
    window_start: float | None = None,
) -> SiteEstimates:
    """The site's four stored estimates (level × method) and g(λ, τ, t, e) for t from today to
    today + ``horizon_days``, one curve per estimate with a known λ (one query). With
    ``window_start`` (days), an estimate whose newest copy is older shows no probability: the
    site is not captured lately, and no crawl list of that window holds it."""
    stored = {(e.level, e.method): e for e in Estimate.objects.filter(site=site)}
    t0 = to_days(reference_instant(today))  # the end of today, as every page and list uses
    t = t0 + np.arange(horizon_days + 1, dtype=np.float64)
    dates = [(today + timedelta(days=k)).isoformat() for k in range(horizon_days + 1)]
    rows: list[EstimateRow] = []
    curves: list[charts.Curve] = []
    for level, level_label in Level.choices:
        for method, method_label in Method.choices:
            estimate = stored.get((level, method))
            probability = None
            lately = (
                window_start is None
                or estimate is None
                or estimate.rate is None
                or estimate.last_copy_days is None
                or estimate.last_copy_days >= window_start
            )
            if estimate is not None and estimate.rate is not None and lately:
                tau = estimate.tau_days
                if tau is not None and math.isfinite(tau):
                    values = estimate.change_probability(t_days=t, e_days=e_days)
                    probability = float(values[0])
                    name = f"{level_label.split(' (')[0]} · {method_label.lower()}"
                    curves.append(charts.Curve(name, [float(v) for v in values]))
            rows.append(
                EstimateRow(
                    level,
                    str(level_label),
                    method,
                    str(method_label),
                    estimate,
                    probability,
                    lately,
                )
            )
    figure = (
        charts.probability_figure(dates, curves, e_days=e_days, theta=theta) if curves else None
    )
    return SiteEstimates(
        rows=rows, figure=figure, dates=(today, today + timedelta(days=horizon_days))
    )


# --- The Sites table as CSV -------------------------------------------------------------------

SITES_CSV_COLUMNS = [
    "url",
    "author",
    "tags",
    "import_status",
    "paused",
    "level",
    "method",
    "probability",
    "rate_per_day",
    "interval_days",
    "tau",
    "observations",
    "updates",
    "interval_low_days",
    "interval_high_days",
    "last_copy",
    "health",
]


def site_rows_csv(
    *, query: SiteListQuery, t_days: float, e_days: float, window_start: float | None
) -> Iterator[str]:
    """Every site the Sites table shows for ``query`` (all its pages), as CSV, in its order:
    the values the table shows, with ``tau`` empty where the table shows "–" (no update)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(SITES_CSV_COLUMNS)
    rows = site_rows(query=query, t_days=t_days, e_days=e_days, window_start=window_start)
    paginator = Paginator(rows, 2000)
    for number in paginator.page_range:
        for row in site_row_values(
            paginator.page(number).object_list, method=query.method, t_days=t_days, e_days=e_days
        ):
            site = row.site
            writer.writerow(
                [
                    cells.neutralise(site.seed_url),
                    cells.neutralise(site.author),
                    cells.neutralise("; ".join(row.tags)),
                    site.import_status,
                    "yes" if site.paused else "",
                    query.level,
                    query.method,
                    "" if row.probability is None else f"{row.probability:.6f}",
                    cells.rate_cell(row.rate),
                    cells.interval_cell(row.rate),
                    cells.last_update_cell(row.last_update, row.updates),
                    "" if row.observations is None else str(row.observations),
                    "" if row.updates is None else str(row.updates),
                    cells.days_cell(row.interval_low),
                    cells.days_cell(row.interval_high),
                    cells.tau_cell(row.last_copy),
                    "; ".join(label for _key, label in row.badges),
                ]
            )
        yield buffer.getvalue()
        buffer.seek(0)
        buffer.truncate()
