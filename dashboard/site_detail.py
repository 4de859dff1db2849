"""The Site page's queries: one site's captures, updates and estimates — glue between the ORM
and the pure core.

* :func:`site_history` — one site's captures, updates (with the links each added) and timeline
  figure, from two queries;
* :func:`site_estimates` — the site's stored estimates and their probability curves;
* :func:`page_updates` and its helpers — the updates of whole pages with the links each added,
  which the feeds (``dashboard.feeds``) list too.

The Sites table's queries are in ``dashboard.sites``.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from typing import Any

import numpy as np
from django.urls import reverse

from archive.models import Capture, LinkSnapshot, Site
from dashboard import charts
from dashboard.sources import HandOffNames, is_library_crawl, source_label
from hacs.clock import from_days, reference_instant, to_days
from hacs.estimators import accesses, update_instants
from hacs.formats.canon import surt_to_url
from hacs.formats.cdx import memento_url
from hacs.updates import is_window_update, timeline_order
from hacs_demo.files import LOCAL_WARC_NAME
from scheduling import cells
from scheduling.cells import Moment, interval_text
from scheduling.models import DEFAULT_METHOD, Estimate, Level, Method

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


#: The columns :class:`CaptureReader` reads a capture from, in this order.
CAPTURE_FIELDS = (
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


class CaptureReader:
    """Rows of :data:`CAPTURE_FIELDS` as the Site page and the feeds show them: each source's
    replay (and, with ``names``, its name in words) looked up once."""

    def __init__(self, wayback_url: str, *, names: HandOffNames | None = None) -> None:
        self.wayback_url = wayback_url
        self.names = names
        self.archives: dict[str, str] = {}  # each capture's replay, by the source it came from
        self.labels: dict[str, str] = {}  # and its source in words

    def read(self, values: Sequence[Any]) -> tuple[CaptureRow, PageObservation | None]:
        """The capture's row, and its observation when it takes part in update detection."""
        moment, url, page_key, depth, kind, status, index, floor, new, snapshot_id, source = values
        if source not in self.archives:
            self.archives[source] = capture_archive_url(source, wayback_url=self.wayback_url)
            if self.names is not None:
                self.labels[source] = source_label(source, self.names)
        if self.names is None:
            row = CaptureRow(moment, url, depth, kind, status, self.archives[source])
        else:
            row = CaptureRow(
                moment,
                url,
                depth,
                kind,
                status,
                self.archives[source],
                self.labels[source],
                is_library_crawl(source),
            )
        if index is None or floor is None:
            return row, None
        return row, PageObservation(row, _iso(moment), page_key, index, floor, new, snapshot_id)


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
        .values_list(*CAPTURE_FIELDS)
    )
    captures: list[tuple[CaptureRow, str]] = []
    observations: list[PageObservation] = []
    kinds: Counter[str] = Counter()
    reader = CaptureReader(wayback_url, names=HandOffNames())
    for values in rows:
        row, observation = reader.read(values)
        captures.append((row, observation.iso if observation else _iso(row.timestamp)))
        kinds[row.kind] += 1
        if observation is not None:
            observations.append(observation)
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
            lately = _captured_lately(estimate, window_start)
            values = _curve_values(estimate, t, e_days) if lately else None
            if values is not None:
                probability = float(values[0])
                name = f"{level_label.split(' (')[0]} · {method_label.lower()}"
                curves.append(charts.Curve(name, [float(v) for v in values]))
            row = (level, str(level_label), method, str(method_label))
            rows.append(EstimateRow(*row, estimate, probability, lately))
    figure = (
        charts.probability_figure(dates, curves, e_days=e_days, theta=theta) if curves else None
    )
    return SiteEstimates(
        rows=rows, figure=figure, dates=(today, today + timedelta(days=horizon_days))
    )


def _captured_lately(estimate: Estimate | None, window_start: float | None) -> bool:
    """Whether the estimate's newest copy lies in the window from ``window_start`` on (or is
    not known to lie before it)."""
    return (
        window_start is None
        or estimate is None
        or estimate.rate is None
        or estimate.last_copy_days is None
        or estimate.last_copy_days >= window_start
    )


def _curve_values(estimate: Estimate | None, t: np.ndarray, e_days: float) -> np.ndarray | None:
    """g(λ, τ, t, e) at the times ``t`` (days), or None without a known λ and a finite τ."""
    if estimate is None or estimate.rate is None:
        return None
    tau = estimate.tau_days
    if tau is None or not math.isfinite(tau):
        return None
    return estimate.change_probability(t_days=t, e_days=e_days)
