"""Hand-offs: where a crawl list goes once it is built, and what happened each time it went.

A hand-off takes a stored crawl list at its level (all its sites, or those carrying one tag, in
rank order) to one crawler:

* **Heritrix 3, action directory** — a ``.seeds`` file in the job's ``action/`` directory, which
  a running job's ``ActionDirectory`` bean imports as new seeds and then moves to ``done``;
* **Heritrix 3, relaunch** — the job's ``seeds.txt``, read when the job is next launched;
* **Browsertrix** — a seed file uploaded to an organisation, set as a workflow's seed list, and
  the workflow started, through Browsertrix's API.

The Browsertrix token is never stored: the hand-off stores the *name* of the environment
variable that holds it. What a hand-off may reach (Browsertrix's address, the variables it reads,
Heritrix's directory) is ruled by ``handoff.trust``, checked here when an admin saves it and again
when it is sent.

What the crawl then fetched comes home (``operations.readback``): ``FollowedCrawl`` follows a
crawl a Browsertrix hand-off started, ``CrawlFile`` remembers each crawl file read back, and
``ListYield`` counts what a handed-off list's crawl reached and found changed.
"""

from __future__ import annotations

import uuid
from pathlib import PurePosixPath
from urllib.parse import urlsplit

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models

from handoff.trust import (
    LOGIN_PREFIX,
    TOKEN_PREFIX,
    browsertrix_address_problem,
    credential_variable_problem,
    job_dir_problem,
)
from jobs.models import JobRecord
from scheduling.models import Level


