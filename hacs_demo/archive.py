"""Reading a demo archive back, for the replay HACS serves of its own demo.

The Internet Archive never held the demo's synthetic captures, so the demo's capture links
cannot point there. :class:`DemoArchiveReader` finds, in a directory written by
``build_demo_archive``, the capture of a URL nearest a moment (as a Wayback machine does) through
the directory's ``demo.cdx``, and reads its stored response from the WARC file at the offset the
CDX gives; a revisit is answered with the payload of the response it repeats. Lines of the CDX
that are not clean 11-field lines (the demo's deliberate dirt) are passed over.

:func:`rewrite_links` points the links of a replayed page at the same replay, and
:func:`insert_banner` puts a notice at the top of its body.

Pure: stdlib, warcio and surt (through ``hacs_demo.hashing.urlkey``); no Django.
"""

from __future__ import annotations

import bisect
import re
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urldefrag, urljoin

from warcio.archiveiterator import ArchiveIterator

from hacs_demo.files import CDX_NAME
from hacs_demo.hashing import urlkey

__all__ = [
    "DemoArchiveError",
    "DemoArchiveReader",
    "DemoCapture",
    "Memento",
    "OrphanRevisit",
    "insert_banner",
    "rewrite_links",
]

_TIMESTAMP = re.compile(r"[0-9]{14}")


class DemoArchiveError(ValueError):
    """The demo archive's files are missing or do not hold what their index says."""


class OrphanRevisit(DemoArchiveError):
    """A revisit of a response the archive does not hold (archives have them; so does the
    demo, on purpose): there is nothing to replay."""


@dataclass(frozen=True)
class DemoCapture:
    """One clean line of the demo's CDX: where a capture's record lies in which WARC file."""

    urlkey: str
    timestamp: str  # 14 digits, UTC
    url: str
    mimetype: str
    status: int | None  # None for a revisit
    digest: str
    length: int
    offset: int
    filename: str

    @property
    def moment(self) -> datetime:
        return datetime.strptime(self.timestamp, "%Y%m%d%H%M%S").replace(tzinfo=UTC)


@dataclass(frozen=True)
class Memento:
    """A capture's stored HTTP response: its status line, headers and payload."""

    capture: DemoCapture
    status: int
    reason: str
    headers: tuple[tuple[str, str], ...]
    body: bytes

    def header(self, name: str) -> str | None:
        wanted = name.lower()
        return next((value for key, value in self.headers if key.lower() == wanted), None)

    @property
    def content_type(self) -> str:
        return self.header("Content-Type") or "application/octet-stream"


class DemoArchiveReader:
    """The captures of the demo archive in ``directory``, by urlkey in time order.

    Reads the CDX once; raises :class:`DemoArchiveError` naming the file when it is missing.
    """

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        index = directory / CDX_NAME
        try:
            text = index.read_text(encoding="utf-8", errors="replace")
        except OSError as error:
            raise DemoArchiveError(
                f"the demo archive's index {index} cannot be read ({error.strerror or error})"
            ) from None
        by_key: dict[str, list[DemoCapture]] = defaultdict(list)
        seen: set[tuple[str, str]] = set()
        for line in text.splitlines()[1:]:
            capture = _capture(line)
            if capture is None or (capture.urlkey, capture.timestamp) in seen:
                continue
            seen.add((capture.urlkey, capture.timestamp))
            by_key[capture.urlkey].append(capture)
        for captures in by_key.values():
            captures.sort(key=lambda c: c.timestamp)
        self._by_key = dict(by_key)

    @property
    def captures(self) -> int:
        return sum(len(found) for found in self._by_key.values())

    def nearest(self, url: str, timestamp: str) -> DemoCapture | None:
        """The capture of ``url`` (any form of it with the same urlkey) nearest ``timestamp``
        (14 digits), the earlier one on a tie; None when the archive holds no capture of it."""
        if not _TIMESTAMP.fullmatch(timestamp):
            raise ValueError(f"a timestamp has 14 digits (YYYYMMDDhhmmss), got {timestamp!r}")
        found = self._by_key.get(urlkey(url))
        if not found:
            return None
        stamps = [c.timestamp for c in found]
        at = bisect.bisect_left(stamps, timestamp)
        candidates = found[max(0, at - 1) : at + 1]
        wanted = _seconds(timestamp)
        return min(candidates, key=lambda c: (abs(_seconds(c.timestamp) - wanted), c.timestamp))

    def memento(self, capture: DemoCapture) -> Memento:
        """The stored response of ``capture``; a revisit's payload is the one of the response
        it repeats (its ``WARC-Refers-To`` record, else the newest earlier response of the same
        urlkey with the same digest). Raises :class:`OrphanRevisit` for a revisit of a response
        the archive does not hold."""
        status, reason, headers, body, refers = self._record(capture)
        if capture.status is None:
            original = self._original(capture, refers)
            if original is None:
                raise OrphanRevisit(
                    f"the capture of {capture.url} at {capture.timestamp} is a revisit of a "
                    "response the demo archive does not hold, so it has no page to show"
                )
            body = self._record(original)[3]
        return Memento(capture, status, reason, headers, body)

    def _original(self, revisit: DemoCapture, refers: tuple[str, str] | None) -> DemoCapture | None:
        if refers is not None:
            url, stamp = refers
            for c in self._by_key.get(urlkey(url), []):
                if c.timestamp == stamp and c.status is not None and c.digest == revisit.digest:
                    return c
        earlier = [
            c
            for c in self._by_key.get(revisit.urlkey, [])
            if c.status is not None
            and c.digest == revisit.digest
            and c.timestamp < revisit.timestamp
        ]
        return earlier[-1] if earlier else None

    def _record(
        self, capture: DemoCapture
    ) -> tuple[int, str, tuple[tuple[str, str], ...], bytes, tuple[str, str] | None]:
        # The CDX names the file; only a plain name inside the archive's directory is opened.
        path = self.directory / Path(capture.filename).name
        try:
            with open(path, "rb") as stream:
                stream.seek(capture.offset)
                record = next(iter(ArchiveIterator(stream)), None)
                if record is None or record.http_headers is None:
                    raise DemoArchiveError(
                        f"{path.name} holds no HTTP record at offset {capture.offset}"
                    )
                code = record.http_headers.get_statuscode()
                line = record.http_headers.statusline or ""
                reason = line.split(" ", 1)[1] if " " in line else ""
                headers = tuple((str(k), str(v)) for k, v in record.http_headers.headers)
                body = record.content_stream().read()
                refers = _refers_to(
                    record.rec_headers.get_header("WARC-Refers-To-Target-URI"),
                    record.rec_headers.get_header("WARC-Refers-To-Date"),
                )
        except OSError as error:
            raise DemoArchiveError(
                f"the demo archive's file {path} cannot be read ({error.strerror or error})"
            ) from None
        return int(code), reason, headers, body, refers


