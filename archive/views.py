"""Pages about seed sites: the Sites table, one site's history, and the seed upload."""

from __future__ import annotations

from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render

from archive.models import Site

SITES_PER_PAGE = 50


def site_list(request: HttpRequest) -> HttpResponse:
    query = request.GET.get("q", "")
    sites = Site.objects.search(query).order_by("canonical_key")
    page = Paginator(sites, SITES_PER_PAGE).get_page(request.GET.get("page"))
    return render(request, "archive/site_list.html", {"page": page, "query": query})


def site_detail(request: HttpRequest, pk: int) -> HttpResponse:
    site = get_object_or_404(Site.objects.prefetch_related("tags"), pk=pk)
    captures = site.captures.order_by("-timestamp")[:100]
    return render(request, "archive/site_detail.html", {"site": site, "captures": captures})
