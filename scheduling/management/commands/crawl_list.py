from dataclasses import replace
from datetime import date

from django.core.management.base import BaseCommand, CommandError, CommandParser

from hacs_site.clock import today
from scheduling.crawl_lists import CrawlListOptions, crawl_list_build, crawl_list_csv
from scheduling.learning import NoLearnedScorer
from scheduling.management.commands._options import day, positive, probability
from scheduling.models import DEFAULT_METHOD, LIST_METHOD_CHOICES, Level


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
        parser.add_argument(
            "--method", choices=[value for value, _ in LIST_METHOD_CHOICES], default=DEFAULT_METHOD,
            help="an estimation method, or a learned scheduler (gp4c, lws; see learn_scorer)",
        )  # fmt: skip
        parser.add_argument("--history-days", type=positive, default=None)
        parser.add_argument("--e-days", type=float, default=None)

    def handle(self, *args: object, **options: object) -> None:
        chosen = options["date"]
        configured = CrawlListOptions.from_settings()
        history_days, e_days = options["history_days"], options["e_days"]
        theta, budget = options["theta"], options["budget"]
        wanted = replace(
            configured,
            level=str(options["level"]),
            method=str(options["method"]),
            theta=float(theta) if isinstance(theta, float) else None,
            budget=budget if isinstance(budget, int) else None,
            history_days=history_days if isinstance(history_days, int) else configured.history_days,
            e_days=e_days if isinstance(e_days, float) else configured.e_days,
        )
        try:
            crawl_list = crawl_list_build(
                day=chosen if isinstance(chosen, date) else today(), options=wanted
            )
        except NoLearnedScorer as error:
            raise CommandError(str(error)) from None
        for chunk in crawl_list_csv(crawl_list):
            self.stdout.write(chunk, ending="")
