from django.core.management.base import BaseCommand, CommandError, CommandParser

from archive.importers import site_import_from_archive, site_mark
from archive.jobs import archive_client, enqueue_import
from archive.management.commands._progress import progress
from archive.models import Site
from archive.wayback import ArchiveError
from hacs.formats.canon import homepage_key
from scheduling.services import estimates_recompute


class Command(BaseCommand):
    help = "Import the archive history of sites from the configured CDX server and Wayback."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--site", action="append", default=[], metavar="URL", help="only this seed (repeat)"
        )
        parser.add_argument(
            "--failed", action="store_true", help="only sites whose last import failed"
        )
        parser.add_argument("--enqueue", action="store_true", help="hand the work to the workers")

    def handle(self, *args: object, **options: object) -> None:
        sites = Site.objects.order_by("pk")
        if options["site"]:
            keys = []
            for url in options["site"]:  # type: ignore[attr-defined]
                try:
                    keys.append(homepage_key(url))
                except ValueError as error:
                    raise CommandError(f"--site {url}: {error}") from None
            sites = sites.filter(canonical_key__in=keys)
            if sites.count() != len(set(keys)):
                raise CommandError("Some --site URLs are not stored seeds; import them first.")
        if options["failed"]:
            sites = sites.filter(import_status=Site.ImportStatus.FAILED)
        ids = list(sites.values_list("pk", flat=True))
        if options["enqueue"]:
            record = enqueue_import(ids)
            self.stdout.write(f"Import of {len(ids)} sites queued as job {record.pk}.")
            return
        client = archive_client()
        added = fetched = 0
        failed: list[str] = []
        with progress(len(ids), "site", "Importing") as bar:
            for site in sites:
                site_mark(site.pk, Site.ImportStatus.RUNNING)
                try:
                    result = site_import_from_archive(site=site, client=client)
                except ArchiveError as error:
                    site_mark(site.pk, Site.ImportStatus.FAILED, str(error))
                    failed.append(f"{site.seed_url}: {error}")
                else:
                    estimates_recompute(site_ids=[site.pk])
                    site_mark(site.pk, Site.ImportStatus.DONE)
                    added += result.captures.added
                    fetched += result.fetches["fetched"]
                bar.update(1)
        for line in failed:
            self.stderr.write(f"failed: {line}")
        self.stdout.write(
            f"{len(ids)} sites: {len(ids) - len(failed)} imported, {len(failed)} failed; "
            f"{added} captures added, {fetched} mementos fetched "
            f"({client.stats.requests} requests, {client.stats.retries} retries)."
        )
