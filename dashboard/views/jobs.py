"""The Jobs page: every background job with its progress, failures and retries."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from archive.models import Site
from dashboard.roles import librarian_required
from jobs.models import JobRecord
from jobs.services import QueueUnavailable, job_enqueue, job_records_sync_with_rq, jobs_waiting
from operations.jobs import enqueue_import, health_check, sweep_interrupted

JOBS_SHOWN = 50


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
                    "error": r.error,
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
