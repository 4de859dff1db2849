"""Request bodies: refused by their declared size and the user's role before anything reads them.

Django's CSRF check reads a POST body (``request.POST``) before any view checks the login, the
role or a size, and its multipart parser writes a file over ``FILE_UPLOAD_MAX_MEMORY_SIZE`` to a
temporary file as it arrives: a 1 GiB upload from anyone holding the login page's cookie was
written to ``/tmp`` in full before the answer (302, 403 or 400). So, before the CSRF check:

* a body without a ``Content-Length`` (``Transfer-Encoding: chunked``) is refused with 411:
  browsers always declare a form's length, and only a declared length can be refused unread;
* a body longer than its URL allows is refused unread: the seed list upload takes
  ``HACS_MAX_UPLOAD_BYTES`` plus ``UPLOAD_FORM_BYTES`` for its other fields (a crawl file
  ``HACS_MAX_CRAWL_UPLOAD_BYTES`` plus the same), every other page
  ``FORM_BYTES``; and only a librarian may send an upload's size at all: an anonymous client
  is sent to the login page, a viewer gets the 403 page, as the view itself would answer;
* what is read is read in memory, never to a file (``MemoryOnlyUploadHandler``), each file at
  most ``HACS_MAX_UPLOAD_BYTES + 1`` bytes (its true size still reaches the form's message).

The WSGI request never reads past its ``Content-Length``, so a client that declares less than it
sends is read for what it declared; one that declares more than it sends stalls, and the web
server's read deadline (``hacs_site.web_worker``) closes it.
"""

from __future__ import annotations

from collections.abc import Callable
from io import BytesIO
from typing import Any

from django.conf import settings
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.core.files.uploadedfile import InMemoryUploadedFile
from django.core.files.uploadhandler import FileUploadHandler
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import Resolver404, ResolverMatch, resolve

from dashboard.roles import is_librarian
from hacs_site.request_size import upload_request_bytes

#: The pages that take an uploaded file, by URL name: the setting limiting the file, and its name.
UPLOAD_URLS = {
    "upload-seeds": ("HACS_MAX_UPLOAD_BYTES", "a seed list"),
    "upload-crawl": ("HACS_MAX_CRAWL_UPLOAD_BYTES", "a crawl file"),
}
#: Bytes any other request may carry: Django's own default for a form (DATA_UPLOAD_MAX_MEMORY_SIZE).
FORM_BYTES = 2_621_440


class RequestBodyLimitMiddleware:
    """Refuse a request body by its declared length and the user's role, unread.

    Placed after the authentication middleware (the role must be known) and before the CSRF
    middleware (the first to read a body)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        refusal = body_refusal(request)
        return refusal if refusal is not None else self.get_response(request)


def body_refusal(request: HttpRequest) -> HttpResponse | None:
    """The answer refusing ``request``'s body before it is read, or None to let it through."""
    declared = request.META.get("CONTENT_LENGTH") or ""
    if request.META.get("HTTP_TRANSFER_ENCODING"):
        sentence = (
            "The request's body must declare its length (Content-Length); HACS does not read "
            "bodies sent in chunks."
        )
        return _refused(request, 411, sentence)
    if not declared:
        return None
    if not (declared.isascii() and declared.isdigit()):
        return _refused(request, 400, "The request's Content-Length is not a number.")
    length = int(declared)
    if length == 0:
        return None
    match = _match(request)
    upload = UPLOAD_URLS.get(match.url_name or "") if match is not None else None
    limit = upload_request_bytes(upload[0]) if upload else FORM_BYTES
    if length <= FORM_BYTES or (upload and length <= limit and is_librarian(request.user)):
        return None
    if not request.user.is_authenticated and _needs_login(match):
        return redirect_to_login(request.get_full_path())
    if upload and not is_librarian(request.user):
        raise PermissionDenied("Only librarians can do this.")
    what = f"{upload[1]} ({upload[0]}) and its form" if upload else "this page"
    return _refused(
        request,
        413,
        f"The request is {length:,} bytes; {what} may send at most "
        f"{limit:,}. Nothing of it was read.",
    )


def _match(request: HttpRequest) -> ResolverMatch | None:
    try:
        match = resolve(request.path_info)
    except Resolver404:
        return None
    request.resolver_match = match  # the 403 page names the refused action from it
    return match


def _needs_login(match: ResolverMatch | None) -> bool:
    """Whether the view answers an anonymous client with the login page (as
    ``LoginRequiredMiddleware`` decides); an unknown URL answers 404 to anyone."""
    return match is not None and getattr(match.func, "login_required", True)


def _refused(request: HttpRequest, status: int, sentence: str) -> HttpResponse:
    context = {"status": status, "sentence": sentence}
    return render(request, "request_refused.html", context, status=status)


class MemoryOnlyUploadHandler(FileUploadHandler):
    """Every uploaded file in memory, never in a temporary file, and at most
    ``HACS_MAX_UPLOAD_BYTES + 1`` bytes of it: enough for the form to say the file is over the
    limit, with its true size. The request's length was checked before (``body_refusal``), so
    what a request holds in memory is bounded by that check."""

    def new_file(self, *args: Any, **kwargs: Any) -> None:
        super().new_file(*args, **kwargs)
        self.file = BytesIO()

    def receive_data_chunk(self, raw_data: bytes, start: int) -> None:
        room = int(settings.HACS_MAX_UPLOAD_BYTES) + 1 - self.file.tell()
        if room > 0:
            self.file.write(raw_data[:room])

    def file_complete(self, file_size: int) -> InMemoryUploadedFile:
        self.file.seek(0)
        return InMemoryUploadedFile(
            file=self.file,
            field_name=self.field_name,
            name=self.file_name,
            content_type=self.content_type,
            size=file_size,
            charset=self.charset,
            content_type_extra=self.content_type_extra,
        )
