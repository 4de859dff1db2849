"""How every page writes a date and a time (``scheduling.cells``): ``{{ value|day }}`` gives
"22 May 2018", ``{{ value|when }}`` "22 May 2018, 05:00 UTC", ``{{ value|when:"s" }}`` with the
seconds of a capture's exact time. Empty for no value."""

from __future__ import annotations

from datetime import date, datetime

from django import template

from scheduling.cells import day_text, when_text

register = template.Library()


@register.filter
def day(value: date | datetime | str | None) -> str:
    if value in (None, ""):
        return ""
    if isinstance(value, str):  # an ISO date a chart's data holds
        value = date.fromisoformat(value[:10])
    return day_text(value)


@register.filter
def when(value: datetime | None, precision: str = "") -> str:
    if value in (None, ""):
        return ""
    if not isinstance(value, datetime):
        return day_text(value)  # type: ignore[arg-type]
    return when_text(value, seconds=precision == "s")
