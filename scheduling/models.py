"""Estimates of each site's update rate, the crawl lists built from them, and evaluation runs."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date, datetime

import numpy as np
from django.conf import settings
from django.db import models
from numpy.typing import ArrayLike, NDArray

from hacs.ranking import crawl_probabilities, posterior_probabilities
from jobs.models import JobRecord
from scheduling.cells import day_text

#: A probability rests mostly on the collection's prior when the prior makes more than half of
#: its rate's posterior mean (``Estimate.prior_share``): the pages say so beside it.
PRIOR_LED = 0.5


class Level(models.TextChoices):
    HOMEPAGE = "homepage", "Homepage"
    WEBSITE = "website", "Website (depth ≤ 2)"


class Method(models.TextChoices):
    """How a site's rate and probability of change are read from its history.

    ``observed`` and ``interpolated`` are the paper's maximum-likelihood estimates (DESIGN rules
    5 and 6) with its g, the chance of a change since the last update (rule 7). ``posterior`` is
    the rate's posterior under a prior fitted on the collection, with p the chance of a change
    since the newest copy HACS holds (``hacs.bayes``): the default of every page, list and job,
    chosen by the closed-loop replay in docs/readings.md.
    """

    OBSERVED = "observed", "Observed"
    INTERPOLATED = "interpolated", "Interpolated"
    POSTERIOR = "posterior", "Posterior, since the last copy"


# The method pages, lists and the daily job use unless told otherwise.
DEFAULT_METHOD = Method.POSTERIOR


class Learned(models.TextChoices):
    """Schedulers learned on the collection (``hacs.learning``): a crawl list can rank by the
    newest one learned at its level instead of by an estimate's probability."""

    GP4C = "gp4c", "GP4C, a learned score function"
    LWS = "lws", "LWS, the predicted next update"


#: What a crawl list can rank by: an estimation method or a learned scheduler.
LIST_METHOD_CHOICES = [*Method.choices, *Learned.choices]


class Estimate(models.Model):
    """A site's estimated mean update rate at one level by one method, over a history window.

    ``rate`` is null when the history is insufficient (fewer than two observations).
    """

    site = models.ForeignKey("archive.Site", on_delete=models.CASCADE, related_name="estimates")
    level = models.CharField(max_length=10, choices=Level.choices)
    method = models.CharField(max_length=12, choices=Method.choices)
    window_start = models.DateTimeField(null=True, blank=True)
    window_end = models.DateTimeField(null=True, blank=True)
    rate = models.FloatField("rate λ (per day)", null=True, blank=True)
    tau = models.DateTimeField("τ", null=True, blank=True)
    # τ again, as days since 1970-01-01 UTC, so that pages can rank sites by their probability
    # of change in SQL: p = 1 − exp(−λ (t + e − τ)) orders like λ · (t + e − τ).
    tau_days = models.FloatField(null=True, blank=True)
    observations = models.PositiveIntegerField(default=0)
    updates = models.PositiveIntegerField(default=0)
    # The evidence behind the estimate: the newest copy (the last observation in the window,
    # from which the posterior method measures the chance of a change), the span of the
    # observations, and, for the posterior, its Gamma(α, β) and the 90 % credible interval of
    # the mean interval 1/λ. An open interval (captures sparser than changes:
    # ``hacs.bayes.interval_bounds``) claims no lower bound: ``interval_low`` is null and the
    # mean interval is at most ``interval_high`` days.
    last_copy = models.DateTimeField(null=True, blank=True)
    last_copy_days = models.FloatField(null=True, blank=True)
    span_days = models.FloatField(null=True, blank=True)
    posterior_shape = models.FloatField("α", null=True, blank=True)
    posterior_rate = models.FloatField("β (days)", null=True, blank=True)
    interval_low = models.FloatField(null=True, blank=True)
    interval_high = models.FloatField(null=True, blank=True)
    interval_open = models.BooleanField(default=False)
    # How much of the posterior mean is the collection's prior rather than the site's copies:
    # β_prior / β (the credibility weight of a Gamma posterior, whose mean is w · prior mean +
    # (1 − w) · the copies' own rate). Above PRIOR_LED the p rests mostly on the prior.
    prior_share = models.FloatField(null=True, blank=True)
    computed_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["site", "level", "method"], name="estimate_unique")
        ]
        indexes = [models.Index(fields=["level", "method", "rate"])]

    @property
    def rests_on_prior(self) -> bool:
        """The posterior is mostly the collection's prior: few or short intervals of its own."""
        return self.prior_share is not None and self.prior_share > PRIOR_LED

    def __str__(self) -> str:
        rate = "insufficient history" if self.rate is None else f"λ={self.rate:.4g}/day"
        return f"{self.site_id} {self.level}/{self.method}: {rate}"

    @property
    def interval_days(self) -> float | None:
        """Mean interval between updates, 1/λ, in days (None when λ is unknown or zero)."""
        if self.rate is None or self.rate <= 0:
            return None
        return 1.0 / self.rate

    def change_probability(self, *, t_days: ArrayLike, e_days: float) -> NDArray[np.float64]:
        """The probability that the site changes by t + e, for each t (days since 1970), read as
        the estimate's method says (:func:`estimate_probabilities`)."""
        t = np.atleast_1d(np.asarray(t_days, dtype=np.float64))
        return estimate_probabilities([self] * t.size, t_days=t, e_days=e_days)


