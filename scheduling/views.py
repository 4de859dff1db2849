"""Pages about scheduling: today's crawl list and the evaluation runs."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from scheduling.models import EvaluationRun


def evaluation(request: HttpRequest) -> HttpResponse:
    runs = EvaluationRun.objects.all()[:20]
    return render(request, "scheduling/evaluation.html", {"runs": runs})
