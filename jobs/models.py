"""Background jobs as the dashboard shows them.

RQ keeps a job's state in Redis only for a while; HACS keeps one row per job so that a librarian
can see yesterday's import, its counts and its failures after Redis has forgotten it.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models


class JobRecord(models.Model):
    class Kind(models.TextChoices):
        HEALTH = "health", "Health check"
        IMPORT = "import", "Import"
        ESTIMATION = "estimation", "Estimate recompute"
        EVALUATION = "evaluation", "Evaluation"
        CRAWL_LIST = "crawl_list", "Crawl list"

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        FINISHED = "finished", "Finished"
        FAILED = "failed", "Failed"

    rq_id = models.CharField("RQ job id", max_length=64, unique=True)
    kind = models.CharField(max_length=12, choices=Kind.choices)
    label = models.CharField(max_length=300, blank=True)
    queue = models.CharField(max_length=40)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED)
    done = models.PositiveIntegerField(default=0)
    total = models.PositiveIntegerField(default=0)
    counts = models.JSONField(default=dict, blank=True)
    failures = models.JSONField(default=list, blank=True)
    error = models.TextField(blank=True)
    worker = models.CharField(max_length=200, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["status", "kind"], name="jobrecord_status_kind")]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} {self.label} ({self.status})"

    @property
    def fraction(self) -> float:
        if self.status == self.Status.FINISHED:
            return 1.0
        return self.done / self.total if self.total else 0.0

    @property
    def elapsed_seconds(self) -> float | None:
        if self.started_at is None:
            return None
        from django.utils import timezone

        end = self.finished_at or timezone.now()
        return (end - self.started_at).total_seconds()
