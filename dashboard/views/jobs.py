"""The Jobs page: every background job with its progress, failures and retries.

A job's error and each failure's reason are shown as one sentence; the raw text (an exception's
type and message, a long archive answer) is kept behind a toggle.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from django.contrib import messages
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from archive.models import Site
from dashboard.roles import librarian_required
from jobs.models import JobRecord
from jobs.runner import job_records_sync_with_rq
from jobs.services import QueueUnavailable, job_enqueue, jobs_waiting
from operations.jobs import enqueue_import, health_check, sweep_interrupted

JOBS_SHOWN = 50
SENTENCE_CHARS = 300  # a longer error is cut at a sentence or word, the rest behind the toggle

# "ValueError: ", "redis.exceptions.ConnectionError: ": the type that Python prints before an
# exception's message, which says nothing to a librarian.
_EXCEPTION_TYPE = re.compile(r"(?:[a-z_][\w]*\.)*(?P<name>[A-Z]\w*(?:Error|Exception|Timeout)):\s*")


@dataclass(frozen=True)
class Explained:
    """An error as the page shows it: a sentence, and the raw text when it says more."""

    sentence: str
    detail: str = ""


@dataclass(frozen=True)
class FailureRow:
    item: str
    reason: Explained


def explain(text: str) -> Explained:
    """One readable sentence for an error or failure reason, with the raw text as ``detail``
    whenever the sentence leaves something out (a traceback, an exception type, a long tail).
    """
    raw = (text or "").strip()
    if not raw:
        return Explained("")
    lines = [line.strip() for line in raw.splitlines() if line.strip()]
    # A traceback says what went wrong on its last line, after the stack.
    first = lines[-1] if lines[0].startswith("Traceback (most recent call last)") else lines[0]
    typed = _EXCEPTION_TYPE.match(first)
    if typed:
        message = first[typed.end() :].strip()
        if len(message.split()) < 2:  # "KeyError: 'x'" explains nothing on its own
            first = (
                f"An unexpected error ({typed['name']}); the details below are for whoever "
                "runs HACS."
            )
        else:
            first = message
    if len(first) > SENTENCE_CHARS:
        end = first.rfind(". ", 0, SENTENCE_CHARS)
        if end >= 20:  # a whole first sentence, unless it is only a word or two
            first = first[: end + 1]
        else:
            space = first.rfind(" ", 0, SENTENCE_CHARS)
            end = space if space > SENTENCE_CHARS // 3 else SENTENCE_CHARS
            first = first[:end].rstrip(" ,;:") + "…"
    sentence = first[:1].upper() + first[1:]
    if not sentence.endswith((".", "!", "?", "…")):
        sentence += "."
    same = sentence.rstrip(".") == raw.rstrip(".")
    return Explained(sentence, "" if same else raw)


def job_list(request: HttpRequest) -> HttpResponse:
    records = _records()
    failed_sites = Site.objects.filter(import_status=Site.ImportStatus.FAILED).count()
    context = {"records": records, "failed_sites": failed_sites, "waiting": jobs_waiting()}
    return render(request, "dashboard/jobs.html", context)


def _records() -> list[JobRecord]:
    """The latest records, after marking those whose worker, Redis or terminal stopped."""
    sweep_interrupted(rq_cleanup=False)
    records = list(JobRecord.objects.select_related("created_by")[:JOBS_SHOWN])
    job_records_sync_with_rq(records)
    for record in records:
        record.explained = explain(record.error)  # type: ignore[attr-defined]
        record.failure_rows = [  # type: ignore[attr-defined]
            FailureRow(str(f.get("item", "")), explain(str(f.get("reason", ""))))
            for f in record.failures
        ]
    return records


@require_POST
@librarian_required
def job_retry(request: HttpRequest) -> HttpResponse:
    """Import again the sites whose last import failed or was interrupted (of one job, or all)."""
    failed = Site.objects.filter(import_status=Site.ImportStatus.FAILED)
    record_id = request.POST.get("job", "")
    if record_id.isdigit():
        record = JobRecord.objects.filter(pk=int(record_id)).first()
        items = [f.get("item") for f in record.failures] if record else []
        failed = failed.filter(seed_url__in=items)
    ids = list(failed.values_list("pk", flat=True))
    if not ids:
        messages.info(request, "No failed sites to retry.")
        return redirect("jobs")
    try:
        enqueue_import(ids, user=request.user, label=f"retry of {len(ids)} failed sites")
    except QueueUnavailable as error:
        messages.error(request, f"Nothing was retried. {error}")
        return redirect("jobs")
    messages.success(request, f"Retrying {len(ids)} failed sites.")
    return redirect("jobs")


def job_status(request: HttpRequest) -> JsonResponse:
    """The Jobs page polls this for live progress."""
    records = _records()
    return JsonResponse(
        {
            "jobs": [
                {
                    "id": r.pk,
                    "kind": r.get_kind_display(),
                    "label": r.label,
                    "status": r.status,
                    "status_display": r.get_status_display(),
                    "done": r.done,
                    "total": r.total,
                    "fraction": r.fraction,
                    "counts": r.counts,
                    "failures": len(r.failures),
                    "error": r.explained.sentence,  # type: ignore[attr-defined]
                    "elapsed_seconds": r.elapsed_seconds,
                }
                for r in records
            ],
            "waiting": len(jobs_waiting()),
        }
    )


@require_POST
@librarian_required
def health_job(request: HttpRequest) -> HttpResponse:
    try:
        job_enqueue(
            kind=JobRecord.Kind.HEALTH,
            func=health_check,
            label="Web → Redis → worker → database",
            user=request.user,
            total=1,
        )
    except QueueUnavailable as error:
        messages.error(request, f"The health check could not start. {error}")
        return redirect("jobs")
    messages.success(request, "Health check queued; a worker will pick it up in a moment.")
    return redirect("jobs")