def estimate_probabilities(
    estimates: Sequence[Estimate], *, t_days: ArrayLike, e_days: float
) -> NDArray[np.float64]:
    """Each stored estimate's probability of change by t + e (DESIGN rule 7, or the posterior's
    reading): the posterior's since the newest copy, the paper's g since τ; 0 for insufficient
    history. Vectorised over many estimates (a crawl list, the Sites table); the SQL twin that
    sorts thousands of sites in the database is ``scheduling.estimates.exposure_expression``."""

    def column(name: str) -> NDArray[np.float64]:
        return np.array(
            [np.nan if getattr(e, name) is None else getattr(e, name) for e in estimates],
            dtype=np.float64,
        )

    posterior_rows = np.array([e.method == Method.POSTERIOR for e in estimates], dtype=bool)
    t = np.broadcast_to(np.asarray(t_days, dtype=np.float64), posterior_rows.shape)
    paper = crawl_probabilities(column("rate"), column("tau_days"), t, e_days)
    bayes = posterior_probabilities(
        column("posterior_shape"), column("posterior_rate"), column("last_copy_days"), t, e_days
    )
    result: NDArray[np.float64] = np.where(posterior_rows, bayes, paper)
    return result


class RatePrior(models.Model):
    """The Gamma prior on λ fitted on the whole collection at one level (empirical Bayes).

    At homepage level it is the prior on a site's rate; at website level, on one page's rate,
    read from its new links per κ (``hacs.website``).

    Refitted by every full recompute of estimates; a site imported alone is estimated under
    the stored prior, so that one site's import does not reread the collection.
    """

    level = models.CharField(max_length=10, choices=Level.choices, unique=True)
    shape = models.FloatField()
    rate = models.FloatField(help_text="per day")
    sites = models.PositiveIntegerField(default=0)
    links_per_update = models.FloatField(
        default=1.0, help_text="κ: new links per update (website level; hacs.website)"
    )
    dispersion = models.FloatField(
        default=1.0,
        help_text="φ: how much more the evidence varies than independent changes would "
        "(changed intervals at homepage level, new links at website level)",
    )
    reset_rate = models.FloatField(
        default=0.0,
        help_text="ρ per day: how often a site's rate starts afresh from the prior "
        "(homepage level; hacs.bayes.fit_reset_rate)",
    )
    fitted_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"{self.level} prior: Gamma({self.shape:.3g}, {self.rate:.3g})"


class CrawlListQuerySet(models.QuerySet["CrawlList"]):
    def daily(self) -> CrawlListQuerySet:
        """The daily lists, one a date: the lists Overview, the feed and the hand-offs mean by
        "today's list"."""
        return self.filter(is_daily=True)

    def daily_for(self, day: date) -> CrawlList | None:
        """``day``'s daily list, or None while the daily job has not built it."""
        return self.daily().filter(date=day).first()

    def newest_daily(self) -> CrawlList | None:
        """The daily list of the latest date that has one."""
        return self.daily().order_by("-date").first()


