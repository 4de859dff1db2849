import getpass

from django.core.management.base import BaseCommand, CommandError, CommandParser

from scheduling.cells import due_text
from scheduling.crawl_lists import crawl_list_csv, crawl_list_store, crawl_list_urls
from scheduling.learning import NoLearnedScorer
from scheduling.management.commands._options import (
    chosen_day,
    crawl_list_arguments,
    crawl_list_options,
    plain,
)
from scheduling.models import CrawlList


class Command(BaseCommand):
    help = (
        "Rank the sites for a date and print the crawl list as CSV (rank, url, author, "
        "probability, rate_per_day, interval_days, tau, then the evidence) or as a URL list, "
        "one seed a line; the list is stored for the dashboard unless an identical one is. "
        "Without options it builds what the daily job builds."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        crawl_list_arguments(parser)
        parser.add_argument(
            "--format",
            choices=["csv", "urls"],
            default="csv",
            help="csv (default) or urls: the seed URLs alone, one a line, in rank order",
        )
        parser.add_argument(
            "--excel",
            action="store_true",
            help="begin the CSV with a UTF-8 byte order mark, so that Excel reads names right",
        )

    def handle(self, *args: object, **options: object) -> None:
        if options["excel"] and options["format"] != "csv":
            raise CommandError("--excel applies to --format csv only.")
        wanted = crawl_list_options(options)
        day = chosen_day(options)
        try:
            stored = crawl_list_store(
                day=day,
                options=wanted,
                source=CrawlList.Source.COMMAND_LINE,
                terminal_user=_login(),
            )
        except NoLearnedScorer as error:
            raise CommandError(str(error)) from None
        if options["format"] == "urls":
            chunks = crawl_list_urls(stored.crawl_list)
        else:
            chunks = crawl_list_csv(stored.crawl_list, excel=bool(options["excel"]))
        for chunk in chunks:
            self.stdout.write(chunk, ending="")
        # The list goes to stdout for a pipe or a file; the sentence about it to the terminal.
        self.stderr.write(
            f"{stored.summary()} P(change) {due_text(day, wanted.e_days)}; "
            f"list {stored.crawl_list.pk} on the Crawl list page.",
            style_func=plain,
        )


def _login() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no login name (a container without a passwd entry)
        return ""
