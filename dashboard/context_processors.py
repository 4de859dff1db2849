"""What every page's banner needs: whether the job queue (Redis) answers."""

from __future__ import annotations

from django.http import HttpRequest

from jobs.services import queue_problem


def queue_status(request: HttpRequest) -> dict[str, str]:
    """``queue_problem``: empty when Redis answers, else the sentence the banner shows.

    Only for logged-in users: the login page says nothing about the installation.
    """
    if not getattr(request, "user", None) or not request.user.is_authenticated:
        return {"queue_problem": ""}
    return {"queue_problem": queue_problem()}
