from django.core.management.base import CommandParser

from archive.pipeline import ImportReport
from operations.management.commands._progress import FileImportCommand


class Command(FileImportCommand):
    help = (
        "Import captures from CDX files (Internet Archive text/JSON, pywb JSON, CDXJ), then fetch "
        "the pages' links from the configured Wayback server and compute updates."
    )
    kind = "cdx"

    def add_arguments(self, parser: CommandParser) -> None:
        super().add_arguments(parser)
        parser.add_argument(
            "--no-fetch", action="store_true", help="store captures only; fetch mementos later"
        )

    def summary(self, report: ImportReport, *, fetched: bool) -> list[str]:
        counts = report.captures
        lines = [
            f"{counts.read} CDX rows read, {counts.added} captures added, {report.bad_lines} bad "
            f"lines skipped; skipped rows: {counts.skipped_summary()}; {len(counts.sites)} sites "
            "touched."
        ]
        if fetched and counts.sites and not report.stopped:
            lines.append(
                f"{report.fetches['fetched']} mementos fetched, {report.fetches['fetch failed']} "
                "failed (retried next time)."
            )
        return lines
