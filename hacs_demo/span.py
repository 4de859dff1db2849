"""The archive's time span, and the ways its files write an instant.

Everything inside the demo counts whole seconds from ``start`` 00:00 UTC; the CDX wants
14-digit timestamps, the WARC ISO 8601 and the HTTP headers RFC 7231 dates.
"""

from __future__ import annotations

import functools
from datetime import UTC, date, datetime, timedelta
from email.utils import format_datetime

import numpy as np
from numpy.typing import NDArray

from hacs_demo.sessions import term_start_days

DAY = 86400


class Span:
    """Captures fall in [``start``, ``end``): ``total_sec`` seconds, ``total_days`` days.
    ``bursts`` False makes every page add links as a plain Poisson process (no follow-ups, no
    term starts: ``hacs_demo.sessions``), the demo without bursts."""

    def __init__(self, start: date, end: date, *, bursts: bool = True) -> None:
        self.start = start
        self.end = end
        self.bursts = bursts
        self.t0 = datetime(start.year, start.month, start.day, tzinfo=UTC)
        self.total_sec = (end - start).days * DAY
        self.total_days = self.total_sec / DAY

    def at(self, sec: int) -> datetime:
        return self.t0 + timedelta(seconds=sec)

    def ts14(self, sec: int) -> str:
        """``YYYYMMDDhhmmss``, as CDX lines and the truth write timestamps."""
        return self.at(sec).strftime("%Y%m%d%H%M%S")

    def iso(self, sec: int) -> str:
        """``YYYY-MM-DDThh:mm:ssZ``, as ``WARC-Date`` headers write it."""
        return self.at(sec).strftime("%Y-%m-%dT%H:%M:%SZ")

    def http_date(self, sec: int) -> str:
        """``Mon, 01 Jun 2015 00:00:00 GMT``, as ``Date`` and ``Last-Modified`` write it."""
        return format_datetime(self.at(sec), usegmt=True)

    @functools.cached_property
    def term_days(self) -> NDArray[np.float64]:
        """Term starts in days since ``start``, from the editing model's burn-in on."""
        return term_start_days(self.start, self.end)
