"""The Upload seeds page: check a seed list, then add it and start the archive import."""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from archive.seeds import seeds_import
from dashboard.forms import SeedUploadForm
from dashboard.roles import librarian_required
from hacs.formats.seeds import SeedFileError
from operations.jobs import enqueue_import

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
    if not checking and report.added and form.cleaned_data["import_history"]:
        job = enqueue_import(
            [site.pk for site in report.added],
            user=request.user,
            label=f"{len(report.added)} new sites from an upload",
        )
    context.update(
        report=report,
        checking=checking,
        job=job,
        added=report.added[:SHOWN],
        rejected=report.parsed.rejected[:SHOWN],
        merged=report.parsed.merged[:SHOWN],
        already=report.already_stored[:SHOWN],
        shown=SHOWN,
    )
    return render(request, "dashboard/upload.html", context)


def _limits() -> dict[str, int]:
    return {"bytes": settings.HACS_MAX_UPLOAD_BYTES, "lines": settings.HACS_MAX_SEED_LINES}
