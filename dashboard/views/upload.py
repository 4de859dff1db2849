"""The Upload seeds page: check a seed list, then add it and start the archive import.

A file checked with "Check the list" is held on the server (in ``VAR_DIR/uploads``, owner-only,
for ``HELD_HOURS``) under a random token that the page carries in a hidden field and the
librarian's session lists, so that "Add and import" adds that same file without choosing it
again. Only the session that checked a file can add it; adding it, or the time running out,
deletes it.
"""

from __future__ import annotations

import os
import re
import secrets
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from archive.pipeline import sites_finish
from archive.seeds import seeds_import
from dashboard.forms import SeedUploadForm
from dashboard.roles import librarian_required
from hacs.formats.seeds import SeedFileError
from jobs.services import QueueUnavailable
from operations.jobs import enqueue_import

NOT_QUEUED = (
    "Not imported: the job queue (Redis) could not be reached when the seed was added. "
    "Retry it from the Jobs page (Retry failed sites) or with manage.py import_archive --failed."
)

SHOWN = 500  # rows of each report table shown on the page
HELD_HOURS = 24  # how long a checked file is kept for "Add and import"
SESSION_KEY = "hacs_held_uploads"
_TOKEN = re.compile(r"[A-Za-z0-9_-]{20,64}")


@dataclass(frozen=True)
class HeldFile:
    """A checked seed list kept for "Add and import": its token, name, size and seed lines
    (None until the list has been read)."""

    token: str
    name: str
    size: int
    lines: int | None


class HeldFileGone(Exception):
    """The held file's token is unknown to this session, or its file has expired."""


@librarian_required
def upload_seeds(request: HttpRequest) -> HttpResponse:
    if request.method != "POST":
        return render(
            request, "dashboard/upload.html", {"form": SeedUploadForm(), "limits": _limits()}
        )
    form = SeedUploadForm(request.POST, request.FILES)
    context: dict[str, Any] = {"form": form, "limits": _limits()}
    valid = form.is_valid()
    checking = request.POST.get("action") != "import"
    upload = form.cleaned_data.get("file")
    try:
        data, name, held = _seed_list(request, form)
    except HeldFileGone:
        form.add_error("file", _gone_message(request, form.cleaned_data["held"]))
        return render(request, "dashboard/upload.html", context, status=400)
    if not valid:
        # Keep the chosen file while the other fields are put right.
        if upload is not None:
            context["held"] = _hold(request, form, data, name, lines=None)
        elif held is not None:
            context["held"] = held
        return render(request, "dashboard/upload.html", context, status=400)
    try:
        report = seeds_import(
            data=data,
            max_bytes=settings.HACS_MAX_UPLOAD_BYTES,
            max_lines=settings.HACS_MAX_SEED_LINES,
            user_directories_only=form.cleaned_data["user_directories_only"],
            extra_tags=form.tag_list(),
            dry_run=checking,
        )
    except SeedFileError as error:
        form.add_error("text" if not name else "file", str(error))
        _release(request, held)
        return render(request, "dashboard/upload.html", context, status=400)
    parsed = report.parsed
    if checking and name:
        lines = len(parsed.rows) + len(parsed.merged) + len(parsed.rejected)
        context["held"] = _hold(request, form, data, name, lines=lines, held=held)
    elif not checking:
        _release(request, held)
        form.data = form.data.copy()
        form.data["held"] = ""  # added: the page's form starts afresh
    job = None
    queue_error = ""
    if not checking and report.added and form.cleaned_data["import_history"]:
        ids = [site.pk for site in report.added]
        try:
            job = enqueue_import(
                ids, user=request.user, label=f"{len(ids)} new sites from an upload"
            )
        except QueueUnavailable as error:
            # The seeds stay stored; marked failed with the reason, "Retry failed sites" and
            # `import_archive --failed` find them once the workers run again.
            sites_finish(failed=dict.fromkeys(ids, NOT_QUEUED))
            queue_error = str(error)
    context.update(
        report=report,
        checking=checking,
        source=name,
        job=job,
        queue_error=queue_error,
        added=report.added[:SHOWN],
        rejected=parsed.rejected[:SHOWN],
        merged=parsed.merged[:SHOWN],
        already=report.already_stored[:SHOWN],
        shown=SHOWN,
    )
    return render(request, "dashboard/upload.html", context)


