import csv

from django.core.management.base import BaseCommand, CommandParser

from archive.models import Site
from hacs.clock import day_end, day_start
from scheduling.cells import days_cell, interval_cell, neutralise, rate_cell, tau_cell
from scheduling.estimates import estimates_for_window
from scheduling.management.commands._options import day
from scheduling.models import Estimate, Level, Method

# The design's nine columns, then the evidence behind each estimate: the days the observations
# span, the 90 % credible interval of the mean interval (posterior), the newest copy.
COLUMNS = [
    "url", "author", "level", "method", "rate_per_day", "interval_days", "tau", "observations",
    "updates", "span_days", "interval_low_days", "interval_high_days", "last_copy",
]  # fmt: skip


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
            writer.writerow(
                [
                    neutralise(site.seed_url), neutralise(site.author), level, method,
                    rate_cell(rate), interval_cell(rate), tau_cell(estimate and estimate.tau),
                    estimate.observations if estimate else 0,
                    estimate.updates if estimate else 0,
                    days_cell(estimate and estimate.span_days),
                    days_cell(estimate and estimate.interval_low),
                    days_cell(estimate and estimate.interval_high),
                    tau_cell(estimate and estimate.last_copy),
                ]
            )  # fmt: skip
