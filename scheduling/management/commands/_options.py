"""Options shared by the scheduling commands, with messages naming the bad option.

``crawl_list`` and ``export_estimates`` take their defaults from ``CrawlListOptions
.from_settings()``, as the Crawl list page's form and the daily job do, so that the three
build the same list and read the same estimates unless told otherwise."""

import argparse
from datetime import date
from typing import Any

from django.core.management.base import CommandError, CommandParser

from hacs_site.cli import day
from hacs_site.clock import today
from scheduling.crawl_lists import MAX_E_DAYS, MAX_HISTORY_DAYS, CrawlListOptions
from scheduling.models import LIST_METHOD_CHOICES, Level

# --theta left out: the configured θ, unless a --budget is given (``crawl_list_options``).
NOT_GIVEN: Any = object()


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


def plain(text: str) -> str:
    """The style of a report written to stderr beside a command's output (the list, the JSON):
    no colour, since Django colours stderr as an error."""
    return text


def history(text: str) -> int:
    value = positive(text)
    if value > MAX_HISTORY_DAYS:
        raise argparse.ArgumentTypeError(f"{text!r} is more than {MAX_HISTORY_DAYS} days")
    return value


def threshold(text: str) -> float | None:
    """θ, or ``none`` for no threshold (the form's empty field)."""
    return None if text.strip().lower() == "none" else probability(text)


def horizon(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of days") from None
    if not 0 <= value <= MAX_E_DAYS:
        raise argparse.ArgumentTypeError(f"{text!r} is not between 0 and {MAX_E_DAYS} days")
    return value


def window_arguments(parser: CommandParser, *, methods: list[str]) -> None:
    """--date, --level, --method and --history-days, with the defaults of the Crawl list page's
    form and the daily job (``CrawlListOptions.from_settings``)."""
    configured = CrawlListOptions.from_settings()
    parser.add_argument("--date", type=day, default=None, help="default: today")
    parser.add_argument(
        "--level",
        choices=Level.values,
        default=configured.level,
        help=f"default: {configured.level}",
    )
    parser.add_argument(
        "--method", choices=methods, default=configured.method, help=f"default: {configured.method}"
    )
    parser.add_argument(
        "--history-days",
        type=history,
        default=configured.history_days,
        metavar="N",
        help=f"the history window w in days (default HACS_HISTORY_DAYS, {configured.history_days})",
    )


def crawl_list_arguments(parser: CommandParser) -> None:
    """Every option of a crawl list, with the defaults of the form and the daily job."""
    configured = CrawlListOptions.from_settings()
    window_arguments(parser, methods=[value for value, _ in LIST_METHOD_CHOICES])
    parser.add_argument(
        "--theta",
        type=threshold,
        default=NOT_GIVEN,
        help=f"keep sites with p ≥ θ; none for no threshold (default HACS_THETA, "
        f"{configured.theta}; none when --budget is given: a budget fills its k)",
    )
    parser.add_argument(
        "--budget",
        type=positive,
        default=NOT_GIVEN,
        metavar="K",
        help=f"keep the top K sites (default HACS_BUDGET, {configured.budget or 'no limit'})",
    )
    parser.add_argument(
        "--e-days",
        type=horizon,
        default=configured.e_days,
        metavar="E",
        help=f"the horizon e in days (default HACS_E_DAYS, {configured.e_days:g})",
    )


def crawl_list_options(options: dict[str, Any]) -> CrawlListOptions:
    """The parsed options as a crawl list's. A ``--budget`` given without ``--theta`` fills its
    k (DESIGN rule 8): the configured θ applies only when no budget was asked for either. With
    neither θ nor k every site would be listed, which the form refuses too."""
    configured = CrawlListOptions.from_settings()
    theta, budget = options["theta"], options["budget"]
    if theta is NOT_GIVEN:
        theta = configured.theta if budget is NOT_GIVEN else None
    if budget is NOT_GIVEN:
        budget = configured.budget
    if theta is None and budget is None:
        raise CommandError(
            "No list was built: give a threshold --theta (the sites whose P(change) reaches it), "
            "a budget --budget (the k most likely to have changed), or both. --theta 0 lists "
            "every site."
        )
    return CrawlListOptions(
        level=str(options["level"]),
        method=str(options["method"]),
        theta=theta,
        budget=budget,
        history_days=int(options["history_days"]),
        e_days=float(options["e_days"]),
    )


def chosen_day(options: dict[str, Any]) -> date:
    chosen = options["date"]
    return chosen if isinstance(chosen, date) else today()
