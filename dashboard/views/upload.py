"""The Upload seeds page: check a seed list, then add it and start the archive import.

A file checked with "Check the list" is held on the server (in ``VAR_DIR/uploads``, owner-only,
for ``HELD_HOURS``) under a random token that the page carries in a hidden field and the
librarian's session lists, so that "Add and import" adds that same file without choosing it
again. Only the session that checked a file can add it; adding it, or the time running out,
deletes it.

Held files are bounded, so that repeated checks cannot fill the disk: at most
``HACS_UPLOAD_HOLD_PER_USER`` files for each user and ``HACS_UPLOAD_HOLD_TOTAL_BYTES`` in all.
Holding one more lets the oldest go first; the librarian whose file it was is told by name (at
once, or on their next visit to the page). A file's name on disk carries its owner's id
(``<user id>.<token>.seeds``) so that the bound holds across a user's sessions. Requests run
side by side: a file another request removed a moment before is simply gone.
"""

from __future__ import annotations

import os
import re
import secrets
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from django.conf import settings
from django.contrib import messages
from django.http import HttpRequest, HttpResponse, QueryDict
from django.shortcuts import render
from django.template.defaultfilters import filesizeformat

from archive.pipeline import sites_finish
from archive.seeds import SeedImportReport, seeds_import
from dashboard.forms import SeedUploadForm
from dashboard.roles import librarian_required
from hacs.formats.seeds import MAX_LINE_LENGTH, SeedFileError
from jobs.models import JobRecord
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


@dataclass(frozen=True)
class _OnDisk:
    """A held file as found in the uploads folder (files of every user)."""

    path: Path
    owner: str  # the user id its name carries ("" for one held before names carried it)
    token: str
    size: int
    mtime_ns: int  # when it was held


@librarian_required
def upload_seeds(request: HttpRequest) -> HttpResponse:
    if request.method != "POST":
        _session_held(request)  # says which of this session's files are no longer held
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
        _forget(request, form.cleaned_data["held"])  # said once, here
        return render(request, "dashboard/upload.html", context, status=400)
    if not valid:
        # Keep the chosen file while the other fields are put right.
        if upload is not None:
            context["held"] = _hold(request, form, data, name, lines=None)
        elif held is not None:
            context["held"] = held
        return render(request, "dashboard/upload.html", context, status=400)
    try:
        report = _seeds_import(form, data, dry_run=checking)
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
        form.data = fresh = cast(QueryDict, form.data).copy()
        fresh["held"] = ""  # added: the page's form starts afresh
    job, queue_error = None, ""
    if not checking and report.added and form.cleaned_data["import_history"]:
        job, queue_error = _enqueue_added(request, report)
    context.update(
        _report_context(report), checking=checking, source=name, job=job, queue_error=queue_error
    )
    return render(request, "dashboard/upload.html", context)


def _seeds_import(form: SeedUploadForm, data: bytes, *, dry_run: bool) -> SeedImportReport:
    """The seed list checked (``dry_run``) or added, with the form's options and the limits."""
    return seeds_import(
        data=data,
        max_bytes=settings.HACS_MAX_UPLOAD_BYTES,
        max_lines=settings.HACS_MAX_SEED_LINES,
        user_directories_only=form.cleaned_data["user_directories_only"],
        extra_tags=form.tag_list(),
        dry_run=dry_run,
    )


def _enqueue_added(request: HttpRequest, report: SeedImportReport) -> tuple[JobRecord | None, str]:
    """The import job of the sites an upload added, or why the queue refused it."""
    ids = [site.pk for site in report.added]
    try:
        return enqueue_import(
            ids, user=request.user, label=f"{len(ids)} new sites from an upload"
        ), ""
    except QueueUnavailable as error:
        # The seeds stay stored; marked failed with the reason, "Retry failed sites" and
        # `import_archive --failed` find them once the workers run again.
        sites_finish(failed=dict.fromkeys(ids, NOT_QUEUED))
        return None, str(error)


