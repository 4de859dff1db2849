import argparse
from datetime import date

from django.conf import settings
from django.core.management.base import BaseCommand, CommandParser

from scheduling.crawl_lists import crawl_list_build, crawl_list_csv
from scheduling.management.commands._options import day
from scheduling.models import Level, Method


def probability(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number between 0 and 1") from None
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not between 0 and 1")
    return value


def positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} must be at least 1")
    return value


class Command(BaseCommand):
    help = (
        "Rank the sites for a date and print the crawl list as CSV (rank, url, author, "
        "probability, rate_per_day, interval_days, tau); the list is also stored for the "
        "dashboard."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--date", type=day, default=None, help="default: today")
        parser.add_argument("--theta", type=probability, help="keep sites with p ≥ θ")
        parser.add_argument("--budget", type=positive, help="keep the top K sites")
        parser.add_argument("--level", choices=Level.values, default=Level.HOMEPAGE)
        parser.add_argument("--method", choices=Method.values, default=Method.OBSERVED)
        parser.add_argument("--history-days", type=positive, default=None)
        parser.add_argument("--e-days", type=float, default=None)

    def handle(self, *args: object, **options: object) -> None:
        chosen = options["date"]
        crawl_list = crawl_list_build(
            day=chosen if isinstance(chosen, date) else date.today(),
            level=str(options["level"]),
            method=str(options["method"]),
            theta=options["theta"],  # type: ignore[arg-type]
            budget=options["budget"],  # type: ignore[arg-type]
            history_days=options["history_days"] or settings.HACS_HISTORY_DAYS,  # type: ignore[arg-type]
            e_days=options["e_days"] if options["e_days"] is not None else settings.HACS_E_DAYS,  # type: ignore[arg-type]
        )
        for chunk in crawl_list_csv(crawl_list):
            self.stdout.write(chunk, ending="")
