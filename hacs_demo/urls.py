"""Where a site's pages live, and which scheme and host form its server answers under.

Each author has a ``/~user/`` directory on a department host. Some sites answer under
``www.``, some default to https, and about a third move to https during the span (a "restyle"
event: it rewrites absolute links but adds none, so it is not an update by DESIGN.md rule 3).
"""

from __future__ import annotations

from dataclasses import dataclass

from hacs_demo.model import Page


@dataclass(frozen=True)
class SiteUrls:
    host: str
    user: str
    www: bool  # the server's usual host form is www.<host>
    https_default: bool  # https from the start
    migrate_sec: int | None  # when the site moves to https, if it does

    @property
    def root_path(self) -> str:
        return f"/~{self.user}/"

    def page_url(self, page: Page) -> str:
        """The truth's canonical URL of ``page`` (http, no www., no trailing slash)."""
        return f"http://{self.host}{self.root_path}{page.path}".rstrip("/")

    def epoch_at(self, sec: int) -> int:
        """The site's style epoch at ``sec``: 1 once it has moved to https, else 0."""
        return int(self.migrate_sec is not None and sec >= self.migrate_sec)

    def scheme_at(self, epoch: int) -> str:
        return "https" if (epoch or self.https_default) else "http"

    def main_url(self, page: Page, sec: int) -> str:
        """The URL a crawler following the site's own links fetches ``page`` under at ``sec``."""
        www = "www." if self.www else ""
        return f"{self.scheme_at(self.epoch_at(sec))}://{www}{self.host}{self.root_path}{page.path}"
