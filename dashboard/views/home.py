"""The Overview page: counts, the distribution of update intervals, the sites due today."""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from dashboard.overview import interval_lists, overview_counts, sites_due
from hacs.charts import interval_histogram
from jobs.models import JobRecord
from scheduling.cells import due_text
from scheduling.models import CrawlList


def home(request: HttpRequest) -> HttpResponse:
    counts = overview_counts()
    due_count, due = sites_due(
        day=counts["today"], theta=settings.HACS_THETA, e_days=settings.HACS_E_DAYS,
        budget=settings.HACS_BUDGET,
    )  # fmt: skip
    context = {
        **counts,
        "theta": settings.HACS_THETA,
        "budget": settings.HACS_BUDGET,
        "e_days": settings.HACS_E_DAYS,
        "due_by": due_text(counts["today"], settings.HACS_E_DAYS),
        "due_count": due_count,
        "due": due,
        "histogram": interval_histogram(interval_lists()),
        "latest_list": CrawlList.objects.first(),
        "recent_jobs": JobRecord.objects.all()[:5],
    }
    return render(request, "dashboard/home.html", context)
