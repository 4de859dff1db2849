"""The only module of HACS that speaks HTTP: CDX queries and raw mementos from configured archives.

Every request goes through one ``requests`` session with timeouts and a User-Agent, waits for its
slot in the shared per-host rate limit (``archive.ratelimit``), honours ``Retry-After``, and backs
off exponentially on 429, 5xx, timeouts and dropped connections. Redirects are followed only
within the archive's own host: HACS never fetches a seed site itself.
"""

from __future__ import annotations

import email.utils
import logging
import random
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urljoin, urlsplit

import redis
import requests

from archive.ratelimit import SharedRateLimiter

log = logging.getLogger(__name__)

RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
IA_CDX_FIELDS = "urlkey,timestamp,original,mimetype,statuscode,digest,length"


class ArchiveError(Exception):
    """An archive could not answer a request, after retries; the message says what happened."""


class BlockedSiteError(ArchiveError):
    """The archive refuses to serve this site (for example the Internet Archive's exclusions)."""


@dataclass(frozen=True)
class ArchiveConfig:
    cdx_url: str
    wayback_url: str
    dialect: str = "ia"  # "ia" (Internet Archive CDX server) or "pywb"
    cdx_per_minute: float = 24.0
    memento_per_minute: float = 60.0
    timeout: float = 30.0
    retries: int = 5
    backoff_base: float = 2.0
    backoff_cap: float = 300.0
    max_memento_bytes: int = 5 * 1024 * 1024
    user_agent: str = "HACS/0.1"
    page_size: int = 5000

    @classmethod
    def from_settings(cls) -> ArchiveConfig:
        from django.conf import settings

        return cls(
            cdx_url=settings.HACS_CDX_URL,
            wayback_url=settings.HACS_WAYBACK_URL,
            dialect=settings.HACS_CDX_DIALECT,
            cdx_per_minute=settings.HACS_CDX_RATE_PER_MINUTE,
            memento_per_minute=settings.HACS_MEMENTO_RATE_PER_MINUTE,
            timeout=settings.HACS_HTTP_TIMEOUT,
            retries=settings.HACS_HTTP_RETRIES,
            backoff_base=settings.HACS_HTTP_BACKOFF_BASE,
            max_memento_bytes=settings.HACS_MAX_MEMENTO_BYTES,
            user_agent=settings.HACS_USER_AGENT,
        )


@dataclass(frozen=True)
class Memento:
    url: str
    timestamp: str
    status: int
    content_type: str | None
    body: bytes
    truncated: bool


@dataclass
class RequestStats:
    requests: int = 0
    retries: int = 0
    waited_seconds: float = 0.0


