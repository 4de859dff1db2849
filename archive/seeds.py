"""Adding a librarian's seed list to the collection (the pure reader is ``hacs.formats.seeds``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from django.db import transaction

from archive.models import Site, Tag
from hacs.formats.seeds import MAX_TAG_LENGTH, SeedList, parse_seed_list

BATCH = 2000


@dataclass
class SeedImportReport:
    parsed: SeedList
    added: list[Site] = field(default_factory=list)
    already_stored: list[tuple[int, str, int]] = field(default_factory=list)  # line, url, site id
    # Stored sites that gain tags (the list's own or the upload's), with the tags they gain.
    tags_added: dict[int, list[str]] = field(default_factory=dict)  # site id → tag names

    @property
    def rejected(self) -> int:
        return len(self.parsed.rejected)

    def summary(self) -> str:
        tagged = len(self.tags_added)
        gained = f" ({tagged} of them gain tags)" if tagged else ""
        return (
            f"{len(self.added)} added, {len(self.already_stored)} already stored{gained}, "
            f"{len(self.parsed.merged)} merged duplicate lines, {self.rejected} rejected"
        )


def seeds_import(
    *,
    data: bytes | str,
    max_bytes: int = 5 * 1024 * 1024,
    max_lines: int = 50_000,
    user_directories_only: bool = False,
    extra_tags: Sequence[str] = (),
    dry_run: bool = False,
) -> SeedImportReport:
    """Add the sites of a seed list. A site already stored keeps its URL, author and history,
    and gains the tags its line and ``extra_tags`` give it (``tags_added`` says which, on a
    ``dry_run`` too).

    Raises ``hacs.formats.seeds.SeedFileError`` when the file as a whole cannot be read; nothing is
    written then. A line whose tidied URL or canonical key would not fit its column is rejected
    with its reason (the sizes are read from ``Site``), so one long line never fails the rest.
    """
    parsed = parse_seed_list(
        data,
        max_bytes=max_bytes,
        max_lines=max_lines,
        user_directories_only=user_directories_only,
        max_url_length=_max_length("seed_url"),
        max_key_length=_max_length("canonical_key"),
    )
    # As tags in the file are: a tag is at most as long as the column holding it.
    extra_tags = [tag.strip()[:MAX_TAG_LENGTH] for tag in extra_tags if tag.strip()]
    report = SeedImportReport(parsed=parsed)
    existing = _site_ids_by_key([row.key for row in parsed.rows])
    new_rows = [row for row in parsed.rows if row.key not in existing]
    report.already_stored = [
        (r.line, r.url, existing[r.key]) for r in parsed.rows if r.key in existing
    ]
    report.tags_added = _tags_gained(
        [(existing[r.key], (*r.tags, *extra_tags)) for r in parsed.rows if r.key in existing]
    )
    if dry_run:
        report.added = [
            Site(seed_url=r.url, canonical_key=r.key, author=r.author) for r in new_rows
        ]
        return report
    with transaction.atomic():
        Site.objects.bulk_create(
            [Site(seed_url=r.url, canonical_key=r.key, author=r.author) for r in new_rows],
            batch_size=BATCH,
            ignore_conflicts=True,
        )
        stored = _site_ids_by_key([r.key for r in new_rows])
        ids = {**existing, **stored}
        tag_names = {t for r in parsed.rows for t in r.tags} | set(extra_tags)
        Tag.objects.bulk_create([Tag(name=n) for n in tag_names], ignore_conflicts=True)
        tag_ids = dict(Tag.objects.filter(name__in=tag_names).values_list("name", "pk"))
        through = Site.tags.through
        links = [
            through(site_id=ids[r.key], tag_id=tag_ids[name])
            for r in parsed.rows
            for name in (*r.tags, *extra_tags)
        ]
        through.objects.bulk_create(links, ignore_conflicts=True, batch_size=BATCH)
    report.added = list(Site.objects.filter(pk__in=list(stored.values())).order_by("pk"))
    return report


def _tags_gained(wanted: Sequence[tuple[int, Sequence[str]]]) -> dict[int, list[str]]:
    """The tags each stored site would gain: those asked for that it does not carry yet."""
    asked = {site_id: set(tags) for site_id, tags in wanted if tags}
    held: dict[int, set[str]] = {}
    ids = list(asked)
    through = Site.tags.through
    for start in range(0, len(ids), 900):
        rows = through.objects.filter(site_id__in=ids[start : start + 900])
        for site_id, name in rows.values_list("site_id", "tag__name"):
            held.setdefault(site_id, set()).add(name)
    gained = {site_id: sorted(tags - held.get(site_id, set())) for site_id, tags in asked.items()}
    return {site_id: tags for site_id, tags in gained.items() if tags}


def _max_length(name: str) -> int:
    size = getattr(Site._meta.get_field(name), "max_length", None)
    assert size is not None, f"Site.{name} has no max_length"
    return size


def _site_ids_by_key(keys: Sequence[str]) -> dict[str, int]:
    found: dict[str, int] = {}
    for start in range(0, len(keys), 900):  # SQLite allows 999 parameters per query
        chunk = keys[start : start + 900]
        found.update(
            Site.objects.filter(canonical_key__in=chunk).values_list("canonical_key", "pk")
        )
    return found


def site_pause(*, site: Site, paused: bool) -> None:
    """Leave a seed off every crawl list (``paused``) or put it back; its history, refreshes and
    estimates go on either way."""
    Site.objects.filter(pk=site.pk).update(paused=paused)
    site.paused = paused


def site_tags_set(*, site: Site, names: Sequence[str]) -> list[str]:
    """Give a seed exactly these tags (made when new); returns them sorted. Tags no seed carries
    any more stay, for the upload form and the filters. ``ValueError`` names a tag too long."""
    wanted = list(dict.fromkeys(n.strip() for n in names if n.strip()))
    for name in wanted:
        if len(name) > MAX_TAG_LENGTH:
            raise ValueError(f"The tag “{name[:40]}…” is longer than {MAX_TAG_LENGTH} characters.")
    with transaction.atomic():
        Tag.objects.bulk_create([Tag(name=n) for n in wanted], ignore_conflicts=True)
        site.tags.set(Tag.objects.filter(name__in=wanted))
    return sorted(wanted)


def site_remove(*, site: Site) -> int:
    """Delete a seed with its captures and estimates (and its lines on stored crawl lists);
    returns how many captures went. Link contents other seeds share stay."""
    captures = site.captures.count()
    site.delete()
    return captures
