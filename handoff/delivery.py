"""What every hand-off returns or raises: the steps it did and one sentence about the outcome."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Delivery:
    """A hand-off that went through (or, in a dry run, what it would do)."""

    message: str
    steps: list[str] = field(default_factory=list)
    crawl_id: str = ""  # the crawl it started (Browsertrix), which HACS then follows


class HandOffFailed(Exception):
    """A hand-off that could not go through: ``message`` says what failed and what to do,
    ``steps`` the steps done before it (each a short sentence)."""

    def __init__(self, message: str, steps: list[str] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.steps = list(steps or [])
