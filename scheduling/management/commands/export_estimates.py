import csv

from django.core.management.base import BaseCommand, CommandParser

from archive.models import Site
from scheduling.management.commands._options import day, day_end, day_start
from scheduling.models import Estimate, Level, Method
from scheduling.services import estimates_for_window

COLUMNS = [
    "url", "author", "level", "method", "rate_per_day", "interval_days", "tau", "observations",
    "updates",
]  # fmt: skip


def _cell(value: object) -> str:
    text = "" if value is None else str(value)
    # A spreadsheet would run a cell starting with one of these as a formula.
    return "'" + text if text[:1] in ("=", "+", "-", "@") else text


class Command(BaseCommand):
    help = (
        "Print every site's estimate as CSV. With --start/--end the estimates are computed over "
        "that window; without, the stored ones are printed."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--level", choices=Level.values, required=True)
        parser.add_argument("--method", choices=Method.values, required=True)
        parser.add_argument("--start", type=day)
        parser.add_argument("--end", type=day)

    def handle(self, *args: object, **options: object) -> None:
        level, method = str(options["level"]), str(options["method"])
        sites = Site.objects.order_by("canonical_key").only("pk", "seed_url", "author")
        if options["start"] or options["end"]:
            found = estimates_for_window(
                level=level, method=method,
                start=day_start(options["start"]),  # type: ignore[arg-type]
                end=day_end(options["end"]),  # type: ignore[arg-type]
            )  # fmt: skip
        else:
            found = {e.site_id: e for e in Estimate.objects.filter(level=level, method=method)}
        writer = csv.writer(self.stdout, lineterminator="\n")
        writer.writerow(COLUMNS)
        for site in sites:
            estimate = found.get(site.pk)
            rate = estimate.rate if estimate else None
            interval = estimate.interval_days if estimate else None
            writer.writerow(
                [
                    _cell(site.seed_url), _cell(site.author), level, method,
                    "" if rate is None else f"{rate:.6g}",
                    "" if interval is None else f"{interval:.2f}",
                    estimate.tau.isoformat() if estimate and estimate.tau else "",
                    estimate.observations if estimate else 0,
                    estimate.updates if estimate else 0,
                ]
            )  # fmt: skip