def retry_after_seconds(value: str | None, now: float | None = None) -> float | None:
    """Seconds asked for by a ``Retry-After`` header: a number of seconds or an HTTP date."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


class ArchiveClient:
    def __init__(
        self,
        config: ArchiveConfig,
        connection: redis.Redis,
        *,
        session: requests.Session | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.config = config
        self.session = session or requests.Session()
        self.session.headers["User-Agent"] = config.user_agent
        self.stats = RequestStats()
        self._sleep = sleep
        self._limiters = {
            "cdx": SharedRateLimiter(
                connection, _host(config.cdx_url), "cdx", config.cdx_per_minute, sleep=sleep
            ),
            "memento": SharedRateLimiter(
                connection, _host(config.wayback_url), "memento", config.memento_per_minute,
                sleep=sleep,
            ),
        }  # fmt: skip

    # --- CDX -----------------------------------------------------------------------------------
    def cdx_query_params(self, prefix: str, resume_key: str | None = None) -> dict[str, str]:
        """Query parameters of a prefix query; never ``collapse``: unchanged captures are data."""
        if self.config.dialect == "pywb":
            return {"url": prefix, "matchType": "prefix", "output": "json", "allowFuzzy": "0"}
        params = {
            "url": prefix,
            "matchType": "prefix",
            "output": "json",
            "fl": IA_CDX_FIELDS,
            "showResumeKey": "true",
            "limit": str(self.config.page_size),
        }
        if resume_key:
            params["resumeKey"] = resume_key
        return params

    def cdx_text(self, prefix: str, resume_key: str | None = None) -> str:
        """One page of a CDX prefix query, as text; blocked sites raise ``BlockedSiteError``."""
        response = self._get("cdx", self.config.cdx_url, self.cdx_query_params(prefix, resume_key))
        body = response.text
        if response.status_code == 403 or "AdministrativeAccessControlException" in body:
            raise BlockedSiteError(f"The archive blocks {prefix}: {_first_line(body)}")
        if response.status_code == 404 and self.config.dialect == "pywb":
            return ""  # pywb answers 404 when it holds no capture for the prefix
        if response.status_code != 200:
            raise ArchiveError(
                f"CDX query for {prefix} answered HTTP {response.status_code}: {_first_line(body)}"
            )
        return body

    def cdx_pages(
        self, prefix: str, parse: Callable[[str], tuple[Any, str | None]]
    ) -> Iterator[Any]:
        """Every page of a prefix query, following resume keys; ``parse`` returns (page, key)."""
        resume_key: str | None = None
        seen: set[str] = set()
        while True:
            page, resume_key = parse(self.cdx_text(prefix, resume_key))
            yield page
            if not resume_key or self.config.dialect == "pywb":
                return
            if resume_key in seen:
                raise ArchiveError(f"The CDX server repeated resume key {resume_key!r}.")
            seen.add(resume_key)

    # --- Mementos ------------------------------------------------------------------------------
    def memento_url(self, timestamp: str, url: str) -> str:
        return f"{self.config.wayback_url}/{timestamp}id_/{url}"

    def fetch_memento(self, timestamp: str, url: str) -> Memento:
        """The raw archived page (``id_``: no rewriting), cut at ``max_memento_bytes``."""
        response = self._get("memento", self.memento_url(timestamp, url), None, stream=True)
        try:
            if response.status_code != 200:
                raise ArchiveError(
                    f"Memento {timestamp} {url} answered HTTP {response.status_code}."
                )
            limit = self.config.max_memento_bytes
            chunks: list[bytes] = []
            size = 0
            truncated = False
            for chunk in response.iter_content(64 * 1024):
                chunks.append(chunk)
                size += len(chunk)
                if size > limit:
                    truncated = True
                    break
            body = b"".join(chunks)[:limit]
        finally:
            response.close()
        return Memento(
            url=url,
            timestamp=timestamp,
            status=response.status_code,
            content_type=response.headers.get("Content-Type"),
            body=body,
            truncated=truncated,
        )

    # --- The one place requests are sent -------------------------------------------------------
    def _get(
        self, kind: str, url: str, params: dict[str, str] | None, *, stream: bool = False
    ) -> requests.Response:
        limiter = self._limiters[kind]
        archive_host = _host(url)
        attempt = 0
        while True:
            self.stats.waited_seconds += limiter.acquire()
            self.stats.requests += 1
            reason: str
            wait: float | None = None
            try:
                response = self._get_within_host(url, params, archive_host, stream)
            except (requests.Timeout, requests.ConnectionError) as error:
                reason = f"{type(error).__name__}: {error}"
            else:
                if response.status_code not in RETRY_STATUSES:
                    return response
                reason = f"HTTP {response.status_code}"
                wait = retry_after_seconds(response.headers.get("Retry-After"))
                response.close()
            if attempt >= self.config.retries:
                raise ArchiveError(f"{url} failed after {attempt + 1} attempts ({reason}).")
            if wait is None:
                wait = min(self.config.backoff_cap, self.config.backoff_base * 2**attempt)
                wait *= 1 + random.random() * 0.25  # spread retries of many workers apart
            else:
                limiter.pause(wait)  # the archive asked everybody to wait, not just this worker
            log.info("%s: %s; retrying in %.1f s", url, reason, wait)
            self.stats.retries += 1
            self.stats.waited_seconds += wait
            self._sleep(wait)
            attempt += 1

    def _get_within_host(
        self, url: str, params: dict[str, str] | None, archive_host: str, stream: bool
    ) -> requests.Response:
        for _ in range(10):
            response = self.session.get(
                url, params=params, timeout=self.config.timeout, allow_redirects=False,
                stream=stream,
            )  # fmt: skip
            if response.status_code not in (301, 302, 303, 307, 308):
                return response
            location = urljoin(response.url, response.headers.get("Location", ""))
            response.close()
            if _host(location) != archive_host:
                raise ArchiveError(f"{url} redirects away from the archive, to {location}.")
            url, params = location, None
        raise ArchiveError(f"{url} redirects too many times.")


def _host(url: str) -> str:
    return urlsplit(url).netloc.lower()


def _first_line(text: str) -> str:
    line = text.strip().splitlines()[0] if text.strip() else "(empty answer)"
    return line[:300]
