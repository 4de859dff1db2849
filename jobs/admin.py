from django.contrib import admin

from jobs.models import JobRecord


@admin.register(JobRecord)
class JobRecordAdmin(admin.ModelAdmin):
    """Every job, with its status. The daily job of a date is keyed ``daily:<date>``: deleting
    it lets the catch-up make that day's run again (the list, built again or found identical,
    handed off again), which is how an admin repeats a morning."""

    list_display = [
        "kind",
        "key",
        "label",
        "status",
        "done",
        "total",
        "created_by",
        "created_at",
        "finished_at",
    ]
    list_filter = ["kind", "status"]
    search_fields = ["label", "rq_id", "key"]
    # What the job's runner writes (jobs.runner) is shown, not edited.
    readonly_fields = [
        "rq_id",
        "key",
        "parent",
        "attempts",
        "status",
        "done",
        "total",
        "counts",
        "failures",
        "error",
        "worker",
        "items",
        "heartbeat_at",
        "started_at",
        "finished_at",
    ]