def _refers_to(url: str | None, date: str | None) -> tuple[str, str] | None:
    """A revisit's original as (URL, 14-digit timestamp), from its WARC-Refers-To headers."""
    if not url or not date:
        return None
    digits = re.sub(r"[^0-9]", "", date)[:14]
    return (url, digits) if len(digits) == 14 else None


def _capture(line: str) -> DemoCapture | None:
    """A clean line of the 11-field CDX (``N b a m s k r M S V g``), else None."""
    fields = line.split(" ")
    if len(fields) != 11 or not _TIMESTAMP.fullmatch(fields[1]):
        return None
    key, stamp, url, mimetype, status, digest, _r, _m, length, offset, filename = fields
    if not (length.isdigit() and offset.isdigit()) or not (status.isdigit() or status == "-"):
        return None
    try:
        datetime.strptime(stamp, "%Y%m%d%H%M%S")
    except ValueError:  # month 13 and the like
        return None
    return DemoCapture(
        key,
        stamp,
        url,
        mimetype,
        int(status) if status.isdigit() else None,
        digest,
        int(length),
        int(offset),
        filename,
    )


def _seconds(timestamp: str) -> float:
    try:
        moment = datetime.strptime(timestamp, "%Y%m%d%H%M%S")
    except ValueError:  # a well-formed but impossible moment: compare by its digits
        return float(timestamp)
    return moment.replace(tzinfo=UTC).timestamp()


_LINK_TAG = re.compile(rb"<(?:a|area|base)\b[^>]*>", re.I)
_HREF = re.compile(rb"""(\bhref\s*=\s*)("[^"]*"|'[^']*'|[^\s>"']+)""", re.I)
_BASE_HREF = re.compile(rb"""<base\b[^>]*\bhref\s*=\s*("[^"]*"|'[^']*'|[^\s>"']+)""", re.I)
_BODY = re.compile(rb"<body\b[^>]*>", re.I)


def rewrite_links(body: bytes, page_url: str, replay: Callable[[str], str]) -> bytes:
    """``body`` with the ``href`` of every ``<a>``, ``<area>`` and ``<base>`` that resolves
    (against the page's ``<base href>``, else ``page_url``) to an http(s) URL replaced by
    ``replay(absolute URL)`` and its fragment, so that following a link stays in the replay;
    other links (``mailto:``, fragments alone) are left as written, and so is every byte
    outside those attributes. Stylesheets and images are not pointed anywhere: the replay's
    Content-Security-Policy keeps the page from loading them from the web."""
    base = page_url
    found = _BASE_HREF.search(body)
    if found is not None:
        base = urljoin(page_url, _attribute(found.group(1)))

    def tag(match: re.Match[bytes]) -> bytes:
        return _HREF.sub(attribute, match.group(0), count=1)

    def attribute(match: re.Match[bytes]) -> bytes:
        written = _attribute(match.group(2))
        if written.startswith("#"):
            return match.group(0)
        target, fragment = urldefrag(urljoin(base, written.strip()))
        if not target.startswith(("http://", "https://")):
            return match.group(0)
        value = replay(target) + (f"#{fragment}" if fragment else "")
        value = value.replace("&", "&amp;").replace('"', "&quot;")
        return match.group(1) + b'"' + value.encode("latin-1", "replace") + b'"'

    return _LINK_TAG.sub(tag, body)


def _attribute(raw: bytes) -> str:
    """An attribute value as written, unquoted, with HTML's &amp; read back (Latin-1 keeps every
    byte, so a UTF-8 URL survives the round trip)."""
    text = raw.decode("latin-1")
    if text[:1] in "\"'" and text[-1:] == text[:1]:
        text = text[1:-1]
    return text.replace("&amp;", "&")


def insert_banner(body: bytes, banner: bytes) -> bytes:
    """``banner`` just after the ``<body>`` tag, or first when the page has none."""
    found = _BODY.search(body)
    at = found.end() if found is not None else 0
    return body[:at] + banner + body[at:]
