"""What every management command reads from its command line the same way."""

from __future__ import annotations

import argparse
from datetime import date


def day(text: str) -> date:
    """An argparse type: a date written like 2018-06-01, or a message naming what was given."""
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a date like 2018-06-01") from None
