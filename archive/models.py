"""What HACS knows about each seed site: the captures archives hold and the links they carry."""

from __future__ import annotations

from django.db import models
from django.db.models import Q


class Tag(models.Model):
    """A librarian's label for a group of seeds (a department, a collection, a project)."""

    name = models.CharField(max_length=100, unique=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class SiteQuerySet(models.QuerySet["Site"]):
    def search(self, text: str) -> SiteQuerySet:
        """Sites whose author, seed URL or canonical key contains ``text`` (case-insensitive)."""
        text = text.strip()
        if not text:
            return self
        return self.filter(
            Q(author__icontains=text)
            | Q(seed_url__icontains=text)
            | Q(canonical_key__icontains=text)
        )


class Site(models.Model):
    """One seed: an author's homepage and the pages under it to depth 2."""

    class ImportStatus(models.TextChoices):
        PENDING = "pending", "Not imported yet"
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Importing"
        DONE = "done", "Imported"
        FAILED = "failed", "Failed"

    seed_url = models.URLField("seed URL", max_length=2000, help_text="The URL as entered.")
    canonical_key = models.CharField(
        max_length=2000,
        unique=True,
        help_text="SURT of the homepage; http/https, www. and index.html variants share it.",
    )
    author = models.CharField(max_length=300, blank=True)
    tags = models.ManyToManyField(Tag, blank=True, related_name="sites")
    import_status = models.CharField(
        max_length=10, choices=ImportStatus.choices, default=ImportStatus.PENDING, db_index=True
    )
    import_error = models.TextField(blank=True)
    import_attempts = models.PositiveIntegerField(default=0)
    imported_at = models.DateTimeField(null=True, blank=True)
    # Contents of copies older than the site's window that its last import from the archive left
    # for the history pass (``archive.archive_import``); 0 once that pass has fetched them.
    older_pending = models.PositiveIntegerField(default=0)
    # A seed that moved (its homepage redirects to another scope) points to the seed added for
    # its new address; the old site keeps its history. ``moved_from`` is the way back.
    moved_to = models.ForeignKey(
        "self",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="moved_from",
        help_text="The seed added for this seed's new address.",
    )
    # A paused seed keeps its history, refreshes and estimates but is on no crawl list (daily or
    # built by hand) until a librarian resumes it: a site on leave, or one being checked.
    paused = models.BooleanField(
        default=False, help_text="Kept and estimated, but left off every crawl list."
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = SiteQuerySet.as_manager()

    class Meta:
        ordering = ["canonical_key"]
        indexes = [models.Index(fields=["author"])]

    def __str__(self) -> str:
        return f"{self.author} <{self.seed_url}>" if self.author else self.seed_url


class LinkSnapshot(models.Model):
    """The canonical link set of one distinct content: fetched and parsed once per (urlkey, digest).

    ``links`` holds the SURT forms sorted and joined by newlines, which is compact and quick to
    turn back into a set.
    """

    class Status(models.TextChoices):
        OK = "ok", "Parsed"
        FAILED = "failed", "Fetch failed"
        TOO_LARGE = "too_large", "Body over the size cap"

    urlkey = models.CharField(max_length=2000)
    digest = models.CharField(max_length=100)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.OK)
    links = models.TextField(blank=True)
    link_count = models.PositiveIntegerField(default=0)
    error = models.TextField(blank=True)
    fetched_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["urlkey", "digest"], name="snapshot_unique_content")
        ]

    def __str__(self) -> str:
        return f"{self.urlkey} {self.digest} ({self.link_count} links)"

    def link_set(self) -> frozenset[str]:
        return frozenset(self.links.split("\n")) if self.links else frozenset()


