from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from archive.pipeline import FromWarcFiles, ImportReport
from operations.management.commands._progress import enqueue_file_import, progress
from operations.refresh import sites_refresh


class Command(BaseCommand):
    help = "Import captures and their pages' links from WARC files (responses and revisits)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("files", nargs="+", type=Path)
        parser.add_argument("--enqueue", action="store_true", help="hand the work to a worker")

    def handle(self, *args: object, **options: object) -> None:
        files = options["files"]
        assert isinstance(files, list)
        if options["enqueue"]:
            self.stdout.write(enqueue_file_import("warc", files))
            return
        with progress(len(files), "file", "Importing") as bar:
            report = sites_refresh(
                FromWarcFiles(files, max_body=settings.HACS_MAX_MEMENTO_BYTES),
                progress=lambda *_args, **_kw: bar.update(1),
            )
        self._problems(report)
        counts = report.captures
        self.stdout.write(
            f"{counts.read} WARC captures read, {counts.added} captures added, "
            f"{report.snapshots} pages parsed, {report.bad_lines} bad records skipped; "
            f"skipped: {counts.skipped_summary()}; {len(counts.sites)} sites."
        )
        if report.failed_files:
            failed = ", ".join(Path(name).name for name, _reason in report.failed_files)
            raise CommandError(
                f"{len(report.failed_files)} of {len(files)} file{'s' * (len(files) != 1)} "
                f"could not be read to the end ({failed}); what they held before the damage "
                "was imported."
            )

    def _problems(self, report: ImportReport) -> None:
        """Each skipped record with its file and line or offset, then each file that failed."""
        for problem in report.problems:
            self.stderr.write(f"skipped {problem}")
        for name, reason in report.failed_files:
            self.stderr.write(f"{name}: {reason}")
