"""The Overview page: counts, the distribution of update intervals, the sites due today."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone

from dashboard.charts import interval_histogram
from dashboard.crawl_yield import crawl_yield_context
from dashboard.health import HEALTH_FILTERS, health_counts
from dashboard.overview import due_today, interval_lists, overview_counts
from jobs.models import JobRecord
from scheduling.cells import due_text
from scheduling.models import CrawlList


def home(request: HttpRequest) -> HttpResponse:
    counts = overview_counts()
    due = due_today(day=counts["today"])
    context = {
        **counts,
        "due_by": due_text(counts["today"], due.options.e_days),
        "due": due,
        "histogram": interval_histogram(interval_lists()),
        "latest_list": CrawlList.objects.newest_daily(),
        "recent_jobs": JobRecord.objects.all()[:5],
        "health": _health_box(),
        "crawl_yield": crawl_yield_context(),
    }
    return render(request, "dashboard/home.html", context)


def _health_box() -> list[tuple[str, str, int]]:
    """The Seed health box: (Health filter key, label, number of sites) per problem."""
    counts = health_counts(now=timezone.now())
    return [(key, label, counts[key]) for key, label in HEALTH_FILTERS.items()]
