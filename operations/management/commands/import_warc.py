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
        "Import captures and their pages' links from WARC files (responses and revisits) or "
        "WACZ files (the WARC files inside, read with bounded memory)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("files", nargs="+", type=Path)
        parser.add_argument("--enqueue", action="store_true", help="hand the work to a worker")

    def handle(self, *args: object, **options: object) -> None:
        files = options["files"]
        assert isinstance(files, list)
        if options["enqueue"]:
            self.stdout.write(enqueue_file_import("warc", files))
            return
        report = file_import("warc", files)
        file_problems_write(self.stderr, report)
        counts = report.captures
        self.stdout.write(
            f"{counts.read} WARC captures read, {counts.added} captures added, "
            f"{report.snapshots} pages parsed, {report.bad_lines} bad records skipped; "
            f"skipped: {counts.skipped_summary()}; {len(counts.sites)} sites."
        )
        file_failures_raise(report, files)
