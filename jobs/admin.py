from django.contrib import admin

from jobs.models import JobRecord


@admin.register(JobRecord)
class JobRecordAdmin(admin.ModelAdmin):
    list_display = [
        "kind",
        "label",
        "status",
        "done",
        "total",
        "created_by",
        "created_at",
        "finished_at",
    ]
    list_filter = ["kind", "status"]
    search_fields = ["label", "rq_id"]
    # What the job's runner writes (jobs.runner) is shown, not edited.
    readonly_fields = [
        "rq_id",
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
