from pathlib import Path

from django.core.management.base import BaseCommand, CommandError, CommandParser

from archive.importers import cdx_file_import, snapshots_fetch, updates_compute
from archive.jobs import archive_client
from archive.management.commands._progress import enqueue_file_import, progress
from archive.models import Site
from scheduling.services import estimates_recompute


class Command(BaseCommand):
    help = (
        "Import captures from CDX files (Internet Archive text/JSON, pywb JSON, CDXJ), then fetch "
        "the pages' links from the configured Wayback server and compute updates."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("files", nargs="+", type=Path)
        parser.add_argument(
            "--no-fetch", action="store_true", help="store captures only; fetch mementos later"
        )
        parser.add_argument("--enqueue", action="store_true", help="hand the work to a worker")

    def handle(self, *args: object, **options: object) -> None:
        files = options["files"]
        assert isinstance(files, list)
        if options["enqueue"]:
            self.stdout.write(enqueue_file_import("cdx", files))
            return
        report = cdx_file_import(paths=files)
        for name, reason in report.failed_files:
            self.stderr.write(f"{name}: not imported: {reason}")
        for problem in report.problems:
            self.stderr.write(f"skipped {problem}")
        counts = report.captures
        skipped = counts.skipped_summary()
        self.stdout.write(
            f"{counts.read} CDX rows read, {counts.added} captures added, {report.bad_lines} bad "
            f"lines skipped; skipped rows: {skipped}; {len(counts.sites)} sites touched."
        )
        if report.failed_files and not counts.read:
            raise CommandError("No file could be imported.")
        if options["no_fetch"] or not counts.sites:
            return
        client = archive_client()
        sites = sorted(counts.sites)
        fetched = failed = 0
        with progress(len(sites), "site", "Fetching links") as bar:
            for site_id in sites:
                result = snapshots_fetch(site_ids=[site_id], fetch=client.fetch_memento)
                fetched += result["fetched"]
                failed += result["fetch failed"]
                updates_compute(site_ids=[site_id])
                Site.objects.filter(pk=site_id).update(import_status=Site.ImportStatus.DONE)
                bar.update(1)
        estimates_recompute(site_ids=sites)
        self.stdout.write(f"{fetched} mementos fetched, {failed} failed (retried next time).")
