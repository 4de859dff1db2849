from datetime import date

from django.core.management.base import BaseCommand, CommandError, CommandParser

from hacs_site.cli import day
from hacs_site.clock import today
from handoff.delivery import HandOffFailed
from handoff.models import HandOff, HandOffRun
from handoff.services import (
    hand_off_check,
    hand_off_deliver,
    hand_off_list_for_day,
    hand_off_run,
    hand_off_urls,
)
from scheduling.models import CrawlList


class Command(BaseCommand):
    help = (
        "Hand a stored crawl list to the crawlers: every enabled hand-off, or the one named. "
        "The list is the date's daily list (the daily job's), or the one given with --list "
        "(an experiment built on the Crawl list page or with crawl_list)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--date", type=day, default=None, help="default: today")
        parser.add_argument("--name", help="the hand-off to run (also when disabled)")
        parser.add_argument("--list", type=int, dest="list_id", help="a stored list's id")
        parser.add_argument(
            "--dry-run", action="store_true", help="say what would be sent; send nothing"
        )

    def handle(self, *args: object, **options: object) -> None:
        name, list_id = options["name"], options["list_id"]
        chosen = options["date"] if isinstance(options["date"], date) else today()
        if name:
            hand_offs = list(HandOff.objects.filter(name=name).select_related("tag"))
            if not hand_offs:
                known = ", ".join(HandOff.objects.values_list("name", flat=True)) or "none yet"
                raise CommandError(f'No hand-off is named "{name}" (known: {known}).')
        else:
            hand_offs = list(HandOff.objects.filter(enabled=True).select_related("tag"))
            if not hand_offs:
                raise CommandError("No hand-off is enabled; add one in Admin → Hand-offs.")
        given = None
        if list_id is not None:
            given = CrawlList.objects.filter(pk=int(str(list_id))).first()
            if given is None:
                raise CommandError(f"No crawl list has id {list_id}.")
        failed = 0
        for hand_off in hand_offs:
            crawl_list = given or hand_off_list_for_day(hand_off=hand_off, day=chosen)
            if crawl_list is None:
                self.stderr.write(
                    f'Hand-off "{hand_off.name}": no {hand_off.level}-level daily list is stored '
                    f"for {chosen} (the daily job builds one each morning); to hand off a list "
                    "built by hand, give its id with --list."
                )
                failed += 1
                continue
            if options["dry_run"]:
                failed += not self._preview(hand_off, crawl_list)
                continue
            run = hand_off_run(hand_off=hand_off, crawl_list=crawl_list)
            if run.status == HandOffRun.Status.FAILED:
                self.stderr.write(run.message)
                failed += 1
            else:
                self.stdout.write(run.message)
        if failed:
            raise CommandError(f"{failed} of {len(hand_offs)} hand-offs did not go through.")

    def _preview(self, hand_off: HandOff, crawl_list: CrawlList) -> bool:
        problem = hand_off_check(hand_off=hand_off, crawl_list=crawl_list)
        if problem:
            self.stderr.write(problem)
            return False
        urls = hand_off_urls(hand_off=hand_off, crawl_list=crawl_list)
        try:
            delivery = hand_off_deliver(
                hand_off=hand_off, crawl_list=crawl_list, urls=urls, dry_run=True
            )
        except HandOffFailed as failure:
            self.stderr.write(failure.message)
            return False
        self.stdout.write(f"{delivery.message} (list {crawl_list.pk}, {crawl_list.date})")
        for url in urls[:5]:
            self.stdout.write(f"  {url}")
        if len(urls) > 5:
            self.stdout.write(f"  … and {len(urls) - 5} more")
        return True