class CrawlList(models.Model):
    """A ranked list of sites to re-crawl on a date, stored so it can be downloaded again.

    ``source`` records what built it: the daily job, a librarian on the Crawl list page
    (``created_by``) or ``manage.py crawl_list`` in a terminal (``terminal_user``, the login
    name the command ran under). ``is_daily`` marks the one daily list of its date, which the
    daily job builds: "today's list" on Overview, in the feed and for the hand-offs. Every other
    list is an experiment, labelled so. A list built by hand identical to the newest stored one
    with the same date and options is not stored again
    (``scheduling.crawl_lists.crawl_list_store``); the daily job never takes a list built by hand
    as its own.
    """

    class Source(models.TextChoices):
        DAILY_JOB = "daily_job", "the daily job"
        PAGE = "page", "the Crawl list page"
        COMMAND_LINE = "command", "the command line"

    date = models.DateField()
    level = models.CharField(max_length=10, choices=Level.choices, default=Level.HOMEPAGE)
    method = models.CharField(max_length=12, choices=LIST_METHOD_CHOICES, default=DEFAULT_METHOD)
    scorer = models.ForeignKey(
        "LearnedScorer",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="The learned scheduler that ranked the list (learned methods only).",
    )
    theta = models.FloatField("θ", null=True, blank=True)
    budget = models.PositiveIntegerField("budget k", null=True, blank=True)
    history_days = models.PositiveIntegerField()
    e_days = models.FloatField()
    source = models.CharField(max_length=10, choices=Source.choices, default=Source.DAILY_JOB)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    terminal_user = models.CharField(
        max_length=150, blank=True, help_text="The login name crawl_list ran under."
    )
    created_at = models.DateTimeField(auto_now_add=True)
    eligible_sites = models.PositiveIntegerField(default=0)
    round_robin_expected = models.FloatField(
        null=True,
        blank=True,
        help_text="The changes a list of the same size in round-robin order (oldest copy "
        "first) was expected to find, by the posterior; empty for the paper's methods.",
    )
    is_daily = models.BooleanField(
        "daily list", default=False, help_text="The daily job's list of its date (one a date)."
    )
    notice = models.TextField(
        blank=True, help_text="Why a learned list is not in its scheduler's order, if it is not."
    )

    objects = CrawlListQuerySet.as_manager()

    class Meta:
        ordering = ["-date", "-created_at"]
        indexes = [models.Index(fields=["date", "level"])]
        constraints = [
            models.UniqueConstraint(
                fields=["date"], condition=models.Q(is_daily=True), name="one_daily_list_per_date"
            )
        ]

    @property
    def method_short(self) -> str:
        """The method in a word, as the list of stored lists names it ("posterior", "GP4C")."""
        return self.method.upper() if self.method in Learned.values else self.method

    def __str__(self) -> str:
        return f"Crawl list {self.date} ({self.level})"

    @property
    def kind_label(self) -> str:
        """ "Daily list" or "Experiment", as every page labels a list."""
        return "Daily list" if self.is_daily else "Experiment"

    @property
    def built_by(self) -> str:
        """Who built the list, as the Crawl list page says it: "by the daily job", "by ada",
        "from the command line by ada"."""
        if self.source == self.Source.COMMAND_LINE:
            return "from the command line" + (
                f" by {self.terminal_user}" if self.terminal_user else ""
            )
        if self.source == self.Source.PAGE:
            return f"by {self.created_by}" if self.created_by else "on this page"
        return "by the daily job"


class CrawlListEntry(models.Model):
    crawl_list = models.ForeignKey(CrawlList, on_delete=models.CASCADE, related_name="entries")
    rank = models.PositiveIntegerField()
    site = models.ForeignKey("archive.Site", on_delete=models.CASCADE, related_name="+")
    probability = models.FloatField()
    rate = models.FloatField(null=True, blank=True)
    tau = models.DateTimeField(null=True, blank=True)
    observations = models.PositiveIntegerField(default=0)
    # Updates seen in the window; None for lists stored before it was kept. With none, τ is
    # the first observation (DESIGN rule 5), which the page does not call a last update.
    updates = models.PositiveIntegerField(null=True, blank=True)
    span_days = models.FloatField(null=True, blank=True)
    interval_low = models.FloatField(null=True, blank=True)
    interval_high = models.FloatField(null=True, blank=True)
    interval_open = models.BooleanField(default=False)  # as on Estimate
    last_copy = models.DateTimeField(null=True, blank=True)
    prior_share = models.FloatField(null=True, blank=True)  # as on Estimate
    # The learned scheduler's score (learned methods only; higher is crawled first).
    score = models.FloatField(null=True, blank=True)

    @property
    def rests_on_prior(self) -> bool:
        return self.prior_share is not None and self.prior_share > PRIOR_LED

    class Meta:
        ordering = ["crawl_list", "rank"]
        constraints = [
            models.UniqueConstraint(fields=["crawl_list", "rank"], name="entry_unique_rank"),
            models.UniqueConstraint(fields=["crawl_list", "site"], name="entry_unique_site"),
        ]

    def __str__(self) -> str:
        return f"#{self.rank} site {self.site_id} p={self.probability:.3f}"


