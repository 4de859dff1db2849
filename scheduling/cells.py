"""How HACS writes its values into CSV cells, the same in every download and command.

Spreadsheets run a cell that starts with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return
as a formula; archive-supplied URLs and librarian-typed names are neutralised with a quote.
"""

from __future__ import annotations

from datetime import datetime


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
    """τ as an ISO 8601 UTC timestamp; empty when unknown."""
    return "" if tau is None else tau.isoformat()


def days_cell(days: float | None) -> str:
    """A number of days to one decimal; empty when unknown."""
    return "" if days is None else f"{days:.1f}"
