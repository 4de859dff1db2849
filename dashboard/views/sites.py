"""Pages about seed sites: the Sites table and one site's history (the upload is in
``views_upload``)."""

from __future__ import annotations

from django.conf import settings
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render

from archive.models import Site, Tag
from archive.wayback import ArchiveConfig
from dashboard.forms import SiteListForm
from dashboard.sites import (
    DEFAULT_SORT,
    SORT_KEYS,
    site_estimates,
    site_history,
    site_row_values,
    site_rows,
)
from hacs.clock import reference_instant, to_days
from hacs_site.clock import today
from scheduling.cells import due_text, horizon_day
from scheduling.models import Level, Method

SITES_PER_PAGE = 50
UPDATES_SHOWN = 200  # newest first; the timeline shows every update

# Columns of the Sites table: (sort key or "" when not sortable, header, second line, numeric).
COLUMNS = [
    ("author", "Author", "", False),
    ("url", "Seed URL", "", False),
    ("", "Tags", "", False),
    ("", "Import", "", False),
    ("observations", "Obs.", "", True),
    ("updates", "Updates", "", True),
    ("interval", "Interval 1/λ", "", True),
    ("probability", "P(change)", "{horizon}", True),
    ("updated", "Last update", "τ", False),
]
ABBREVIATED = {"Obs.": "Observations"}


def site_list(request: HttpRequest) -> HttpResponse:
    tags = list(Tag.objects.values_list("name", flat=True))
    form = SiteListForm(request.GET, tags=tags)
    query = form.query()
    day = today()
    t_days, e_days = to_days(reference_instant(day)), settings.HACS_E_DAYS
    horizon = horizon_day(day, e_days)
    rows = site_rows(query=query, t_days=t_days, e_days=e_days)
    page = Paginator(rows, SITES_PER_PAGE).get_page(form.page_number())
    context = {
        "form": SiteListForm.showing(query, tags=tags),
        "query": query,
        "default_sort": DEFAULT_SORT,
        "page": page,
        "rows": site_row_values(
            page.object_list, method=query.method, t_days=t_days, e_days=e_days
        ),
        "columns": _columns(query.sort, horizon=due_text(day, e_days)),
        "level_label": Level(query.level).label,
        "method_label": Method(query.method).label,
        "filtered": bool(query.q or query.tag or query.status or query.history),
        "horizon": horizon,
        "due": due_text(day, e_days),
        "e_days": e_days,
    }
    return render(request, "dashboard/site_list.html", context)


def _columns(current: str, *, horizon: str) -> list[dict[str, object]]:
    """Header cells: the ``sort`` value each header link asks for and its ``aria-sort``.

    A first click sorts in the column's natural direction (most likely to change first, most
    recent update first, shortest interval first); a click on the sorted column reverses it.
    """
    columns: list[dict[str, object]] = []
    for key, label, sub, numeric in COLUMNS:
        column: dict[str, object] = {
            "key": key, "label": label, "sub": sub.format(horizon=horizon), "num": numeric,
            "title": ABBREVIATED.get(label, ""), "aria": "", "arrow": "",
        }  # fmt: skip
        if key:
            column["param"] = key if SORT_KEYS[key] == "asc" else f"-{key}"
            if current.lstrip("-") == key:
                descending = current.startswith("-")
                column["param"] = key if descending else f"-{key}"
                column["aria"] = "descending" if descending else "ascending"
                column["arrow"] = "▼" if descending else "▲"
        columns.append(column)
    return columns


def archive_check(site: Site) -> dict[str, object]:
    """When the configured archive was last asked about the site, and whether the nightly
    refresh asks it at all (only sites holding captures read from that archive)."""
    config = ArchiveConfig.from_settings()
    check = site.archive_checks.filter(source=config.source).only("checked_at").first()
    sources = (
        set()
        if check
        else set(site.captures.order_by().values_list("source", flat=True).distinct())
    )
    from_files = bool(sources) and config.source not in sources
    return {"check": check, "host": config.cdx_host, "refreshed": not from_files}


def site_detail(request: HttpRequest, pk: int) -> HttpResponse:
    site = get_object_or_404(Site.objects.prefetch_related("tags"), pk=pk)
    day = today()
    history = site_history(site=site, wayback_url=settings.HACS_WAYBACK_URL)
    context = {
        "site": site,
        # Only http(s) seeds become links: a stored URL is not trusted to be one.
        "seed_href": site.seed_url if site.seed_url.startswith(("http://", "https://")) else "",
        "history": history,
        "updates_shown": history.updates[:UPDATES_SHOWN],
        "estimates": site_estimates(
            site=site, today=day, e_days=settings.HACS_E_DAYS, theta=settings.HACS_THETA
        ),
        "e_days": settings.HACS_E_DAYS,
        "due": due_text(day, settings.HACS_E_DAYS),
        "archive": archive_check(site),
    }
    return render(request, "dashboard/site_detail.html", context)