class StoredRunQuerySet(models.QuerySet["StoredRun"]):
    def done(self) -> models.QuerySet[StoredRun]:
        """The runs whose job finished (``StoredRun.Status.DONE``)."""
        return self.filter(job__status__in=JobRecord.DONE)


class StoredRunManager(models.Manager.from_queryset(StoredRunQuerySet)):  # type: ignore[misc]
    """Runs read with their job, which says where each stands (one query for a page of them)."""

    def get_queryset(self) -> StoredRunQuerySet:
        queryset: StoredRunQuerySet = super().get_queryset().select_related("job")
        return queryset


class StoredRun(models.Model):
    """What an evaluation run and a learning run share: their parameters, who asked, and the
    job that runs them, which holds where they stand, their progress, error and timing
    (``jobs.runner.JobRun`` writes it; the run is the job keyed ``evaluate:<id>`` or
    ``learn:<id>``). A run not yet handed to a job is queued."""

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"

    KEY_PREFIX = "run"

    parameters = models.JSONField(default=dict)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    created_at = models.DateTimeField(auto_now_add=True)
    job = models.ForeignKey(
        "jobs.JobRecord",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="The job running it: its status, progress, error and timing.",
    )

    objects = StoredRunManager()

    class Meta:
        abstract = True
        ordering = ["-created_at"]

    @property
    def job_key(self) -> str:
        """The key of the run's job."""
        return f"{self.KEY_PREFIX}:{self.pk}"

    @property
    def status(self) -> str:
        """Where the run stands, read from its job: queued until a job runs it, done once
        the job finished, failed once it failed or was interrupted."""
        job = self.job
        if job is None or job.status == JobRecord.Status.QUEUED:
            return self.Status.QUEUED
        if job.status == JobRecord.Status.RUNNING:
            return self.Status.RUNNING
        return self.Status.DONE if job.status in JobRecord.DONE else self.Status.FAILED

    def get_status_display(self) -> str:
        return str(self.Status(self.status).label)

    @property
    def progress(self) -> float:
        """0 to 1, the job's."""
        return self.job.fraction if self.job is not None else 0.0

    @property
    def error(self) -> str:
        return self.job.error if self.job is not None else ""

    @property
    def finished_at(self) -> datetime | None:
        return self.job.finished_at if self.job is not None else None

    @property
    def duration_seconds(self) -> float | None:
        """How long the run took (None until it ended)."""
        if self.job is None or self.job.finished_at is None:
            return None
        return self.job.elapsed_seconds


class EvaluationRun(StoredRun):
    """One run of the paper's Evaluations 1 and 2 over a past period."""

    KEY_PREFIX = "evaluate"

    results = models.JSONField(null=True, blank=True)

    class Meta(StoredRun.Meta):
        pass

    def __str__(self) -> str:
        return f"Evaluation {self.pk} ({self.status})"


class LearnedScorer(StoredRun):
    """A scheduler learned on the collection's history over a period: a GP4C score function
    (``hacs.learning.gp4c``) or an LWS regression (``hacs.learning.lws``).

    ``model`` holds what ranks: GP4C's ``expression`` (and its ``formula``), or the LWS model's
    coefficients; ``curve`` the training curve (GP4C: best and mean fitness per generation).
    A crawl list of a learned method uses the newest finished one of its kind and level.
    """

    KEY_PREFIX = "learn"

    kind = models.CharField(max_length=8, choices=Learned.choices)
    level = models.CharField(max_length=10, choices=Level.choices, default=Level.HOMEPAGE)
    start = models.DateField(help_text="first day of the learning period")
    end = models.DateField(help_text="last day of the learning period")
    model = models.JSONField(null=True, blank=True)
    curve = models.JSONField(null=True, blank=True)
    training_fitness = models.FloatField(null=True, blank=True)
    validation_fitness = models.FloatField(null=True, blank=True)

    class Meta(StoredRun.Meta):
        indexes = [models.Index(fields=["kind", "level"])]

    def __str__(self) -> str:
        return (
            f"{self.kind.upper()} at {self.level} level, learned on {day_text(self.start)} to "
            f"{day_text(self.end)}"
        )
