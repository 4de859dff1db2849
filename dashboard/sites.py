"""Queries behind the Sites table: glue between the ORM and the pure core.

* :func:`site_rows` — the Sites table as one query whatever the number of sites: each site
  joined (``FilteredRelation``) to the one stored estimate of the chosen level and method,
  searched, filtered and ordered in SQL, including by the probability of change;
* :func:`site_row_values` — the display values of one page of that query;
* :func:`site_rows_csv` — every page of that query as CSV.

The Site page's (one site's history and estimates) are in ``dashboard.site_detail``.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

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

from archive.models import ArchiveCheck, Site
from archive.wayback import ArchiveConfig
from dashboard.health import health_filter, row_badges, stopped_annotation

# Older callers read one site's history from here; it lives with the Site page's queries.
from dashboard.site_detail import site_history as site_history
from hacs.clock import from_days
from scheduling import cells
from scheduling.cells import Moment, interval_text
from scheduling.estimates import exposure_expression
from scheduling.models import DEFAULT_METHOD, Estimate, Level, estimate_probabilities

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
    rows = (
        Site.objects.search(query.q)
        .annotate(
            est=FilteredRelation(
                "estimates",
                condition=Q(estimates__level=query.level, estimates__method=query.method),
            )
        )
        .annotate(**_estimate_columns(query, t_days, e_days, window_start))
        .defer("import_error")
        .select_related("health")
        .prefetch_related("tags")
    )
    ordering = _ordering(query.sort_key, query.descending)
    return _filtered(rows, query, t_days).order_by(*ordering, "canonical_key")


def _estimate_columns(
    query: SiteListQuery, t_days: float, e_days: float, window_start: float | None
) -> dict[str, Any]:
    """The annotations of a row: its joined estimate's values (``est_*``), whether it was
    captured lately, the key that orders by probability, its last update, its health and when
    the archive was last asked."""
    exposure = exposure_expression(
        method=query.method, t_days=t_days, e_days=e_days, prefix="est__"
    )
    archive_source = ArchiveConfig.from_settings().source  # "archive asked" in the Import cell
    return {
        **{f"est_{name}": F(f"est__{field}") for name, field in _ESTIMATE_FIELDS.items()},
        "captured_lately": (
            Value(True)
            if window_start is None
            else Case(
                When(_copied_since(window_start), then=Value(True)),
                default=Value(False),
                output_field=BooleanField(),
            )
        ),
        "p_key": (
            exposure
            if window_start is None
            else Case(
                When(_copied_since(window_start), then=exposure),
                default=None,
                output_field=FloatField(),
            )
        ),
        "last_update": Case(
            When(est__updates__gt=0, then=F("est__tau")), default=None, output_field=DateTimeField()
        ),
        "health_stopped": stopped_annotation(),
        "archive_asked": Subquery(
            ArchiveCheck.objects.filter(site=OuterRef("pk"), source=archive_source)
            .order_by()
            .values("checked_at")[:1]
        ),
    }


# A row's ``est_<name>``: the joined estimate's field.
_ESTIMATE_FIELDS = {
    "id": "id",
    "rate": "rate",
    "tau": "tau",
    "tau_days": "tau_days",
    "observations": "observations",
    "updates": "updates",
    "shape": "posterior_shape",
    "beta": "posterior_rate",
    "last_copy": "last_copy",
    "last_copy_days": "last_copy_days",
    "span_days": "span_days",
    "interval_low": "interval_low",
    "interval_high": "interval_high",
    "interval_open": "interval_open",
}


def _filtered(rows: QuerySet[Site], query: SiteListQuery, t_days: float) -> QuerySet[Site]:
    """The rows the query's tag, status, history and health filters keep."""
    if query.tag:
        rows = rows.filter(tags__name=query.tag)
    if query.status == "paused":
        rows = rows.filter(paused=True)
    elif query.status:
        rows = rows.filter(import_status=query.status)
    if query.history == "estimated":
        rows = rows.filter(Q(est__rate__isnull=False, est__updates__gt=0))
    elif query.history == "no_update":
        rows = rows.filter(Q(est__rate__isnull=False, est__updates=0))
    elif query.history == "insufficient":
        rows = rows.filter(Q(est__rate__isnull=True))
    if query.health:
        rows = health_filter(rows, query.health, now=from_days(t_days) or datetime.now(UTC))  # type: ignore[assignment]  # same rows, fewer
    return rows


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
