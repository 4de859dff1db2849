"""The page for a refused request: what the user's role allows, and whom to ask for more."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from dashboard.roles import denial_of

ADMINS_NAMED = 3  # admins named on the page; more would be a list to read, not a hint


def permission_denied(request: HttpRequest, exception: Exception) -> HttpResponse:
    """``handler403``: a viewer who opens a librarian's page learns why and whom to ask."""
    admins = list(
        get_user_model()
        .objects.filter(is_superuser=True, is_active=True)
        .order_by("username")
        .values_list("username", flat=True)[: ADMINS_NAMED + 1]
    )
    context = {
        **denial_of(request),
        "admins": admins[:ADMINS_NAMED],
        "more_admins": len(admins) > ADMINS_NAMED,
    }
    return render(request, "403.html", context, status=403)
