"""The Upload seeds page."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render


def upload_seeds(request: HttpRequest) -> HttpResponse:
    return render(request, "archive/upload.html")
