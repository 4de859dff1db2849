"""The Crawl list page: build a ranked list for a date, browse stored lists, download them."""

from __future__ import annotations

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from dashboard.forms import CrawlListForm
from dashboard.roles import librarian_required
from scheduling.crawl_lists import crawl_list_build, crawl_list_csv, crawl_list_urls
from scheduling.models import CrawlList

ENTRIES_PER_PAGE = 100


def crawl_list(request: HttpRequest) -> HttpResponse:
    lists = CrawlList.objects.select_related("created_by", "scorer")[:15]
    selected = None
    if request.GET.get("list", "").isdigit():
        selected = get_object_or_404(CrawlList, pk=int(request.GET["list"]))
    elif lists:
        selected = lists[0]
    page = None
    if selected is not None:
        entries = selected.entries.select_related("site").order_by("rank")
        page = Paginator(entries, ENTRIES_PER_PAGE).get_page(request.GET.get("page"))
    form = CrawlListForm(initial=CrawlListForm.initial_values())
    context = {"form": form, "lists": lists, "selected": selected, "page": page}
    return render(request, "dashboard/crawl_list.html", context)


@require_POST
@librarian_required
def crawl_list_create(request: HttpRequest) -> HttpResponse:
    form = CrawlListForm(request.POST)
    if not form.is_valid():
        lists = CrawlList.objects.select_related("created_by", "scorer")[:15]
        context = {"form": form, "lists": lists, "selected": None, "page": None}
        return render(request, "dashboard/crawl_list.html", context, status=400)
    day = form.cleaned_data["day"]
    built = crawl_list_build(day=day, options=form.options(), user=request.user)
    count = built.entries.count()
    messages.success(
        request, f"Crawl list for {built.date} built: {count} of {built.eligible_sites} sites."
    )
    return redirect(f"{reverse('crawl-list')}?list={built.pk}")


def crawl_list_download_csv(request: HttpRequest, pk: int) -> StreamingHttpResponse:
    crawl = get_object_or_404(CrawlList, pk=pk)
    response = StreamingHttpResponse(crawl_list_csv(crawl), content_type="text/csv; charset=utf-8")
    name = f"hacs-crawl-list-{crawl.date}-{crawl.level}-{crawl.pk}.csv"
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