class Capture(models.Model):
    """One CDX row of a page of a site at depth ≤ 2, kept even when it is not an observation."""

    class Kind(models.TextChoices):
        OBSERVATION = "observation", "Observation (200 HTML)"
        REVISIT = "revisit", "Revisit of an earlier capture"
        REVISIT_ORPHAN = "revisit_orphan", "Revisit without its original"
        REDIRECT = "redirect", "Redirect"
        ERROR = "error", "Error"
        NON_HTML = "non_html", "Not HTML"
        DUPLICATE = "duplicate", "Repeated row"

    site = models.ForeignKey(Site, on_delete=models.CASCADE, related_name="captures")
    url = models.TextField()
    urlkey = models.CharField(max_length=2000)
    page_key = models.CharField(
        max_length=2000, help_text="The page: urlkey with a final index.html-like segment removed."
    )
    timestamp = models.DateTimeField(help_text="UTC")
    depth = models.PositiveSmallIntegerField()
    mimetype = models.CharField(max_length=200, blank=True)
    status = models.PositiveSmallIntegerField(
        null=True, blank=True, help_text="Null for a revisit."
    )
    digest = models.CharField(max_length=100, blank=True)
    length = models.BigIntegerField(null=True, blank=True)
    source = models.CharField(max_length=200, blank=True, help_text="Archive or file it came from.")
    # Null (not blank) by default so that the import's raw INSERT, which does not name it, works.
    location = models.TextField(
        null=True, blank=True, help_text="A redirect's Location, when its source recorded it."
    )
    kind = models.CharField(max_length=16, choices=Kind.choices)
    is_observation = models.BooleanField(default=False)
    snapshot = models.ForeignKey(
        LinkSnapshot, null=True, blank=True, on_delete=models.SET_NULL, related_name="captures"
    )
    # Update data (DESIGN "Hint for speed"): ``page_index`` numbers this page's observations in
    # time order; ``link_floor`` is the smallest, over this observation's links, of the index of
    # the latest earlier observation of the page holding that link (−1 when a link is brand new).
    # The observation is an update in a window whose first observation of the page is j exactly
    # when page_index > j and link_floor < j.
    page_index = models.IntegerField(null=True, blank=True)
    link_floor = models.IntegerField(null=True, blank=True)
    new_links = models.IntegerField(
        null=True, blank=True, help_text="Links new to the page's history."
    )

    class Meta:
        ordering = ["site", "timestamp", "urlkey"]
        constraints = [
            models.UniqueConstraint(
                fields=["site", "urlkey", "timestamp"], name="capture_unique_row"
            )
        ]
        # One full index on purpose: every index slows the import's inserts. Per-site reads use
        # the unique constraint's (site, …) prefix; estimates read observations through this one;
        # snapshots are looked up through LinkSnapshot's own (urlkey, digest) key. The second is
        # partial: it holds only updates over a page's whole history (DESIGN rule 3 with the
        # window at the page's first observation), a few per cent of the rows, so that the feeds
        # find the collection's newest updates without reading every capture (dashboard.feeds).
        # The third holds the homepage observations, so that the Evaluation page finds the
        # collection's first and last day of history in two index reads, not a pass over every
        # capture (``scheduling.learning.learning_history``).
        indexes = [
            models.Index(fields=["site", "is_observation", "depth", "timestamp"]),
            models.Index(
                fields=["-timestamp"],
                condition=Q(page_index__gt=0, link_floor__lt=0),
                name="capture_update_time",
            ),
            models.Index(
                fields=["timestamp"],
                condition=Q(is_observation=True, depth=0, page_index__isnull=False),
                name="capture_homepage_time",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.url} @ {self.timestamp:%Y-%m-%d %H:%M:%S}"


class SiteHealth(models.Model):
    """What a seed's homepage captures say about its health (``hacs.health.capture_health``).

    Written by ``archive.health.sites_health_update`` when an import finishes a site and on
    every full recompute of the estimates. ``problem`` is moved or gone; "not captured lately"
    is read from ``last_good`` against today and "stopped changing" from the estimate, at query
    time, so that neither goes out of date between imports.
    """

    class Problem(models.TextChoices):
        NONE = "", "No problem"
        MOVED = "moved", "Moved"
        GONE = "gone", "Gone"

    site = models.OneToOneField(
        Site, on_delete=models.CASCADE, primary_key=True, related_name="health"
    )
    problem = models.CharField(max_length=5, choices=Problem.choices, blank=True, db_index=True)
    since = models.DateTimeField(
        null=True, blank=True, help_text="First capture of the problem's unbroken stretch."
    )
    count = models.PositiveIntegerField(default=0, help_text="Captures in that stretch.")
    target = models.TextField(blank=True, help_text="Where a moved seed redirects, when known.")
    status = models.PositiveSmallIntegerField(null=True, blank=True)
    last_good = models.DateTimeField(
        null=True, blank=True, help_text="Newest good homepage capture (an observation)."
    )
    captured = models.BooleanField(default=False, help_text="The homepage has any capture.")
    computed_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name_plural = "site health"

    def __str__(self) -> str:
        return f"{self.site_id}: {self.problem or 'ok'}"


class ArchiveCheck(models.Model):
    """When HACS last asked an archive's CDX server about a site and had its answer.

    ``newest_seen`` is the newest capture time that answer held, over all its rows (for a host
    query, other people's pages too: a busy host's newest row is about the time of the check).
    The next refresh asks ``from`` it less the archive's indexing lag (the lag measured on the
    host for a group, ``HACS_CDX_INDEX_LAG_DAYS`` at most: ``hacs.formats.queries.refresh_from``).
    The nightly budget weighs how long a site has waited since ``checked_at``; its first
    deadline after ``first_checked_at`` is spread over the window, and a seed the archive had
    not captured is asked again on a back-off counted from it (``hacs.refresh_budget.deadline``).
    """

    site = models.ForeignKey(Site, on_delete=models.CASCADE, related_name="archive_checks")
    source = models.CharField(max_length=200, help_text="The CDX server, as captures name it.")
    checked_at = models.DateTimeField(help_text="When the query that answered for the site began.")
    newest_seen = models.DateTimeField(
        null=True, blank=True, help_text="The newest capture time in that answer (any row)."
    )
    first_checked_at = models.DateTimeField(
        null=True,
        blank=True,
        help_text="When HACS first asked (the site's first import); empty if before this was kept.",
    )

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["site", "source"], name="archive_check_unique")
        ]

    def __str__(self) -> str:
        return f"{self.site_id} at {self.source}: {self.checked_at:%Y-%m-%d %H:%M}"


