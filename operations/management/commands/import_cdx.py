from pathlib import Path

from django.core.management.base import BaseCommand, CommandParser

from operations.management.commands._progress import (
    enqueue_file_import,
    file_failures_raise,
    file_import,
    file_problems_write,
)


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
        fetch = not options["no_fetch"]
        report = file_import("cdx", files, fetch=fetch)
        file_problems_write(self.stderr, report)
        counts = report.captures
        self.stdout.write(
            f"{counts.read} CDX rows read, {counts.added} captures added, {report.bad_lines} bad "
            f"lines skipped; skipped rows: {counts.skipped_summary()}; {len(counts.sites)} sites "
            "touched."
        )
        if fetch and counts.sites and not report.stopped:
            self.stdout.write(
                f"{report.fetches['fetched']} mementos fetched, {report.fetches['fetch failed']} "
                "failed (retried next time)."
            )
        file_failures_raise(report, files)