def _seed_list(request: HttpRequest, form: SeedUploadForm) -> tuple[bytes, str, HeldFile | None]:
    """The list to read, its file name ("" for pasted text) and the held file it comes from.

    A file chosen now comes first, then the file held since the check, then the pasted text.
    """
    upload = form.cleaned_data.get("file")
    if upload is not None:
        return b"".join(upload.chunks()), str(upload.name), None
    if form.cleaned_data.get("held"):
        held = _held_file(request, form.cleaned_data["held"])
        try:
            return _held_path(held.token).read_bytes(), held.name, held
        except FileNotFoundError:  # expired and removed by another request a moment ago
            raise HeldFileGone(held.token) from None
    return str(form.cleaned_data.get("text", "")).encode("utf-8"), "", None


def _limits() -> dict[str, int]:
    return {
        "bytes": settings.HACS_MAX_UPLOAD_BYTES,
        "lines": settings.HACS_MAX_SEED_LINES,
        "held_hours": HELD_HOURS,
    }


def _uploads_dir() -> Path:
    return Path(settings.VAR_DIR) / "uploads"


def _held_path(token: str) -> Path:
    return _uploads_dir() / f"{token}.seeds"


def _hold(
    request: HttpRequest,
    form: SeedUploadForm,
    data: bytes,
    name: str,
    *,
    lines: int | None,
    held: HeldFile | None = None,
) -> HeldFile:
    """Keep ``data`` for "Add and import" (a held file already kept is reused)."""
    if held is None:
        _forget_expired()
        folder = _uploads_dir()
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        token = secrets.token_urlsafe(24)
        # Owner-only, like everything else in VAR_DIR: a seed list can be unpublished work.
        fd = os.open(_held_path(token), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        held = HeldFile(token=token, name=Path(name).name[:200], size=len(data), lines=None)
    held = HeldFile(held.token, held.name, held.size, lines if lines is not None else held.lines)
    # The session lists only files still held (used or expired ones are gone from disk).
    files = {
        token: entry
        for token, entry in request.session.get(SESSION_KEY, {}).items()
        if _TOKEN.fullmatch(token) and _held_path(token).exists()
    }
    files[held.token] = {"name": held.name, "size": held.size, "lines": held.lines}
    request.session[SESSION_KEY] = files
    # The page's form now carries the token instead of the file.
    form.data = form.data.copy()
    form.data["held"] = held.token
    return held


def _held_file(request: HttpRequest, token: str) -> HeldFile:
    entry = request.session.get(SESSION_KEY, {}).get(token)
    if not _TOKEN.fullmatch(token) or entry is None:
        raise HeldFileGone(token)
    path = _held_path(token)
    try:
        age = time.time() - path.stat().st_mtime
    except FileNotFoundError:
        raise HeldFileGone(token) from None
    if age > HELD_HOURS * 3600:
        path.unlink(missing_ok=True)
        raise HeldFileGone(token)
    lines = entry.get("lines")
    return HeldFile(token, str(entry["name"]), int(entry["size"]), lines)


def _gone_message(request: HttpRequest, token: str) -> str:
    entry = request.session.get(SESSION_KEY, {}).get(token) or {}
    name = f"The file you checked ({entry['name']})" if entry else "The file you checked"
    return (
        f"{name} is no longer held on the server: a checked file is kept for {HELD_HOURS} "
        "hours, and only for the session that checked it. Choose the file again."
    )


def _release(request: HttpRequest, held: HeldFile | None) -> None:
    """Delete a held file once it has been added (or turned out unreadable)."""
    if held is None:
        return
    _held_path(held.token).unlink(missing_ok=True)
    files = dict(request.session.get(SESSION_KEY, {}))
    files.pop(held.token, None)
    request.session[SESSION_KEY] = files


def _forget_expired() -> None:
    """Delete held files older than ``HELD_HOURS`` (whoever checked them)."""
    cutoff = time.time() - HELD_HOURS * 3600
    folder = _uploads_dir()
    if not folder.is_dir():
        return
    for path in folder.glob("*.seeds"):
        try:
            if path.stat().st_mtime < cutoff:
                path.unlink(missing_ok=True)
        except FileNotFoundError:
            continue  # another request removed it first
