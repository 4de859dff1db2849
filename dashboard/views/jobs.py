"""The Jobs page: every background job with its progress, failures and retries."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from archive.models import Site
from dashboard.roles import librarian_required
from jobs.models import JobRecord
from jobs.services import job_enqueue, job_records_sync_with_rq
from operations.jobs import enqueue_import, health_check

JOBS_SHOWN = 50


def job_list(request: HttpRequest) -> HttpResponse:
    records = list(JobRecord.objects.select_related("created_by")[:JOBS_SHOWN])
    job_records_sync_with_rq(records)
    failed_sites = Site.objects.filter(import_status=Site.ImportStatus.FAILED).count()
    return render(
        request, "dashboard/jobs.html", {"records": records, "failed_sites": failed_sites}
    )


@require_POST
@librarian_required
def job_retry(request: HttpRequest) -> HttpResponse:
    """Import again the sites whose last import failed (of one job, or all of them)."""
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
    enqueue_import(ids, user=request.user, label=f"retry of {len(ids)} failed sites")
    messages.success(request, f"Retrying {len(ids)} failed sites.")
    return redirect("jobs")


def job_status(request: HttpRequest) -> JsonResponse:
    """The Jobs page polls this for live progress."""
    records = list(JobRecord.objects.all()[:JOBS_SHOWN])
    job_records_sync_with_rq(records)
    return JsonResponse(
        {
            "jobs": [
                {
                    "id": r.pk,
                    "kind": r.get_kind_display(),
                    "label": r.label,
                    "status": r.status,
                    "done": r.done,
                    "total": r.total,
                    "fraction": r.fraction,
                    "counts": r.counts,
                    "failures": len(r.failures),
                    "error": r.error,
                    "elapsed_seconds": r.elapsed_seconds,
                }
                for r in records
            ]
        }
    )


@require_POST
@librarian_required
def health_job(request: HttpRequest) -> HttpResponse:
    job_enqueue(
        kind=JobRecord.Kind.HEALTH,
        func=health_check,
        label="Web → Redis → worker → database",
        user=request.user,
        total=1,
    )
    messages.success(request, "Health check queued; a worker will pick it up in a moment.")
    return redirect("jobs")
