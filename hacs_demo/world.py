"""The demo world: every site of the archive over one time span, from one seed."""

from __future__ import annotations

from datetime import date

from hacs_demo.site import Site
from hacs_demo.span import Span


class World:
    def __init__(self, *, seed: int, start: date, end: date, bursts: bool = True) -> None:
        self.seed = seed
        self.span = Span(start, end, bursts=bursts)
        self.sites: list[Site] = []
        self.used: set[tuple[str, str]] = set()  # (host, user) pairs already taken

    def add_site(self, index: int) -> None:
        prev = self.sites[-1] if self.sites else None
        self.sites.append(
            Site(seed=self.seed, span=self.span, index=index, prev=prev, used=self.used)
        )

    def update_events(self) -> int:
        return sum(site.update_events() for site in self.sites)
