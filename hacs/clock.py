"""Time in HACS: days since 1970, the reference instant of a date, and "today".

The method works in days (floats) since 1970-01-01 UTC; the database stores aware datetimes.
:func:`to_days` and :func:`from_days` convert between the two, and every page, command and job
takes its reference time t for a date from :func:`reference_instant` and its date from
:func:`today`, so that one site shows one probability of change wherever it is looked at.
"""

from __future__ import annotations

import math
from datetime import UTC, date, datetime, time, timedelta, tzinfo
from zoneinfo import ZoneInfo

__all__ = [
    "EPOCH",
    "SECONDS_PER_DAY",
    "day_end",
    "day_start",
    "from_days",
    "reference_instant",
    "to_days",
    "today",
]

SECONDS_PER_DAY = 86400.0
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def to_days(moment: datetime) -> float:
    """Days since 1970-01-01 UTC of an aware datetime."""
    return (moment - EPOCH).total_seconds() / SECONDS_PER_DAY


def from_days(days: float) -> datetime | None:
    """The aware UTC datetime ``days`` after 1970-01-01; None for NaN or infinity."""
    if not math.isfinite(days):
        return None
    return EPOCH + timedelta(days=float(days))


def reference_instant(day: date) -> datetime:
    """The reference time t of a date (DESIGN rule 8): the end of the day, 00:00 UTC of the next.

    A crawl list for a date uses the observations before t and gives the probability that a site
    has changed by t + e; the Sites table, a site's page and the Overview use the same t for
    today, so they agree with the list.
    """
    return datetime.combine(day + timedelta(days=1), time.min, tzinfo=UTC)


def today(zone: tzinfo | str = UTC, *, now: datetime | None = None) -> date:
    """The current date in ``zone`` (a ``tzinfo`` or an IANA name such as ``"Europe/Berlin"``)."""
    where = ZoneInfo(zone) if isinstance(zone, str) else zone
    moment = datetime.now(UTC) if now is None else now
    return moment.astimezone(where).date()


def day_start(day: date | None) -> datetime | None:
    """00:00 UTC of a date, the first instant a window starting that day holds (None stays)."""
    return None if day is None else datetime.combine(day, time.min, tzinfo=UTC)


def day_end(day: date | None) -> datetime | None:
    """The last instant (microsecond) of a date in UTC, the end a window ending that day holds."""
    return None if day is None else datetime.combine(day, time.max, tzinfo=UTC)
