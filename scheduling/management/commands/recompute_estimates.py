from datetime import date

from django.core.management.base import BaseCommand, CommandParser

from scheduling.estimates import RecomputeOptions, estimates_recompute
from scheduling.jobs import enqueue_recompute
from scheduling.management.commands._options import day
from scheduling.models import Level, Method


class Command(BaseCommand):
    help = "Compute and store every site's update-rate estimate over a history window."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--level", choices=Level.values, help="default: both")
        parser.add_argument("--method", choices=Method.values, help="default: both")
        parser.add_argument("--start", type=day, help="first day of the window (default: all)")
        parser.add_argument("--end", type=day, help="last day of the window (default: all)")
        parser.add_argument("--enqueue", action="store_true", help="hand the work to a worker")

    def handle(self, *args: object, **options: object) -> None:
        start, end = options["start"], options["end"]
        chosen = RecomputeOptions(
            levels=(str(options["level"]),) if options["level"] else tuple(Level.values),
            methods=(str(options["method"]),) if options["method"] else tuple(Method.values),
            start=start if isinstance(start, date) else None,
            end=end if isinstance(end, date) else None,
        )
        if options["enqueue"]:
            record = enqueue_recompute(chosen)
            self.stdout.write(f"Recompute queued as job {record.pk}.")
            return
        written = estimates_recompute(**chosen.as_kwargs())
        self.stdout.write(f"{written} estimates stored.")
