"""Reading WARC files: each response or revisit record as a CDX record, with its HTML body.

Pure (warcio and the CDX reader): HACS imports WARC files a crawler wrote, or that an archive
exported, exactly as it imports CDX rows, and parses the pages' links from the same pass.

Records are yielded as warcio reads them, so a caller that stores them in batches keeps every
good record before a damaged part of the file. A record that cannot be a capture (no usable
date or URL, a field the database cannot hold) is skipped and counted in a ``WarcStats`` with
its byte offset; damage that ends the file (bytes that are not a WARC record, a record or gzip
member cut short) raises ``WarcError`` naming the offset, after every good record before it.

Headers are read with a bound: warcio reads a header line whole, whatever its length, and a
1 MB file holding a 1 GiB header line peaked at 3.36 GB. A record whose header line (WARC or
HTTP) is longer than ``MAX_HEADER_LINE`` bytes, or whose headers hold more than
``MAX_HEADER_BYTES`` in all, ends the file's reading with ``WarcError`` at its offset: where the
next record starts is written in those headers.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, BinaryIO

from warcio.archiveiterator import ArchiveIterator
from warcio.bufferedreaders import DecompressingBufferedReader

from hacs.formats import cdx
from hacs.formats.canon import canonical_url

__all__ = [
    "MAX_HEADER_BYTES",
    "MAX_HEADER_LINE",
    "WarcCapture",
    "WarcError",
    "WarcStats",
    "read_warc",
]

#: The longest header line read, WARC's or HTTP's, in bytes (real ones are a few hundred; a
#: redirect's Location or a cookie may reach tens of thousands).
MAX_HEADER_LINE = 1024 * 1024
#: Bytes of one record's headers, WARC's and HTTP's together.
MAX_HEADER_BYTES = 4 * 1024 * 1024


class WarcError(ValueError):
    """The rest of a WARC file cannot be read; names the byte offset where the damage starts."""

    def __init__(self, reason: str, offset: int) -> None:
        self.reason = reason
        self.offset = offset
        super().__init__(f"offset {offset:,}: {reason}")


@dataclass
class WarcStats:
    """What ``read_warc`` has read: captures yielded, records skipped (offset and reason)."""

    captures: int = 0
    skipped: int = 0
    problems: list[tuple[int, str]] = field(default_factory=list)

    def skip(self, offset: int, reason: str) -> None:
        self.skipped += 1
        if len(self.problems) < cdx.MAX_PROBLEMS:
            self.problems.append((offset, reason))


@dataclass
class WarcCapture:
    record: cdx.CdxRecord
    body: bytes | None
    content_type: str | None
    offset: int = 0


def read_warc(
    stream: BinaryIO,
    *,
    max_body: int,
    stats: WarcStats | None = None,
    limits: cdx.RowLimits | None = None,
) -> Iterator[WarcCapture]:
    """Captures (responses and revisits) of a WARC file, with the HTML body of 200 responses.

    ``length`` is the record's compressed length in the file, as CDX indexers print it.
    ``limits`` are what a stored row may hold (``cdx.RowLimits``; today's bounds by default).
    Raises ``WarcError`` when the file is damaged, after yielding every capture before it.
    """
    stats = stats if stats is not None else WarcStats()
    limits = limits if limits is not None else cdx.RowLimits.until_tomorrow()
    iterator = ArchiveIterator(stream)
    reader = iterator.reader = _BoundedReader(iterator.fh)  # see _BoundedReader
    end = iterator.offset  # where the last complete record ended
    records = iter(iterator)
    while True:
        reader.header_room = MAX_HEADER_BYTES
        try:
            record = next(records)
        except StopIteration:
            break
        except Exception as error:  # see _damage: warcio's errors on damage are of any type
            raise WarcError(_damage(error), end) from None
        declared = record.rec_headers.get_header("Content-Length") or ""
        if record.format == "warc" and not (declared.isascii() and declared.isdigit()):
            # Every WARC record declares its length; warcio reads headers cut mid-way as a
            # record with none, or an empty one.
            raise WarcError("a record's headers are cut short: the file is truncated", end)
        capture = _read_whole(iterator, record, max_body, limits, end)
        offset, length = iterator.get_record_offset(), iterator.get_record_length()
        end = offset + length
        if isinstance(capture, str):
            if capture:
                stats.skip(offset, capture)
            continue
        stats.captures += 1
        capture.offset = offset
        capture.record = capture.record._replace(length=length)
        yield capture
    _check_tail(stream, end)


def _read_whole(
    iterator: ArchiveIterator, record: Any, max_body: int, limits: cdx.RowLimits, end: int
) -> WarcCapture | str:
    """The record's capture (or why it is none), its body read to the end; ``WarcError`` naming
    ``end``, where the last complete record ended, when the record is cut short or damaged."""
    try:
        capture = _capture(record, max_body, limits)
        while record.raw_stream.read(1 << 16):
            pass
        # warcio stops quietly where the file stops: a record holding fewer bytes than
        # its Content-Length is the sign that the file was cut.
        if getattr(record.raw_stream, "limit", 0) > 0:
            raise WarcError("a record is cut short: the file is truncated", end)
        iterator.read_to_end(record)
        # In a gzip WARC each record is a member; one whose end never came was cut.
        decompressor = getattr(iterator.reader, "decompressor", None)
        if decompressor is not None and not decompressor.eof:
            raise WarcError("a record is cut short: the file is truncated", end)
    except WarcError:
        raise
    except Exception as error:
        raise WarcError(_damage(error), end) from None
    return capture


#: The longest redirect Location kept (a seed URL's limit, ``hacs.formats.canon``).
MAX_LOCATION_LENGTH = 2048


def _capture(record: Any, max_body: int, limits: cdx.RowLimits) -> WarcCapture | str:
    """The capture of a record, or why it is skipped ("" for a record that is not a capture)."""
    if record.rec_type not in ("response", "revisit"):
        return ""
    url = record.rec_headers.get_header("WARC-Target-URI") or ""
    date = record.rec_headers.get_header("WARC-Date") or ""
    try:
        moment = _warc_date(date)
    except cdx.CdxError as error:
        return f"WARC-Date {date!r}: {error.reason}"
    try:
        urlkey = canonical_url(url)
    except ValueError as error:
        return f"WARC-Target-URI {url[:200]!r} is unusable: {error}"
    http = record.http_headers
    status_text = http.get_statuscode() if http is not None else None
    if status_text and not (status_text.isascii() and status_text.isdigit()):
        return f"HTTP status {status_text[:20]!r} is not a number"
    status = int(status_text) if status_text else None
    content_type = http.get_header("Content-Type") if http is not None else None
    digest = cdx.bare_digest(record.rec_headers.get_header("WARC-Payload-Digest") or "-")
    if record.rec_type == "revisit":
        mimetype = cdx.REVISIT_TYPE
    else:
        mimetype = (content_type or "unk").partition(";")[0].strip().lower() or "unk"
    location = ""
    if http is not None and status is not None and 300 <= status < 400:
        # Kept for seed health (``hacs.health``); a header with a NUL byte or of absurd length
        # is no address anyone could crawl.
        location = (http.get_header("Location") or "").strip()
        if "\x00" in location or len(location) > MAX_LOCATION_LENGTH:
            location = ""
    row = cdx.CdxRecord(
        urlkey=urlkey,
        timestamp=moment,
        original=url,
        mimetype=mimetype,
        status=status,
        digest=digest,
        length=None,
        location=location,
    )
    problem = cdx.row_problem(row, limits)
    if problem is not None:
        return problem.reason
    body: bytes | None = None
    if record.rec_type == "response" and status == 200 and cdx.is_html_type(mimetype):
        body = record.content_stream().read(max_body + 1)
    return WarcCapture(record=row, body=body, content_type=content_type)


def _check_tail(stream: BinaryIO, end: int) -> None:
    """Raise ``WarcError`` when bytes other than blank lines follow the last complete record.

    warcio ends without a word when a gzip member is cut before its first record header, so the
    bytes it did not account for are the evidence. Blank lines may follow an uncompressed record.
    """
    try:
        size = stream.seek(0, 2)
        stream.seek(end)
        tail = stream.read(min(size - end, 1 << 16))
    except (OSError, ValueError):  # a stream that cannot seek: nothing more to check
        return
    if tail.strip(b"\r\n"):
        raise WarcError(
            f"the file ends with {size - end:,} bytes that are not a complete WARC record: it "
            "is truncated or damaged",
            end,
        )


class _HeadersTooLong(Exception):
    """A record's header line, or its headers in all, passed their bound."""


class _BoundedReader(DecompressingBufferedReader):  # type: ignore[misc]
    """warcio's reader, whose ``readline`` (which warcio calls for header lines only) reads at
    most ``MAX_HEADER_LINE`` bytes of a line and ``header_room`` bytes between two records."""

    header_room = MAX_HEADER_BYTES

    def readline(self, length: int | None = None) -> bytes:
        bound = min(MAX_HEADER_LINE, self.header_room) + 1
        limit = bound if not length or length > bound else length
        parts: list[bytes] = []
        size = 0
        while size < limit:  # warcio's own readline may stop short of its length
            part = super().readline(limit - size)
            if not part:
                break
            parts.append(part)
            size += len(part)
            if part.endswith(b"\n"):
                break
        line = b"".join(parts)
        self.header_room -= size
        if limit == bound and size >= bound and not line.endswith(b"\n"):
            if bound <= MAX_HEADER_LINE:
                raise _HeadersTooLong(
                    f"a record's headers hold more than {MAX_HEADER_BYTES:,} bytes: the rest of "
                    "the file is not read"
                )
            raise _HeadersTooLong(
                f"a record's header line is longer than {MAX_HEADER_LINE:,} bytes: the rest of "
                "the file is not read"
            )
        return line


def _damage(error: BaseException) -> str:
    """warcio's complaint in one short line (its messages can quote a line of binary data).

    warcio raises its own ``ArchiveLoadFailed`` for bytes that are not a record, zlib's error
    for a corrupt gzip member, and plain ``AttributeError`` or ``IndexError`` for headers cut
    mid-way: on damaged input any exception from the reader means "the rest cannot be read".
    """
    text = str(error).strip()
    if isinstance(error, _HeadersTooLong):
        return text
    if isinstance(error, zlib.error):
        return f"the compressed data is damaged ({text})"
    if isinstance(error, EOFError):
        return "the file ends in the middle of a record: it is truncated"
    if isinstance(error, AttributeError | IndexError | KeyError | TypeError):
        return "a record's headers are cut short or damaged: the file is truncated or damaged"
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    first = first.split(", first line:", 1)[0].split(": b'", 1)[0]
    return f"not a WARC record ({first[:120] or type(error).__name__})"


def _warc_date(text: str) -> datetime:
    digits = "".join(ch for ch in text if ch.isdigit())[:14]
    return cdx.parse_timestamp(digits)
