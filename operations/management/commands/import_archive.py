from django.core.management.base import BaseCommand, CommandError, CommandParser

from archive.models import Site
from archive.pipeline import FromArchive
from hacs.formats.canon import homepage_key
from operations.jobs import enqueue_import
from operations.management.commands._progress import progress
from operations.refresh import archive_client, sites_refresh


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
        urls = options["site"]
        assert isinstance(urls, list)
        if urls:
            keys = []
            for url in urls:
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
        failed: list[str] = []
        with progress(len(ids), "site", "Importing") as bar:

            def report(item: str, failure: str = "", counts: dict[str, int] | None = None) -> None:
                if failure:
                    failed.append(f"{item}: {failure}")
                bar.update(1)

            result = sites_refresh(FromArchive(ids), client=client, progress=report)
        for line in failed:
            self.stderr.write(f"failed: {line}")
        self.stdout.write(
            f"{len(ids)} sites: {len(ids) - len(failed)} imported, {len(failed)} failed; "
            f"{result.captures.added} captures added, {result.fetches['fetched']} mementos "
            f"fetched ({client.stats.requests} requests, {client.stats.retries} retries)."
        )