def _report_context(report: SeedImportReport) -> dict[str, Any]:
    """What the page shows of an import's report: the first SHOWN lines of each kind."""
    parsed = report.parsed
    return {
        "report": report,
        "added": report.added[:SHOWN],
        "rejected": parsed.rejected[:SHOWN],
        "merged": parsed.merged[:SHOWN],
        "already": [
            (line, url, site_id, report.tags_added.get(site_id, []))
            for line, url, site_id in report.already_stored[:SHOWN]
        ],
        "shown": SHOWN,
    }


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
            return _held_path(_owner(request), held.token).read_bytes(), held.name, held
        except FileNotFoundError:  # expired and removed by another request a moment ago
            raise HeldFileGone(held.token) from None
    return str(form.cleaned_data.get("text", "")).encode("utf-8"), "", None


def _limits() -> dict[str, int]:
    return {
        "bytes": settings.HACS_MAX_UPLOAD_BYTES,
        "lines": settings.HACS_MAX_SEED_LINES,
        "line_length": MAX_LINE_LENGTH,
        "held_hours": HELD_HOURS,
        "held_files": settings.HACS_UPLOAD_HOLD_PER_USER,
        "crawl_bytes": settings.HACS_MAX_CRAWL_UPLOAD_BYTES,  # a crawl's WARC or WACZ file
    }


def _uploads_dir() -> Path:
    return Path(settings.VAR_DIR) / "uploads"


def _owner(request: HttpRequest) -> str:
    return str(request.user.pk)


def _held_path(owner: str, token: str) -> Path:
    return _uploads_dir() / f"{owner}.{token}.seeds"


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
        token, dropped = _store(owner=_owner(request), data=data)
        for file, why in dropped:
            _say_dropped(request, file, why)
        held = HeldFile(token=token, name=Path(name).name[:200], size=len(data), lines=None)
    held = HeldFile(held.token, held.name, held.size, lines if lines is not None else held.lines)
    files = _session_held(request)
    files[held.token] = {"name": held.name, "size": held.size, "lines": held.lines}
    request.session[SESSION_KEY] = files
    # The page's form now carries the token instead of the file.
    form.data = fresh = cast(QueryDict, form.data).copy()
    fresh["held"] = held.token
    return held


def _store(*, owner: str, data: bytes) -> tuple[str, list[tuple[_OnDisk, str]]]:
    """Hold ``data`` for ``owner`` under a new token, first letting expired files go and then
    the oldest ones the bounds ask for; the token, and the files let go for it (``_make_room``)."""
    _forget_expired()
    dropped = _make_room(owner=owner, size=len(data))
    folder = _uploads_dir()
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    if folder.stat().st_mode & 0o077:
        folder.chmod(0o700)  # an existing folder made by other means: owner-only again
    token = secrets.token_urlsafe(24)
    # Owner-only, like everything else in VAR_DIR: a seed list can be unpublished work.
    fd = os.open(_held_path(owner, token), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(data)
        out.flush()
        # Which file is oldest is read from this time: the clock's, finer than the one the
        # filesystem stamps writes with (a few ms), so files held in quick succession keep
        # their order.
        now = time.time_ns()
        os.utime(out.fileno(), ns=(now, now))
    return token, dropped


def _held_file(request: HttpRequest, token: str) -> HeldFile:
    entry = request.session.get(SESSION_KEY, {}).get(token)
    if not _TOKEN.fullmatch(token) or entry is None:
        raise HeldFileGone(token)
    path = _held_path(_owner(request), token)
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
        "hours (less when newer files need the room), and only for the session that checked "
        "it. Choose the file again."
    )


def _release(request: HttpRequest, held: HeldFile | None) -> None:
    """Delete a held file once it has been added (or turned out unreadable)."""
    if held is None:
        return
    _held_path(_owner(request), held.token).unlink(missing_ok=True)
    _forget(request, held.token)