class HandOff(models.Model):
    class Kind(models.TextChoices):
        HERITRIX_ACTION = "heritrix_action", "Heritrix 3: action directory of a running job"
        HERITRIX_RELAUNCH = "heritrix_relaunch", "Heritrix 3: seeds.txt for the next launch"
        BROWSERTRIX = "browsertrix", "Browsertrix: seed file of a workflow, then run it"

    HERITRIX = (Kind.HERITRIX_ACTION, Kind.HERITRIX_RELAUNCH)

    name = models.CharField(max_length=100, unique=True)
    kind = models.CharField(max_length=20, choices=Kind.choices)
    enabled = models.BooleanField(
        default=True, help_text="Enabled hand-offs run every morning after the daily list."
    )
    level = models.CharField(
        max_length=10,
        choices=Level.choices,
        default=Level.HOMEPAGE,
        help_text="Lists at this level are handed off (the daily list is at homepage level).",
    )
    tag = models.ForeignKey(
        "archive.Tag",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
        help_text="Hand off only the listed sites carrying this tag; empty: the whole list.",
    )
    # Heritrix 3
    job_dir = models.CharField(
        "Heritrix job directory",
        max_length=500,
        blank=True,
        help_text="Absolute path of the Heritrix job, e.g. /opt/heritrix/jobs/scholars "
        "(the directory holding crawler-beans.cxml), inside HACS_HERITRIX_ROOT.",
    )
    # Browsertrix
    api_url = models.CharField(
        "Browsertrix address",
        max_length=300,
        blank=True,
        help_text="The Browsertrix app, e.g. https://app.browsertrix.com (HACS adds /api/…). "
        "HACS contacts no other host for this hand-off, over https at a public address unless "
        "HACS_BROWSERTRIX_ALLOWED_HOSTS lists the host.",
    )
    org_id = models.CharField(
        "organisation id",
        max_length=36,
        blank=True,
        help_text="The organisation's id (a UUID, in the address of its pages).",
    )
    workflow_id = models.CharField(
        "workflow id",
        max_length=36,
        blank=True,
        help_text="The crawl workflow's id (a UUID, in the address of its page).",
    )
    token_env = models.CharField(
        "token variable",
        max_length=100,
        blank=True,
        help_text="Name of the environment variable holding a Browsertrix access token, "
        f"starting with {TOKEN_PREFIX}, e.g. {TOKEN_PREFIX}SCHOLARS. The token itself is never "
        "stored.",
    )
    username_env = models.CharField(
        "user name variable",
        max_length=100,
        blank=True,
        help_text="Optional: name of the environment variable holding a Browsertrix login "
        f"e-mail, starting with {LOGIN_PREFIX}, used with the password variable when the "
        "token variable is unset.",
    )
    password_env = models.CharField(
        "password variable",
        max_length=100,
        blank=True,
        help_text="Optional: name of the environment variable holding that login's password, "
        f"starting with {LOGIN_PREFIX}.",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]
        verbose_name = "hand-off"

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        errors: dict[str, str] = {}
        if self.kind in self.HERITRIX:
            errors.update(self._heritrix_errors())
        elif self.kind == self.Kind.BROWSERTRIX:
            errors.update(self._browsertrix_errors())
        if errors:
            raise ValidationError(errors)

    def _heritrix_errors(self) -> dict[str, str]:
        path = self.job_dir.strip()
        if not path:
            return {"job_dir": "A Heritrix hand-off needs the job directory."}
        self.job_dir = path
        problem = job_dir_problem(path)
        return {"job_dir": problem} if problem else {}

    def _browsertrix_errors(self) -> dict[str, str]:
        errors: dict[str, str] = {}
        url = self.api_url.strip().rstrip("/")
        parts = urlsplit(url)
        if not url:
            errors["api_url"] = "A Browsertrix hand-off needs the address of Browsertrix."
        elif parts.scheme not in ("http", "https") or not parts.hostname:
            errors["api_url"] = (
                f"{url!r} is not an http:// or https:// address, e.g. https://app.browsertrix.com."
            )
        elif parts.query or parts.fragment:
            errors["api_url"] = "The address takes no query (?…) or fragment (#…)."
        else:
            self.api_url = url.removesuffix("/api")
            problem = browsertrix_address_problem(self.api_url)
            if problem:
                errors["api_url"] = problem
        for field, what in (("org_id", "organisation id"), ("workflow_id", "workflow id")):
            value = getattr(self, field).strip()
            try:
                setattr(self, field, str(uuid.UUID(value)))
            except ValueError:
                errors[field] = (
                    f"The {what} is a UUID such as 0f5d2b8e-9a8c-4a55-b3d4-7c0c1e7a9f21"
                    + (f"; {value!r} is not." if value else ".")
                )
        for field, prefix in (
            ("token_env", TOKEN_PREFIX),
            ("username_env", LOGIN_PREFIX),
            ("password_env", LOGIN_PREFIX),
        ):
            value = getattr(self, field).strip()
            setattr(self, field, value)
            problem = value and credential_variable_problem(value, prefix)
            if problem:
                errors[field] = problem
        if not self.token_env and "token_env" not in errors:
            errors["token_env"] = (
                "A Browsertrix hand-off needs the name of the environment variable holding "
                f"its access token, e.g. {TOKEN_PREFIX}SCHOLARS."
            )
        if bool(self.username_env) != bool(self.password_env):
            missing = "password_env" if self.username_env else "username_env"
            errors.setdefault(
                missing, "Give both the user name and the password variables, or neither."
            )
        return errors

    @property
    def host(self) -> str:
        """The Browsertrix host as messages name it (never a user name or password that an
        address saved before HACS refused them may carry)."""
        return urlsplit(self.api_url).netloc.rsplit("@", 1)[-1] or self.api_url

    @property
    def target(self) -> str:
        """Where the list goes, in a few words."""
        if self.kind == self.Kind.HERITRIX_ACTION:
            return f"{PurePosixPath(self.job_dir) / 'action'}/"
        if self.kind == self.Kind.HERITRIX_RELAUNCH:
            return str(PurePosixPath(self.job_dir) / "seeds.txt")
        return f"workflow {self.workflow_id} at {self.host}"


