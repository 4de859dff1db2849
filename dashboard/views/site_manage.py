"""A librarian's actions on one seed, from its page: retry a failed import, pause it (on no
crawl list) or resume it, set its tags, remove it. Each is a POST that says what it did."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.views.decorators.http import require_POST

from archive.models import Site
from archive.seeds import site_pause, site_remove, site_tags_set
from dashboard.roles import librarian_required
from hacs.formats.seeds import split_tags
from jobs.services import QueueUnavailable
from operations.jobs import enqueue_import
from scheduling.models import CrawlListEntry


@require_POST
@librarian_required
def site_retry(request: HttpRequest, pk: int) -> HttpResponse:
    """Import again one site whose import failed (or was interrupted)."""
    site = get_object_or_404(Site, pk=pk)
    if site.import_status != Site.ImportStatus.FAILED:
        messages.info(request, "This site's import has not failed; there is nothing to retry.")
        return redirect("site-detail", pk=site.pk)
    try:
        enqueue_import([site.pk], user=request.user, label=f"retry of {site.seed_url}")
    except QueueUnavailable as error:
        messages.error(request, f"Nothing was retried. {error}")
        return redirect("site-detail", pk=site.pk)
    messages.success(request, "Retrying this site's import: follow it on the Jobs page.")
    return redirect("site-detail", pk=site.pk)


@require_POST
@librarian_required
def site_pause_view(request: HttpRequest, pk: int) -> HttpResponse:
    site = get_object_or_404(Site, pk=pk)
    paused = request.POST.get("paused") == "1"
    site_pause(site=site, paused=paused)
    messages.success(
        request, "Paused." if paused else "Resumed: this seed is on the crawl lists again."
    )
    return redirect("site-detail", pk=site.pk)


@require_POST
@librarian_required
def site_tags_view(request: HttpRequest, pk: int) -> HttpResponse:
    site = get_object_or_404(Site, pk=pk)
    try:
        tags = site_tags_set(site=site, names=split_tags(request.POST.get("tags", "")))
    except ValueError as error:
        messages.error(request, f"The tags were not changed. {error}")
        return redirect("site-detail", pk=site.pk)
    messages.success(request, f"Tags now: {', '.join(tags)}." if tags else "Tags removed.")
    return redirect("site-detail", pk=site.pk)


@require_POST
@librarian_required
def site_remove_view(request: HttpRequest, pk: int) -> HttpResponse:
    site = get_object_or_404(Site, pk=pk)
    if request.POST.get("confirm") != site.seed_url:
        messages.error(
            request, "Nothing was removed: type the seed URL exactly to confirm the removal."
        )
        return redirect("site-detail", pk=site.pk)
    lists = CrawlListEntry.objects.filter(site=site).values("crawl_list").distinct().count()
    name, url = site.author or site.seed_url, site.seed_url
    captures = site_remove(site=site)
    on_lists = f" and its line on {lists} stored crawl list{'s' * (lists != 1)}" if lists else ""
    messages.success(request, f"Removed {name} ({url}) with its {captures:,} captures{on_lists}.")
    return redirect("site-list")