def _forget(request: HttpRequest, token: str) -> None:
    """Take ``token`` off this session's list of held files."""
    files = dict(request.session.get(SESSION_KEY, {}))
    if files.pop(token, None) is not None:
        request.session[SESSION_KEY] = files


def _session_held(request: HttpRequest) -> dict[str, Any]:
    """This session's held files still on disk, now its list; each one gone since (expired,
    or let go for newer files) is said by name and taken off the list."""
    owner = _owner(request)
    listed = request.session.get(SESSION_KEY, {})
    files: dict[str, Any] = {}
    for token, entry in listed.items():
        if _TOKEN.fullmatch(token) and _held_path(owner, token).exists():
            files[token] = entry
        else:
            messages.warning(
                request,
                f"{entry.get('name') or 'A file you checked'} is no longer held on the server: "
                f"a checked file is kept for {HELD_HOURS} hours, less when newer files need "
                "the room. Choose it again to add it.",
            )
    if len(files) != len(listed):
        request.session[SESSION_KEY] = files
    return files


def _held_on_disk() -> list[_OnDisk]:
    """Every held file, oldest first (files removed meanwhile by another request left out)."""
    found = []
    for path in _uploads_dir().glob("*.seeds"):
        try:
            status = path.stat()
        except FileNotFoundError:
            continue
        owner, _, token = path.name.removesuffix(".seeds").rpartition(".")
        found.append(_OnDisk(path, owner, token, status.st_size, status.st_mtime_ns))
    return sorted(found, key=lambda held: (held.mtime_ns, held.path.name))


def _make_room(*, owner: str, size: int) -> list[tuple[_OnDisk, str]]:
    """Let the oldest held files go until one more of ``size`` bytes from ``owner`` keeps
    within both bounds; the files let go, each with the bound that let it go.

    Two requests doing this at once may together hold one file more than the bounds for a
    moment; the next file held brings them back within them."""
    per_user, total = settings.HACS_UPLOAD_HOLD_PER_USER, settings.HACS_UPLOAD_HOLD_TOTAL_BYTES
    files = _held_on_disk()
    mine = [held for held in files if held.owner == owner]
    dropped = [(held, "per_user") for held in mine[: max(len(mine) - (per_user - 1), 0)]]
    kept = [held for held in files if held.path not in {gone.path for gone, _ in dropped}]
    room = total - size - sum(held.size for held in kept)
    for held in kept:
        if room >= 0:
            break
        dropped.append((held, "total"))
        room += held.size
    for held, _why in dropped:
        held.path.unlink(missing_ok=True)  # another request may have removed it first
    return dropped


def _say_dropped(request: HttpRequest, dropped: _OnDisk, why: str) -> None:
    """Tell the librarian holding a new file that one of theirs was let go for it (another
    user's file let go is said to them on their next visit, by ``_session_held``)."""
    if dropped.owner != _owner(request):
        return
    entry = request.session.get(SESSION_KEY, {}).get(dropped.token)
    name = entry["name"] if entry else "A file you checked in another session or browser"
    if why == "per_user":
        bound = f"HACS holds at most {settings.HACS_UPLOAD_HOLD_PER_USER} checked files for you"
    else:
        limit = filesizeformat(settings.HACS_UPLOAD_HOLD_TOTAL_BYTES)
        bound = f"HACS holds at most {limit} of checked files in all"
    messages.warning(
        request,
        f"{name} ({filesizeformat(dropped.size)}) is no longer held on the server: {bound}, "
        "and let the oldest go to hold this one. Choose it again to add it.",
    )
    _forget(request, dropped.token)


def _forget_expired() -> None:
    """Delete held files older than ``HELD_HOURS`` (whoever checked them)."""
    cutoff = time.time_ns() - HELD_HOURS * 3600 * 10**9
    for held in _held_on_disk():
        if held.mtime_ns < cutoff:
            held.path.unlink(missing_ok=True)  # another request may have removed it first
