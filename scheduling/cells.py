"""How HACS writes its values, the same on every page, in every download and every command.

Two forms of each value: a machine-readable cell for CSV files and ``datetime`` attributes (an
instant in ISO 8601 UTC, a number without its unit) and a text for people (a date as
"30 Nov 2026", an interval as "12.3 days"). Instants are shown in UTC, as the CSV gives them,
whatever the display time zone, so that a page and a download name the same day.

Spreadsheets run a cell that starts with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return
as a formula; archive-supplied URLs and librarian-typed names are neutralised with a quote.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta

from hacs.clock import reference_instant

# A UTF-8 byte order mark: with it first, Excel reads a CSV file as UTF-8 ("Søren", not
# "SÃ¸ren"). Only the downloads and output asked for Excel begin with it: other programs take
# it for part of the first column's name.
EXCEL_BOM = "\ufeff"


def neutralise(value: object) -> str:
    """A CSV cell that a spreadsheet will not run as a formula."""
    text = "" if value is None else str(value)
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


def rate_cell(rate: float | None) -> str:
    """λ per day to six significant figures; empty when unknown."""
    return "" if rate is None else f"{rate:.6g}"


def interval_cell(rate: float | None) -> str:
    """The mean interval 1/λ in days to two decimals; empty when λ is unknown or 0."""
    return "" if not rate else f"{1 / rate:.2f}"


def tau_cell(tau: datetime | None) -> str:
    """An instant (τ, the newest copy) in ISO 8601 UTC; empty when unknown."""
    return "" if tau is None else tau.astimezone(UTC).isoformat()


def last_update_cell(tau: datetime | None, updates: int | None) -> str:
    """The ``tau`` column of a CSV: the last update, empty when the window held none, as the
    pages show "–" there. (DESIGN rule 5 then puts τ at the first observation, which the
    probability reads; it is no update, so no table shows it as one.)"""
    return "" if updates == 0 else tau_cell(tau)  # None: a list stored before updates were kept


def days_cell(days: float | None) -> str:
    """A number of days to one decimal; empty when unknown."""
    return "" if days is None else f"{days:.1f}"


def day_text(value: date | datetime) -> str:
    """A date for people, "30 Nov 2026"; an instant gives its UTC date."""
    day = value.astimezone(UTC).date() if isinstance(value, datetime) else value
    return f"{day.day} {day:%b %Y}"


def when_text(value: datetime, *, seconds: bool = False) -> str:
    """An instant for people, "30 Nov 2026, 05:00 UTC" (with seconds for a capture's exact
    time): the one way pages, feeds and messages write a time."""
    at = value.astimezone(UTC)
    return f"{day_text(at)}, {at:%H:%M:%S} UTC" if seconds else f"{day_text(at)}, {at:%H:%M} UTC"


def interval_text(rate: float | None) -> str:
    """The mean interval 1/λ for people, "12.3 days"; empty when λ is unknown or 0."""
    return "" if not rate else f"{1 / rate:.1f} days"


def horizon_day(day: date, e_days: float) -> date:
    """The last day of the horizon of a probability for ``day``: p is the chance of a change by
    t + e, where t is the end of ``day`` (``hacs.clock.reference_instant``)."""
    end = reference_instant(day) + timedelta(days=e_days)
    return (end - timedelta(microseconds=1)).date()


def due_text(day: date, e_days: float) -> str:
    """ "by 30 Nov 2026": the date a probability of change for ``day`` reaches to."""
    return f"by {day_text(horizon_day(day, e_days))}"


@dataclass(frozen=True)
class Moment:
    """An instant as pages show it: ``iso`` for the ``datetime`` attribute (the CSV's cell),
    ``text`` the date people read, ``title`` the date with the time."""

    iso: str
    text: str
    title: str


def moment(value: datetime | None) -> Moment | None:
    if value is None:
        return None
    at = value.astimezone(UTC)
    return Moment(tau_cell(at), day_text(at), when_text(at))
