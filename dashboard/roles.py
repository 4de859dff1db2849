"""Who may do what. Three roles, as Django groups plus the superuser flag:

* **viewer** (any logged-in account): browse sites, histories, crawl lists and evaluations, and
  download them;
* **librarian** (member of the ``Librarians`` group): also upload seed lists, start imports,
  recomputes and evaluations, build crawl lists, retry failed sites;
* **admin** (superuser): also manage users in the admin.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.contrib.auth.models import AnonymousUser, Group
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse

LIBRARIANS = "Librarians"


def is_librarian(user: Any) -> bool:
    if isinstance(user, AnonymousUser) or not getattr(user, "is_authenticated", False):
        return False
    if user.is_superuser:
        return True
    cached = getattr(user, "_hacs_is_librarian", None)
    if cached is None:
        cached = user.groups.filter(name=LIBRARIANS).exists()
        user._hacs_is_librarian = cached
    return bool(cached)


def role_of(user: Any) -> str:
    if getattr(user, "is_superuser", False):
        return "admin"
    return "librarian" if is_librarian(user) else "viewer"


def make_librarian(user: Any) -> None:
    group, _ = Group.objects.get_or_create(name=LIBRARIANS)
    user.groups.add(group)
    user.__dict__.pop("_hacs_is_librarian", None)


def librarian_required(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """Viewers get 403 Forbidden on views that change data or start work."""

    @wraps(view)
    def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not is_librarian(request.user):
            raise PermissionDenied("Only librarians can do this.")
        return view(request, *args, **kwargs)

    return wrapped


ROLE_LABELS = {"viewer": "Viewer", "librarian": "Librarian", "admin": "Admin"}

#: What each role lets its holder do, completing "Your role, Viewer, lets you …".
ROLE_ALLOWS = {
    "viewer": "look at the sites, their histories, crawl lists, evaluations and jobs, and "
    "download them",
    "librarian": "look at and download everything, upload seed lists, start imports, "
    "recomputes and evaluations, build crawl lists, hand them to a crawler and retry failed "
    "sites",
    "admin": "do everything in HACS, and manage users in the admin",
}

#: What the librarian-only pages do, by URL name, completing "… but not …".
DENIED_ACTIONS = {
    "upload-seeds": "add seeds",
    "upload-crawl": "import crawl files",
    "job-retry": "retry failed sites",
    "job-health": "run a health check",
    "crawl-list-create": "build crawl lists",
    "evaluation": "start evaluations",  # the Evaluation page's form posts here too
    "evaluation-start": "start evaluations",
    "learning-start": "learn schedulers",
    "hand-off-now": "hand crawl lists to a crawler",
    "site-move": "add a moved seed's new address",
    "site-retry": "retry a site's import",
    "site-pause": "pause or resume seeds",
    "site-tags": "change a seed's tags",
    "site-remove": "remove seeds",
}


def denial_of(request: HttpRequest) -> dict[str, str]:
    """What a refused user is told: their role, what it allows, what it does not."""
    role = role_of(request.user)
    match = getattr(request, "resolver_match", None)
    return {
        "role_label": ROLE_LABELS[role],
        "allows": ROLE_ALLOWS[role],
        "action": DENIED_ACTIONS.get(getattr(match, "url_name", "") or "", "do this"),
    }


def roles(request: HttpRequest) -> dict[str, Any]:
    """Template context: ``is_librarian`` and ``role`` for the current user."""
    return {"is_librarian": is_librarian(request.user), "role": role_of(request.user)}
