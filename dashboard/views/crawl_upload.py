"""Importing a crawl's WARC or WACZ file from the browser (the Upload page, beside seed lists).

The file streams to ``HACS_VAR_DIR/crawl-uploads`` (owner-only) through an upload handler that
stops at ``HACS_MAX_CRAWL_UPLOAD_BYTES``, so that nothing larger is written or held in memory;
an import job then reads it like ``import_warc`` (a worker on this machine, or one sharing
``HACS_VAR_DIR``) and deletes it. Uploads left behind by a job that never ran are deleted after
a day. The handler must be in place before the request body is read, so the view checks the
CSRF token itself, after adding it.
"""

from __future__ import annotations

import os
import secrets
import time
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.core.files.uploadhandler import FileUploadHandler, StopUpload
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.template.defaultfilters import filesizeformat
from django.urls import reverse
from django.utils.html import format_html
from django.views.decorators.csrf import csrf_exempt, csrf_protect
from django.views.decorators.http import require_POST

from dashboard.roles import librarian_required
from jobs.services import QueueUnavailable
from operations.jobs import enqueue_uploaded_crawl

SUFFIXES = (".warc.gz", ".warc", ".wacz")
KEPT_SECONDS = 24 * 3600


def upload_directory() -> Path:
    folder = Path(settings.VAR_DIR) / "crawl-uploads"
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    return folder


class CrawlFileHandler(FileUploadHandler):
    """Writes the upload straight to its file in the uploads folder (0600), and stops the
    upload past the cap: nothing larger is kept, in memory or on disk."""

    def __init__(self, request: HttpRequest, limit: int) -> None:
        super().__init__(request)
        self.limit = limit
        self.size = 0
        self.path: Path | None = None
        self.too_large = False
        self._handle: Any = None

    def new_file(self, *args: Any, **kwargs: Any) -> None:
        super().new_file(*args, **kwargs)
        name = Path(self.file_name or "").name.lower()
        suffix = next((s for s in SUFFIXES if name.endswith(s)), ".bin")
        self.path = upload_directory() / f"{secrets.token_hex(16)}{suffix}"
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        self._handle = os.fdopen(os.open(self.path, flags, 0o600), "wb")

    def receive_data_chunk(self, raw_data: bytes, start: int) -> None:
        self.size += len(raw_data)
        if self.size > self.limit:
            self.too_large = True
            self._discard()
            raise StopUpload(connection_reset=True)
        self._handle.write(raw_data)
        return None

    def file_complete(self, file_size: int) -> None:
        if self._handle is not None:
            self._handle.close()
        return None  # the view reads ``path``, not a file object

    def _discard(self) -> None:
        if self._handle is not None:
            self._handle.close()
            self._handle = None
        if self.path is not None:
            self.path.unlink(missing_ok=True)


@csrf_exempt
@require_POST
def upload_crawl(request: HttpRequest) -> HttpResponse:
    """Take one WARC or WACZ file and queue its import (the CSRF token checked once the
    handler is in place)."""
    handler = CrawlFileHandler(request, settings.HACS_MAX_CRAWL_UPLOAD_BYTES)
    request.upload_handlers = [handler]
    return _upload_crawl(request, handler)


@librarian_required  # before the CSRF check, which reads the body: a viewer uploads nothing
@csrf_protect
def _upload_crawl(request: HttpRequest, handler: CrawlFileHandler) -> HttpResponse:
    _forget_old_uploads()
    request.POST  # noqa: B018 (reads the body: the handler writes the file)
    back = redirect(f"{reverse('upload-seeds')}#crawl-upload")
    name = Path(handler.file_name or "").name
    limit = filesizeformat(settings.HACS_MAX_CRAWL_UPLOAD_BYTES)
    if handler.too_large:
        messages.error(
            request,
            f"The file is larger than {limit} (HACS_MAX_CRAWL_UPLOAD_BYTES); nothing was kept. "
            "Drop it into the crawl inbox instead.",
        )
        return back
    if handler.path is None or not name:
        messages.error(request, "Choose a WARC or WACZ file to import.")
        return back
    if not name.lower().endswith(SUFFIXES):
        handler.path.unlink(missing_ok=True)
        messages.error(
            request,
            f"{name} is not a WARC or WACZ file by its name (….warc.gz, ….warc or ….wacz); "
            "nothing was imported.",
        )
        return back
    try:
        record = enqueue_uploaded_crawl(str(handler.path), name, user=request.user)
    except QueueUnavailable as error:
        handler.path.unlink(missing_ok=True)
        messages.error(request, f"{name} was not imported: {error}")
        return back
    jobs = f"{reverse('jobs')}#job-{record.pk}"
    messages.success(
        request,
        format_html(
            '{} is being imported: <a href="{}">follow it on the Jobs page</a>.', name, jobs
        ),
    )
    return back


def _forget_old_uploads() -> None:
    """Delete uploads a day old: their job never ran, or stopped."""
    folder = upload_directory()
    now = time.time()
    for path in folder.iterdir():
        try:
            if now - path.stat(follow_symlinks=False).st_mtime > KEPT_SECONDS:
                path.unlink()
        except OSError:
            continue
