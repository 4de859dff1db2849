import argparse
import json
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from hacs.progress import Progress
from jobs.bar import terminal_progress
from scheduling.management.commands._options import day, positive
from scheduling.models import Level
from scheduling.replays import DEFAULT_SHARES, replay_collection, truth_load


def shares(text: str) -> tuple[float, ...]:
    try:
        values = tuple(float(part) for part in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a list like 0.02,0.05") from None
    if not values or not all(0 < v <= 1 for v in values):
        raise argparse.ArgumentTypeError(f"{text!r}: each share must lie in (0, 1]")
    return values


class Command(BaseCommand):
    help = (
        "Replay daily crawling over a past period on the collection's own history: each day "
        "each policy crawls k sites; print changes found per crawl, coverage and timeliness."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--start", type=day, required=True, help="first day crawled")
        parser.add_argument("--days", type=positive, default=28)
        parser.add_argument(
            "--budgets",
            type=shares,
            default=DEFAULT_SHARES,
            help="shares of the sites crawled a day (default 0.02,0.05)",
        )
        parser.add_argument("--level", choices=Level.values, default=Level.HOMEPAGE)
        parser.add_argument(
            "--e-days",
            type=float,
            default=settings.HACS_E_DAYS,
            help="the lists' horizon e (default HACS_E_DAYS, as the daily list)",
        )
        parser.add_argument("--truth", type=Path, help="a demo archive's truth.json")
        parser.add_argument("--seed", type=int, default=0, help="for the random policy")
        parser.add_argument("--json", action="store_true", help="print JSON instead of a table")

    def handle(self, *args: object, **options: object) -> None:
        truth = None
        if isinstance(options["truth"], Path):
            try:
                truth = truth_load(options["truth"])
            except (OSError, ValueError) as error:
                raise CommandError(f"--truth: {error}") from None
        # A bar on a terminal only: each policy's days, budget after budget.
        with terminal_progress("Replaying", total=100, unit="%") as report:
            result = replay_collection(
                level=str(options["level"]),
                start=options["start"],  # type: ignore[arg-type]
                days=int(options["days"]),  # type: ignore[call-overload]
                shares=options["budgets"],  # type: ignore[arg-type]
                e_days=float(options["e_days"]),  # type: ignore[arg-type]
                truth=truth,
                seed=int(options["seed"]),  # type: ignore[call-overload]
                progress=lambda fraction: report(Progress(fraction=fraction)),
            )
        if options["json"]:
            self.stdout.write(json.dumps(result, indent=1))
            return
        self.stdout.write(
            f"{result['sites']} sites, {result['level']} level, {result['days']} days from "
            f"{result['start']}; changes from {result['changes_from']}."
        )
        for block in result["budgets"]:
            self.stdout.write(
                f"\nBudget {block['share']:.0%} a day ({block['budget']} sites)\n"
                f"{'policy':44} {'found/crawls':>13} {'utilisation':>11} {'coverage':>8} "
                f"{'delay (d)':>9} {'max days':>8}"
            )
            for row in block["rows"]:
                delay = row["mean_delay_days"]
                self.stdout.write(
                    f"{row['label']:44} {row['found']:>6}/{row['crawls']:<6} "
                    f"{row['utilisation']:>11.3f} {row['coverage']:>8.3f} "
                    f"{'' if delay is None else f'{delay:.1f}':>9} {row['most_days_listed']:>8}"
                )