class QueryMemory(models.Model):
    """What a refresh learned about one grouped CDX query, for the next refresh's plan.

    ``key`` is the group's (``hacs.formats.queries.CdxQuery.key``, a host key and a path prefix)
    or, for a host, its host key alone. A group whose answer was too big is split next time, and
    one asked wide (from the longest lag) lately may ask from its host's measured lag. A host
    where the archive's group answers missed captures an exact query found is asked one seed at
    a time from then on; ``late_days`` counts the captures its answers brought late, by the days
    of margin they needed (``hacs.index_lag``).
    """

    class Kind(models.TextChoices):
        GROUP = "group", "Grouped query"
        HOST = "host", "Host audited"

    source = models.CharField(max_length=200)
    kind = models.CharField(max_length=5, choices=Kind.choices)
    key = models.CharField(max_length=2000)
    rows = models.PositiveIntegerField(default=0, help_text="Rows of the last answer.")
    pages = models.PositiveIntegerField(default=0, help_text="CDX requests of the last answer.")
    too_big = models.BooleanField(default=False)
    misses = models.PositiveIntegerField(
        default=0, help_text="Captures an exact query found that the group's answer lacked."
    )
    per_seed = models.BooleanField(default=False, help_text="Ask this host's seeds one at a time.")
    blocks = models.PositiveIntegerField(
        null=True, blank=True, help_text="Index blocks (~3,000 lines) the group's range spans."
    )
    sized_at = models.DateTimeField(null=True, blank=True)
    wide_at = models.DateTimeField(
        null=True, blank=True, help_text="When the group was last asked from the longest lag."
    )
    late_days = models.JSONField(
        default=list, blank=True, help_text="Late captures found, by whole days of margin needed."
    )
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["source", "kind", "key"], name="query_memory_unique")
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.key} at {self.source}"
