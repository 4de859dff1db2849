"""Hand a stored crawl list to a crawler from the Crawl list page ("Hand off now")."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.urls import reverse
from django.views.decorators.http import require_POST

from dashboard.roles import librarian_required
from handoff.models import HandOff, HandOffRun
from handoff.services import hand_off_check, hand_off_run
from scheduling.models import CrawlList


@require_POST
@librarian_required
def hand_off_now(request: HttpRequest, pk: int) -> HttpResponse:
    """Run the hand-off on the list now, in this request (a seeds file is written, or three
    requests go to Browsertrix, all within one ``HACS_HTTP_DEADLINE``), and say how it went."""
    hand_off = get_object_or_404(HandOff.objects.select_related("tag"), pk=pk)
    list_id = request.POST.get("list", "")
    crawl_list = get_object_or_404(CrawlList, pk=int(list_id) if list_id.isdigit() else 0)
    back = f"{reverse('crawl-list')}?list={crawl_list.pk}#hand-offs"
    problem = hand_off_check(hand_off=hand_off, crawl_list=crawl_list)
    if problem:
        messages.error(request, problem)
        return redirect(back)
    run = hand_off_run(hand_off=hand_off, crawl_list=crawl_list, user=request.user, queue="web")
    if run.status == HandOffRun.Status.FAILED:
        messages.error(request, run.message)
    elif run.status == HandOffRun.Status.EMPTY:
        messages.warning(request, run.message)
    else:
        messages.success(request, run.message)
    return redirect(back)
