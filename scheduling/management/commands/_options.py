"""Argument types shared by the scheduling commands, with messages naming the bad option."""

import argparse
from datetime import UTC, date, datetime, time


def day(text: str) -> date:
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a date like 2018-06-01") from None


def day_start(value: date | None) -> datetime | None:
    return None if value is None else datetime.combine(value, time.min, tzinfo=UTC)


def day_end(value: date | None) -> datetime | None:
    return None if value is None else datetime.combine(value, time.max, tzinfo=UTC)