class HandOffRun(models.Model):
    """One hand-off of one list: how many sites went, the steps done and what was said; how it
    ended is its job's (the run is made as its job ends, in one transaction)."""

    class Status(models.TextChoices):
        SENT = "sent", "Sent"
        EMPTY = "empty", "Nothing to send"
        FAILED = "failed", "Failed"

    hand_off = models.ForeignKey(HandOff, on_delete=models.CASCADE, related_name="runs")
    crawl_list = models.ForeignKey(
        "scheduling.CrawlList", null=True, on_delete=models.SET_NULL, related_name="+"
    )
    job = models.OneToOneField(
        "jobs.JobRecord", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    sites = models.PositiveIntegerField(default=0)
    # The steps that were done, in order, each a short sentence (a failed step is not among them).
    steps = models.JSONField(default=list, blank=True)
    message = models.TextField(blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-pk"]
        indexes = [models.Index(fields=["hand_off", "-created_at"], name="handoffrun_latest")]

    def __str__(self) -> str:
        return f"{self.hand_off} {self.created_at:%Y-%m-%d %H:%M}: {self.get_status_display()}"

    @property
    def status(self) -> str:
        """How the hand-off ended, read from its job: failed when the job failed (or was
        interrupted, or is gone), else sent, or nothing to send when no site went."""
        if self.job is None or self.job.status not in JobRecord.DONE:
            return self.Status.FAILED
        return self.Status.SENT if self.sites else self.Status.EMPTY

    def get_status_display(self) -> str:
        return str(self.Status(self.status).label)


class FollowedCrawl(models.Model):
    """A Browsertrix crawl that a hand-off started, followed through Browsertrix's API until it
    ends (``handoff.readback``): then its WACZ files are read back, or its failure reported.
    One that has not ended within ``HACS_CRAWL_WAIT_HOURS`` is given up."""

    class Status(models.TextChoices):
        FOLLOWING = "following", "Following"
        READ = "read", "Read back"
        FAILED = "failed", "Crawl failed"
        GIVEN_UP = "given_up", "Given up"

    run = models.OneToOneField(HandOffRun, on_delete=models.CASCADE, related_name="followed")
    crawl_id = models.CharField(max_length=100)
    state = models.CharField(
        max_length=40, blank=True, help_text="The crawl's state as Browsertrix last gave it."
    )
    status = models.CharField(
        max_length=10, choices=Status.choices, default=Status.FOLLOWING, db_index=True
    )
    checked_at = models.DateTimeField(null=True, blank=True)
    ended_at = models.DateTimeField(null=True, blank=True)
    message = models.TextField(blank=True)
    job = models.ForeignKey(
        "jobs.JobRecord",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="The read-back's job (or the job that reported the crawl's end).",
    )

    class Meta:
        ordering = ["-run__created_at", "-pk"]

    def __str__(self) -> str:
        return f"crawl {self.crawl_id} ({self.get_status_display()})"


class CrawlFile(models.Model):
    """A file of a library crawl that HACS has read back, remembered by where it lies, its size
    and its SHA-256, so that a file seen before is not read again while one that grew or was
    rewritten is. ``key`` says where: ``heritrix:<hand-off>:<launch>/warcs/<name>`` or
    ``browsertrix:<hand-off>:<crawl>/<name>``."""

    class Status(models.TextChoices):
        READ = "read", "Read"
        FAILED = "failed", "Read with a failure"
        REFUSED = "refused", "Refused"

    key = models.CharField(max_length=700, unique=True)
    hand_off = models.ForeignKey(HandOff, on_delete=models.CASCADE, related_name="crawl_files")
    name = models.CharField(max_length=300)
    size = models.BigIntegerField()
    mtime_ns = models.BigIntegerField(null=True, blank=True)
    digest = models.CharField(max_length=64, help_text="SHA-256 of the file as read.")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.READ)
    message = models.TextField(blank=True)
    captures = models.PositiveIntegerField(default=0, help_text="Captures it added.")
    job = models.ForeignKey(
        "jobs.JobRecord", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    read_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-read_at"]

    def __str__(self) -> str:
        return self.key


class ListYield(models.Model):
    """The list's own yield: of the sites a handed-off list named, how many the library's crawls
    reached in the crawl's window (from the first hand-off of the list until the next list at
    its level was handed off, at most ``HACS_CRAWL_WAIT_HOURS``), and how many of those had
    changed since HACS's newest copy before the crawl (``handoff.crawl_yield``). ``expected`` is
    the list's own sum of p; the round-robin expectation is on the list."""

    crawl_list = models.OneToOneField(
        "scheduling.CrawlList", on_delete=models.CASCADE, related_name="crawl_yield"
    )
    handed_off_at = models.DateTimeField(db_index=True)
    listed = models.PositiveIntegerField(default=0)
    expected = models.FloatField(default=0.0, help_text="The sum of the list's probabilities.")
    reached = models.PositiveIntegerField(null=True, blank=True)
    changed = models.PositiveIntegerField(null=True, blank=True)
    computed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["handed_off_at"]

    def __str__(self) -> str:
        return f"yield of list {self.crawl_list_id}: {self.changed}/{self.reached}/{self.listed}"
