"""Pages about seed sites: the Sites table and one site's history (the upload is in
``views_upload``)."""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.core.paginator import Paginator
from django.db.models import Count
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.views.decorators.http import require_POST

from archive.health import MoveError, site_move
from archive.models import Site, Tag
from archive.status import sites_finish
from archive.wayback import ArchiveConfig
from dashboard.forms import SiteListForm
from dashboard.health import site_evidence
from dashboard.overview import window_start_days
from dashboard.roles import is_librarian, librarian_required
from dashboard.site_detail import SiteEstimates, site_estimates, site_history
from dashboard.sites import DEFAULT_SORT, SORT_KEYS, site_row_values, site_rows, site_rows_csv
from dashboard.views.upload import NOT_QUEUED
from hacs.clock import reference_instant, to_days
from hacs_site.clock import today
from jobs.services import QueueUnavailable
from operations.jobs import enqueue_import
from operations.refresh import site_next_check
from scheduling.cells import due_text, horizon_day
from scheduling.models import DEFAULT_METHOD, Level, Method

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
    window_start = window_start_days(day, settings.HACS_HISTORY_DAYS)
    rows = site_rows(query=query, t_days=t_days, e_days=e_days, window_start=window_start)
    page = Paginator(rows, SITES_PER_PAGE).get_page(form.page_number())
    shown = site_row_values(page.object_list, method=query.method, t_days=t_days, e_days=e_days)
    context = {
        "form": SiteListForm.showing(query, tags=tags),
        "query": query,
        "default_sort": DEFAULT_SORT,
        "page": page,
        "rows": shown,
        "open_intervals": any(row.interval_open for row in shown),
        "columns": _columns(query.sort, horizon=due_text(day, e_days)),
        "level_label": Level(query.level).label,
        "method_label": Method(query.method).label,
        "filtered": bool(query.q or query.tag or query.status or query.history or query.health),
        "horizon": horizon,
        "due": due_text(day, e_days),
        "e_days": e_days,
        "history_days": settings.HACS_HISTORY_DAYS,
    }
    return render(request, "dashboard/site_list.html", context)


def site_list_csv(request: HttpRequest) -> StreamingHttpResponse:
    """The Sites table, every page of it, as CSV: the same filters, sort and estimate."""
    form = SiteListForm(request.GET, tags=list(Tag.objects.values_list("name", flat=True)))
    query = form.query()
    day = today()
    rows = site_rows_csv(
        query=query,
        t_days=to_days(reference_instant(day)),
        e_days=settings.HACS_E_DAYS,
        window_start=window_start_days(day, settings.HACS_HISTORY_DAYS),
    )
    response = StreamingHttpResponse(rows, content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="hacs-sites-{day}.csv"'
    return response


def _columns(current: str, *, horizon: str) -> list[dict[str, object]]:
    """Header cells: the ``sort`` value each header link asks for and its ``aria-sort``.

    A first click sorts in the column's natural direction (most likely to change first, most
    recent update first, shortest interval first); a click on the sorted column reverses it.
    """
    columns: list[dict[str, object]] = []
    for key, label, sub, numeric in COLUMNS:
        column: dict[str, object] = {
            "key": key,
            "label": label,
            "sub": sub.format(horizon=horizon),
            "num": numeric,
            "title": ABBREVIATED.get(label, ""),
            "aria": "",
            "arrow": "",
        }
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
    """When the configured archive was last asked about the site, whether the nightly refresh
    asks it at all (only sites read from that archive), and for a seed the archive had not
    captured, when it is asked again (``operations.refresh.site_next_check``)."""
    config = ArchiveConfig.from_settings()
    check = site.archive_checks.filter(source=config.source).only("checked_at").first()
    sources = (
        set()
        if check
        else set(site.captures.order_by().values_list("source", flat=True).distinct())
    )
    from_files = bool(sources) and config.source not in sources
    captured, next_ask = site_next_check(site.pk, config) if check else (True, None)
    return {
        "check": check,
        "host": config.cdx_host,
        "refreshed": not from_files,
        "uncaptured": not captured,
        "next_ask": next_ask,
    }


def site_detail(request: HttpRequest, pk: int) -> HttpResponse:
    site = get_object_or_404(
        Site.objects.select_related("health", "moved_to")
        .annotate(moved_from_count=Count("moved_from"))
        .prefetch_related("tags"),
        pk=pk,
    )
    day = today()
    estimates = site_estimates(
        site=site,
        today=day,
        e_days=settings.HACS_E_DAYS,
        theta=settings.HACS_THETA,
        window_start=window_start_days(day, settings.HACS_HISTORY_DAYS),
    )
    history = site_history(site=site, wayback_url=settings.HACS_WAYBACK_URL)
    context = {
        "site": site,
        # Only http(s) seeds become links: a stored URL is not trusted to be one.
        "seed_href": site.seed_url if site.seed_url.startswith(("http://", "https://")) else "",
        "history": history,
        "updates_shown": history.updates[:UPDATES_SHOWN],
        "estimates": estimates,
        "history_days": settings.HACS_HISTORY_DAYS,
        "e_days": settings.HACS_E_DAYS,
        "due": due_text(day, settings.HACS_E_DAYS),
        "archive": archive_check(site),
        **_health_context(request, site, estimates),
    }
    return render(request, "dashboard/site_detail.html", context)


def _health_context(
    request: HttpRequest, site: Site, estimates: SiteEstimates
) -> dict[str, object]:
    """The Site page's "Seed health": its problems with their evidence, the move links, and
    whether this user may add the redirect's target as a seed (no query for a site that
    neither moved nor was moved to)."""
    default = next((row.estimate for row in estimates.rows if row.is_default), None)
    website = next(
        (
            row.estimate
            for row in estimates.rows
            if row.level == Level.WEBSITE and row.method == DEFAULT_METHOD
        ),
        None,
    )
    evidence = site_evidence(site=site, estimate=default, now=timezone.now(), website=website)
    target = next((item.target for item in evidence if item.kind == "moved"), "")
    moved_from = list(site.moved_from.order_by("pk")) if site.moved_from_count else []  # type: ignore[attr-defined]  # annotated
    return {
        "health": evidence,
        "moved_from": moved_from,
        "move_target": target,
        "can_move": bool(target) and site.moved_to_id is None and is_librarian(request.user),
    }


@require_POST
@librarian_required
def site_move_view(request: HttpRequest, pk: int) -> HttpResponse:
    """Add the target of a moved seed's redirects as a new seed linked to the old one, and
    import its archive history as the Upload page does."""
    site = get_object_or_404(Site, pk=pk)
    try:
        moved = site_move(site=site)
    except MoveError as error:
        messages.error(request, str(error))
        return redirect("site-detail", pk=site.pk)
    target = moved.target
    if moved.added:
        try:
            enqueue_import([target.pk], user=request.user, label=f"moved seed {target.seed_url}")
        except QueueUnavailable as error:
            sites_finish(failed={target.pk: NOT_QUEUED})
            messages.warning(request, f"{target.seed_url} was added, but not queued: {error}")
        messages.success(request, f"Added {target.seed_url} as a new seed, moved from this one.")
    else:
        messages.success(request, f"{target.seed_url} was already a seed; linked to it.")
    return redirect("site-detail", pk=target.pk)
