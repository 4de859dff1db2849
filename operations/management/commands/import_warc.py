from archive.pipeline import ImportReport
from operations.management.commands._progress import FileImportCommand


class Command(FileImportCommand):
    help = (
        "Import captures and their pages' links from WARC files (responses and revisits) or "
        "WACZ files (the WARC files inside, read with bounded memory)."
    )
    kind = "warc"

    def summary(self, report: ImportReport, *, fetched: bool) -> list[str]:
        counts = report.captures
        return [
            f"{counts.read} WARC captures read, {counts.added} captures added, "
            f"{report.snapshots} pages parsed, {report.bad_lines} bad records skipped; "
            f"skipped: {counts.skipped_summary()}; {len(counts.sites)} sites."
        ]
