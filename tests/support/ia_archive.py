"""The nightly refresh's tests against ``testbed.ia_server``'s fake Internet Archive: HACS
pointed at it, its rows keyed as the archive keys them, and the import command run quietly."""

from __future__ import annotations

import io
from typing import Any

from django.core.management import call_command

from testbed.ia_server import IAArchive, Row


def key_of(host: str, path: str = "") -> str:
    """The SURT key the archive files ``host`` + ``path`` under."""
    return ",".join(reversed(host.split("."))) + ")" + path


def use(settings: Any, archive: IAArchive, **extra: Any) -> None:
    """Point HACS at ``archive`` with no rate limit to wait on, a 10-day index lag and no recall
    audit; ``extra`` settings override these."""
    settings.HACS_CDX_URL = archive.cdx_url
    settings.HACS_WAYBACK_URL = archive.wayback_url
    settings.HACS_CDX_DIALECT = "ia"
    settings.HACS_CDX_RATE_PER_MINUTE = 60000.0
    settings.HACS_MEMENTO_RATE_PER_MINUTE = 60000.0
    settings.HACS_HTTP_BACKOFF_BASE = 0.01
    settings.HACS_CDX_INDEX_LAG_DAYS = 10.0
    settings.HACS_REFRESH_AUDIT_SHARE = 0.0
    for name, value in extra.items():
        setattr(settings, name, value)


def run(*args: str) -> None:
    """``manage.py import_archive ARGS``, its output thrown away."""
    call_command("import_archive", *args, stdout=io.StringIO(), stderr=io.StringIO())


def add_rows(archive: IAArchive, rows: list[Row]) -> None:
    """New captures in the archive's index, kept in its (urlkey, timestamp) order."""
    archive.state.rows.extend(rows)
    archive.state.rows.sort(key=lambda r: (r.urlkey, r.timestamp))
