"""Background jobs as the dashboard shows them.

RQ keeps a job's state in Redis only for a while; HACS keeps one row per job so that a librarian
can see yesterday's import, its counts and its failures after Redis has forgotten it.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone


class JobRecord(models.Model):
    class Kind(models.TextChoices):
        HEALTH = "health", "Health check"
        IMPORT = "import", "Import"
        ESTIMATION = "estimation", "Estimate recompute"
        EVALUATION = "evaluation", "Evaluation"
        LEARNING = "learning", "Learning a scheduler"
        CRAWL_LIST = "crawl_list", "Crawl list"
        HAND_OFF = "hand_off", "Hand-off"
        READ_BACK = "read_back", "Crawl read-back"
        DAILY = "daily", "Daily run"

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        FINISHED = "finished", "Finished"
        PARTIAL = "partial", "Finished with failures"
        FAILED = "failed", "Failed"
        # Its worker, Redis or terminal stopped before the job ended (no heartbeat for a lease).
        INTERRUPTED = "interrupted", "Interrupted"

    ACTIVE = (Status.QUEUED, Status.RUNNING)
    # The kinds that import captures and start sites' imports (an interrupted one leaves its
    # sites to be marked failed).
    IMPORTING = (Kind.IMPORT, Kind.READ_BACK)
    ENDED = (Status.FINISHED, Status.PARTIAL, Status.FAILED)
    # A job that did its work (some items may have failed).
    DONE = (Status.FINISHED, Status.PARTIAL)

    rq_id = models.CharField("RQ job id", max_length=64, unique=True)
    # What the job is the run of, when it is one of a kind that must run once: ``daily:<date>``
    # (the morning's run), ``evaluate:<run>``, ``learn:<scorer>``; empty for ad-hoc jobs.
    key = models.CharField(max_length=100, null=True, blank=True, unique=True)
    # The job this one is a step of (the morning's list and hand-offs are the daily job's).
    parent = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="children"
    )
    # How many times the job was started (a failed daily run is claimed again a few times).
    attempts = models.PositiveSmallIntegerField(default=1)
    kind = models.CharField(max_length=12, choices=Kind.choices)
    label = models.CharField(max_length=300, blank=True)
    queue = models.CharField(max_length=40)
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.QUEUED)
    done = models.PositiveIntegerField(default=0)
    total = models.PositiveIntegerField(default=0)
    counts = models.JSONField(default=dict, blank=True)
    failures = models.JSONField(default=list, blank=True)
    error = models.TextField(blank=True)
    worker = models.CharField(max_length=200, blank=True)
    # The ids of the items (sites) a fanned-out job works on, so that the items of an interrupted
    # job can be found and marked without asking Redis.
    items = models.JSONField(default=list, blank=True)
    # The last sign of life of whoever runs the job; a running job whose heartbeat is older than
    # HACS_JOB_LEASE_SECONDS has lost its worker, Redis or terminal.
    heartbeat_at = models.DateTimeField(null=True, blank=True)
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
        if self.status in (self.Status.FINISHED, self.Status.PARTIAL):
            return 1.0
        return min(self.done / self.total, 1.0) if self.total else 0.0

    @property
    def elapsed_seconds(self) -> float | None:
        """Seconds since the job started: to its end once it ended, to its last heartbeat once
        it was interrupted, and to now while it runs."""
        if self.started_at is None:
            return None
        if self.finished_at is not None:
            end = self.finished_at
        elif self.status == self.Status.INTERRUPTED:
            end = self.heartbeat_at or self.started_at
        else:
            end = timezone.now()
        return max((end - self.started_at).total_seconds(), 0.0)
