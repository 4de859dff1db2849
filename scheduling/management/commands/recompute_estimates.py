from django.core.management.base import BaseCommand, CommandParser

from dashboard.models import JobRecord
from dashboard.services import job_enqueue
from scheduling.management.commands._options import day, day_end, day_start
from scheduling.models import Level, Method
from scheduling.services import estimates_recompute


class Command(BaseCommand):
    help = "Compute and store every site's update-rate estimate over a history window."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--level", choices=Level.values, help="default: both")
        parser.add_argument("--method", choices=Method.values, help="default: both")
        parser.add_argument("--start", type=day, help="first day of the window (default: all)")
        parser.add_argument("--end", type=day, help="last day of the window (default: all)")
        parser.add_argument("--enqueue", action="store_true", help="hand the work to a worker")

    def handle(self, *args: object, **options: object) -> None:
        if options["enqueue"]:
            from archive.jobs import recompute_all_estimates

            record = job_enqueue(
                kind=JobRecord.Kind.ESTIMATION, func=recompute_all_estimates, label="all sites"
            )
            self.stdout.write(f"Recompute queued as job {record.pk}.")
            return
        written = estimates_recompute(
            levels=[options["level"]] if options["level"] else Level.values,
            methods=[options["method"]] if options["method"] else Method.values,
            start=day_start(options["start"]),  # type: ignore[arg-type]
            end=day_end(options["end"]),  # type: ignore[arg-type]
        )
        self.stdout.write(f"{written} estimates stored.")
