"""What every page needs: whether the job queue (Redis) answers, and which archive an import
of new seeds will ask."""

from __future__ import annotations

from urllib.parse import urlsplit

from django.conf import settings
from django.http import HttpRequest

from jobs.services import queue_problem


def queue_status(request: HttpRequest) -> dict[str, str]:
    """``queue_problem``: empty when Redis answers, else the sentence the banner shows.

    Only for logged-in users: the login page says nothing about the installation.
    """
    if not getattr(request, "user", None) or not request.user.is_authenticated:
        return {"queue_problem": ""}
    return {"queue_problem": queue_problem()}


def import_archive(request: HttpRequest) -> dict[str, str]:
    """``import_archive``: the archive an import of new seeds asks, said before it asks (the
    Upload page, a moved seed's "Add … as a new seed"), and whether that is HACS's default
    because nobody set ``HACS_CDX_URL`` (a new installation's demo sites came from its own
    demo archive, which imports of new seeds never ask)."""
    if not getattr(request, "user", None) or not request.user.is_authenticated:
        return {"import_archive": ""}
    host = urlsplit(settings.HACS_CDX_URL).netloc
    if settings.HACS_CDX_URL_CHOSEN:
        return {"import_archive": f"the archive at {host} (HACS_CDX_URL)"}
    return {
        "import_archive": f"the archive at {host}, HACS's default: no archive has been "
        "configured (an administrator sets HACS_CDX_URL to choose another)"
    }
