"""The Crawl list page: build a ranked list for a date, browse stored lists, download them."""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_POST

from dashboard.crawl_yield import crawl_yield_context
from dashboard.forms import CrawlListForm
from dashboard.roles import librarian_required
from hacs_site.clock import today
from operations.daily import daily_list_next
from scheduling.cells import Moment, day_text, due_text, interval_text, moment
from scheduling.crawl_lists import crawl_list_csv, crawl_list_store, crawl_list_urls, list_shortfall
from scheduling.models import CrawlList, CrawlListEntry

ENTRIES_PER_PAGE = 100


@dataclass(frozen=True)
class EntryRow:
    """One line of a list as the page shows it (``scheduling.cells`` writes its values)."""

    entry: CrawlListEntry
    tau: Moment | None
    last_copy: Moment | None
    interval: str


def crawl_list(request: HttpRequest) -> HttpResponse:
    lists = CrawlList.objects.select_related("created_by", "scorer")[:15]
    selected = None
    if request.GET.get("list", "").isdigit():
        selected = get_object_or_404(
            CrawlList.objects.select_related("created_by", "scorer"), pk=int(request.GET["list"])
        )
    else:  # the day's list: today's daily list, else the newest one (never an experiment)
        selected = CrawlList.objects.select_related("created_by", "scorer").newest_daily()
    page = None
    rows: list[EntryRow] = []
    if selected is not None:
        entries = selected.entries.select_related("site").order_by("rank")
        page = Paginator(entries, ENTRIES_PER_PAGE).get_page(request.GET.get("page"))
        rows = [
            EntryRow(e, moment(e.tau), moment(e.last_copy), interval_text(e.rate)) for e in page
        ]
    form = CrawlListForm(initial=CrawlListForm.initial_values())
    context = {
        "form": form,
        "lists": lists,
        "selected": selected,
        "page": page,
        "rows": rows,
        "due": due_text(selected.date, selected.e_days) if selected else "",
        "list_day": day_text(selected.date) if selected else "",
        "shortfall": list_shortfall(selected, page.paginator.count) if selected and page else "",
        "next_daily": daily_list_next(timezone.now()),
        "today": today(),
        "crawl_yield": crawl_yield_context(),
    }
    return render(request, "dashboard/crawl_list.html", context)


@require_POST
@librarian_required
def crawl_list_create(request: HttpRequest) -> HttpResponse:
    form = CrawlListForm(request.POST)
    if not form.is_valid():
        lists = CrawlList.objects.select_related("created_by", "scorer")[:15]
        context = {
            "form": form,
            "lists": lists,
            "selected": None,
            "page": None,
            "rows": [],
            "next_daily": daily_list_next(timezone.now()),
            "crawl_yield": crawl_yield_context(),
        }
        return render(request, "dashboard/crawl_list.html", context, status=400)
    stored = crawl_list_store(
        day=form.cleaned_data["day"],
        options=form.options(),
        source=CrawlList.Source.PAGE,
        user=request.user,
    )
    if stored.new:
        messages.success(request, stored.summary())
    else:
        messages.info(request, stored.summary())
    return redirect(f"{reverse('crawl-list')}?list={stored.crawl_list.pk}")


def crawl_list_download_csv(request: HttpRequest, pk: int) -> StreamingHttpResponse:
    """The list as CSV; ``?excel=1`` begins it with a UTF-8 byte order mark for Excel."""
    crawl = get_object_or_404(CrawlList, pk=pk)
    excel = request.GET.get("excel") == "1"
    response = StreamingHttpResponse(
        crawl_list_csv(crawl, excel=excel), content_type="text/csv; charset=utf-8"
    )
    name = f"hacs-crawl-list-{crawl.date}-{crawl.level}-{crawl.pk}{'-excel' * excel}.csv"
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response


def crawl_list_download_urls(request: HttpRequest, pk: int) -> StreamingHttpResponse:
    crawl = get_object_or_404(CrawlList, pk=pk)
    response = StreamingHttpResponse(
        crawl_list_urls(crawl), content_type="text/plain; charset=utf-8"
    )
    name = f"hacs-seeds-{crawl.date}-{crawl.level}-{crawl.pk}.txt"
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response
