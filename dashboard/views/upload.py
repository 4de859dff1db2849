"""The Upload seeds page: check a seed list, then add it and start the archive import."""

from __future__ import annotations

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


@librarian_required
def upload_seeds(request: HttpRequest) -> HttpResponse:
    if request.method != "POST":
        return render(
            request, "dashboard/upload.html", {"form": SeedUploadForm(), "limits": _limits()}
        )
    form = SeedUploadForm(request.POST, request.FILES)
    context: dict[str, object] = {"form": form, "limits": _limits()}
    if not form.is_valid():
        return render(request, "dashboard/upload.html", context, status=400)
    checking = request.POST.get("action") != "import"
    try:
        report = seeds_import(
            data=form.seed_bytes(),
            max_bytes=settings.HACS_MAX_UPLOAD_BYTES,
            max_lines=settings.HACS_MAX_SEED_LINES,
            user_directories_only=form.cleaned_data["user_directories_only"],
            extra_tags=form.tag_list(),
            dry_run=checking,
        )
    except SeedFileError as error:
        form.add_error("file" if form.cleaned_data.get("file") else "text", str(error))
        return render(request, "dashboard/upload.html", context, status=400)
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
        job=job,
        queue_error=queue_error,
        added=report.added[:SHOWN],
        rejected=report.parsed.rejected[:SHOWN],
        merged=report.parsed.merged[:SHOWN],
        already=report.already_stored[:SHOWN],
        shown=SHOWN,
    )
    return render(request, "dashboard/upload.html", context)


def _limits() -> dict[str, int]:
    return {"bytes": settings.HACS_MAX_UPLOAD_BYTES, "lines": settings.HACS_MAX_SEED_LINES}
