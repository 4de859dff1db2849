"""hacs.clock: days since 1970, the reference instant of a date, and today's date in a zone."""

from __future__ import annotations

import math
from datetime import UTC, date, datetime, timedelta, timezone
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hacs.clock import (
    EPOCH,
    SECONDS_PER_DAY,
    day_end,
    day_start,
    from_days,
    reference_instant,
    to_days,
    today,
)


def test_days_count_from_1970_in_utc() -> None:
    assert EPOCH == datetime(1970, 1, 1, tzinfo=UTC)
    assert to_days(EPOCH) == 0.0
    assert to_days(datetime(1970, 1, 2, 12, tzinfo=UTC)) == 1.5
    assert to_days(datetime(2000, 1, 1, tzinfo=UTC)) == 10957.0
    # Any aware datetime: 02:00 in UTC+2 is midnight UTC.
    assert to_days(datetime(1970, 1, 2, 2, tzinfo=timezone(timedelta(hours=2)))) == 1.0
    assert to_days(datetime(1969, 12, 31, 18, tzinfo=UTC)) == -0.25
    assert SECONDS_PER_DAY == 86400.0


def test_from_days_by_hand() -> None:
    assert from_days(0.0) == EPOCH
    assert from_days(10957.5) == datetime(2000, 1, 1, 12, tzinfo=UTC)
    assert from_days(1) == datetime(1970, 1, 2, tzinfo=UTC)
    moment = from_days(1.25)
    assert moment is not None and moment.tzinfo is UTC


@pytest.mark.parametrize("days", [math.nan, math.inf, -math.inf])
def test_from_days_has_no_instant_for_nan_or_infinity(days: float) -> None:
    assert from_days(days) is None


utc_moments = st.datetimes(
    min_value=datetime(1970, 1, 1), max_value=datetime(2100, 12, 31), timezones=st.just(UTC)
)


@settings(max_examples=200, deadline=None)
@given(moment=utc_moments)
def test_days_round_trip_to_the_microsecond(moment: datetime) -> None:
    # A float day count near 2100 resolves ~0.5 µs, so a round trip may land one µs off.
    back = from_days(to_days(moment))
    assert back is not None
    assert abs(back - moment) <= timedelta(microseconds=1)


@settings(max_examples=200, deadline=None)
@given(moment=utc_moments.map(lambda m: m.replace(microsecond=0)))
def test_whole_seconds_round_trip_exactly(moment: datetime) -> None:
    assert from_days(to_days(moment)) == moment


@settings(max_examples=200, deadline=None)
@given(days=st.floats(0.0, 50_000.0))
def test_day_counts_round_trip(days: float) -> None:
    moment = from_days(days)
    assert moment is not None
    assert to_days(moment) == pytest.approx(days, abs=1e-11)  # datetimes keep microseconds


@pytest.mark.parametrize(
    ("day", "instant"),
    [
        (date(2024, 6, 1), datetime(2024, 6, 2, tzinfo=UTC)),
        (date(2024, 2, 28), datetime(2024, 2, 29, tzinfo=UTC)),  # a leap day follows
        (date(2023, 12, 31), datetime(2024, 1, 1, tzinfo=UTC)),  # a year ends
    ],
)
def test_the_reference_instant_of_a_date_is_midnight_utc_of_the_next_day(
    day: date, instant: datetime
) -> None:
    got = reference_instant(day)
    assert got == instant
    assert got.tzinfo is UTC
    assert to_days(got) == (day - date(1970, 1, 1)).days + 1


NIGHT = datetime(2024, 6, 1, 23, 30, tzinfo=UTC)


@pytest.mark.parametrize(
    ("zone", "expected"),
    [
        ("Europe/Berlin", date(2024, 6, 2)),  # 01:30 the next day (CEST, UTC+2)
        ("America/New_York", date(2024, 6, 1)),  # 19:30 the same day (EDT, UTC-4)
        ("UTC", date(2024, 6, 1)),
        (ZoneInfo("Europe/Berlin"), date(2024, 6, 2)),  # a tzinfo works like its name
        (timezone(timedelta(hours=1)), date(2024, 6, 2)),
        (UTC, date(2024, 6, 1)),
    ],
)
def test_today_is_the_date_in_the_given_zone(zone: object, expected: date) -> None:
    assert today(zone, now=NIGHT) == expected  # type: ignore[arg-type]


def test_today_across_the_date_line_the_other_way() -> None:
    early = datetime(2024, 6, 2, 2, 30, tzinfo=UTC)
    assert today("America/New_York", now=early) == date(2024, 6, 1)  # 22:30 the day before
    assert today("Europe/Berlin", now=early) == date(2024, 6, 2)
    assert today(now=early) == date(2024, 6, 2)  # UTC by default
    # The same instant written in another zone is the same "now".
    assert today("Europe/Berlin", now=early.astimezone(ZoneInfo("Asia/Tokyo"))) == date(2024, 6, 2)


def test_today_without_now_is_the_current_date() -> None:
    before = datetime.now(UTC).date()
    got = today()
    assert before <= got <= datetime.now(UTC).date()


def test_an_unknown_zone_name_is_an_error() -> None:
    with pytest.raises(ZoneInfoNotFoundError, match="Nowhere/Atlantis"):
        today("Nowhere/Atlantis", now=NIGHT)


def test_a_day_runs_from_its_start_to_its_last_microsecond() -> None:
    start = day_start(date(2018, 6, 1))
    end = day_end(date(2018, 6, 1))
    assert start is not None and end is not None
    assert start.isoformat() == "2018-06-01T00:00:00+00:00"
    assert end.isoformat() == "2018-06-01T23:59:59.999999+00:00"
    assert day_start(None) is None and day_end(None) is None
