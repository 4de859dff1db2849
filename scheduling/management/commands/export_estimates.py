import csv

from django.core.management.base import BaseCommand, CommandError, CommandParser

from archive.models import Site
from hacs.clock import day_end, day_start
from scheduling import cells
from scheduling.crawl_lists import crawl_list_window
from scheduling.estimates import estimates_for_window
from scheduling.management.commands._options import chosen_day, day, window_arguments
from scheduling.models import Estimate, Method

# The design's nine columns, then the evidence behind each estimate: the days the observations
# span, the 90 % credible interval of the mean interval (posterior), the newest copy.
COLUMNS = [
    "url",
    "author",
    "level",
    "method",
    "rate_per_day",
    "interval_days",
    "tau",
    "observations",
    "updates",
    "span_days",
    "interval_low_days",
    "interval_high_days",
    "last_copy",
]


class Command(BaseCommand):
    help = (
        "Print every site's estimate as CSV. By default they are computed as crawl_list "
        "computes them: over the history window (--history-days) before the end of --date "
        "(today), at the homepage level by the default method, so that the two agree. "
        "--start/--end give another window; --stored prints the stored estimates the Sites "
        "table shows."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        window_arguments(parser, methods=Method.values)
        parser.add_argument("--start", type=day, help="first day of another window")
        parser.add_argument("--end", type=day, help="last day of another window")
        parser.add_argument(
            "--stored", action="store_true", help="the stored estimates, as the pages show them"
        )

    def handle(self, *args: object, **options: object) -> None:
        level, method = str(options["level"]), str(options["method"])
        explicit = options["start"] or options["end"]
        if options["stored"] and (explicit or options["date"]):
            raise CommandError("--stored prints the stored estimates; leave out the dates.")
        sites = Site.objects.order_by("canonical_key").only("pk", "seed_url", "author")
        if options["stored"]:
            found = {e.site_id: e for e in Estimate.objects.filter(level=level, method=method)}
        else:
            if explicit:
                start = day_start(options["start"])  # type: ignore[arg-type]
                end = day_end(options["end"])  # type: ignore[arg-type]
            else:
                start, end = crawl_list_window(
                    day=chosen_day(options),
                    history_days=int(options["history_days"]),  # type: ignore[call-overload]
                )
            found = estimates_for_window(level=level, method=method, start=start, end=end)
        writer = csv.writer(self.stdout, lineterminator="\n")
        writer.writerow(COLUMNS)
        for site in sites:
            estimate = found.get(site.pk)
            writer.writerow(
                [
                    cells.neutralise(site.seed_url),
                    cells.neutralise(site.author),
                    level,
                    method,
                    *(_cells(estimate) if estimate else _cells_without()),
                ]
            )


def _cells(estimate: Estimate) -> list[object]:
    """The columns after ``method`` for a site with an estimate."""
    return [
        cells.rate_cell(estimate.rate),
        cells.interval_cell(estimate.rate),
        cells.last_update_cell(estimate.tau, estimate.updates),
        estimate.observations,
        estimate.updates,
        cells.days_cell(estimate.span_days),
        cells.days_cell(estimate.interval_low),
        cells.days_cell(estimate.interval_high),
        cells.tau_cell(estimate.last_copy),
    ]


def _cells_without() -> list[object]:
    """The same columns for a site without one: no rate, no copies."""
    return [
        cells.rate_cell(None),
        cells.interval_cell(None),
        cells.last_update_cell(None, None),
        0,
        0,
        cells.days_cell(None),
        cells.days_cell(None),
        cells.days_cell(None),
        cells.tau_cell(None),
    ]
