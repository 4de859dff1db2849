"""CDX index rows: one record type and a parser per dialect.

Pure module (stdlib only, plus ``hacs.formats.canon``): no Django, no network.
``archive/wayback.py`` fetches; this module only reads what came back, or what a CDX file holds.

Dialects (``Dialect``):

* ``ia-text`` -- the Internet Archive CDX server's default output, space-separated
  ``urlkey timestamp original mimetype statuscode digest length``; also the classic CDX files
  written by pywb, OpenWayback and IA tools (9, 10 or 11 fields, e.g. a `` CDX N b a m s k r M
  S V g`` header). With ``showResumeKey=true`` the page ends with a blank line and the key.
* ``ia-json`` -- ``output=json``: an array of arrays whose first row names the fields; with
  ``showResumeKey=true`` it ends with ``[]`` and ``["<resume key>"]``.
* ``pywb-json`` -- pywb's ``output=json``: one JSON object per line (``url``, ``mime``,
  ``status``; revisits have ``mime`` ``warc/revisit`` and no or ``-`` status).
* ``cdxj`` -- ``urlkey timestamp {json}`` lines (pywb's and OpenWayback's index files).

The parsers never raise for a bad line: they skip it and count it in a ``CdxStats`` (with the
first ``MAX_PROBLEMS`` line numbers and reasons), so one broken row in ten thousand costs one
row. A line that parses but cannot be a stored capture is a bad line too (``row_problem``: a
NUL byte, a capture time before 1996 or after tomorrow, a status that is not HTTP's, a field
longer than its database column). They raise ``CdxError`` only when the document as a whole is
unusable (not JSON, no header row, a CDX header without a timestamp column, a compressed file
cut short); ``read_cdx_file`` reads a file as a stream, so every record before the damage has
been yielded by then.

A file is read a bounded line at a time: a line longer than ``MAX_LINE_CHARS`` is a bad line,
passed over without being held (a 2.1 MB ``.cdx.gz`` holding one 2 GiB line peaked at 4.40 GB
when lines were read whole). An IA JSON file is one document, read whole, of at most
``MAX_JSON_CHARS``.
"""

from __future__ import annotations

import gzip
import io
import json
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, time, timedelta
from enum import StrEnum
from functools import lru_cache
from typing import Any, BinaryIO, NamedTuple

from hacs.formats.canon import canonical_url

__all__ = [
    "HTML_TYPES",
    "MAX_JSON_CHARS",
    "MAX_LINE_CHARS",
    "MAX_PROBLEMS",
    "CdxError",
    "CdxParseResult",
    "CdxRecord",
    "CdxStats",
    "Dialect",
    "EARLIEST_CAPTURE",
    "RowLimits",
    "RowProblem",
    "bare_digest",
    "REVISIT_TYPE",
    "format_timestamp",
    "memento_url",
    "is_html_type",
    "iter_cdxj",
    "iter_ia_json",
    "iter_ia_text",
    "iter_pywb_json",
    "parse_cdx",
    "parse_timestamp",
    "read_cdx_file",
    "row_problem",
    "sniff_dialect",
]

#: Reasons kept per parse; the count of skipped lines is always exact.
MAX_PROBLEMS = 100
#: The longest line read from a CDX file or answer, in characters (real lines are a few hundred;
#: a CDXJ line with long URLs a few thousand).
MAX_LINE_CHARS = 1024 * 1024
#: The longest IA JSON document read from a file (it is parsed whole), in characters.
MAX_JSON_CHARS = 64 * 1024 * 1024

#: MIME types that make a capture an HTML page (DESIGN.md rule 1), compared without parameters.
HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})

REVISIT_TYPE = "warc/revisit"


class CdxError(ValueError):
    """A CDX line or document that cannot be read; names the line when there is one."""

    def __init__(self, reason: str, line_number: int | None = None) -> None:
        self.reason = reason
        self.line_number = line_number
        super().__init__(f"line {line_number}: {reason}" if line_number is not None else reason)


class Dialect(StrEnum):
    IA_TEXT = "ia-text"
    IA_JSON = "ia-json"
    PYWB_JSON = "pywb-json"
    CDXJ = "cdxj"


class CdxRecord(NamedTuple):
    """One CDX row. ``status`` and ``length`` are None where the index says ``-``.

    A named tuple rather than a frozen dataclass: an import builds millions of these, and a
    tuple is several times cheaper to create while being just as immutable.
    """

    urlkey: str
    timestamp: datetime  # aware, UTC
    original: str
    mimetype: str
    status: int | None
    digest: str
    length: int | None
    # A redirect's Location as the source recorded it (a WARC response's header); "" when the
    # source does not say, as CDX servers do not.
    location: str = ""

    @property
    def timestamp14(self) -> str:
        """The 14-digit Wayback timestamp (``20191001012455``), as used in memento URLs."""
        return format_timestamp(self.timestamp)

    @property
    def is_revisit(self) -> bool:
        """A WARC revisit record: "same content as before", with no body of its own.

        The Internet Archive prints ``warc/revisit`` and status ``-``; pywb prints
        ``warc/revisit`` and, when the revisit record carries HTTP headers, their status.
        """
        return self.status is None or _bare_type(self.mimetype) == REVISIT_TYPE

    @property
    def is_html(self) -> bool:
        return is_html_type(self.mimetype)


@lru_cache(maxsize=1024)
def _bare_type(mimetype: str) -> str:
    # Cached: an archive uses a handful of types over millions of rows.
    return mimetype.partition(";")[0].strip().lower()


def bare_digest(value: str) -> str:
    """A payload digest without its ``sha1:`` prefix (WARC headers carry it, CDX rows do not)."""
    value = value.strip()
    return value.split(":", 1)[1] if value.lower().startswith("sha1:") else value


def is_html_type(mimetype: str | None) -> bool:
    """True for ``text/html`` and ``application/xhtml+xml``, ignoring parameters and case."""
    return mimetype is not None and _bare_type(mimetype) in HTML_TYPES


# --- timestamps --------------------------------------------------------------------------

# Wayback pads a short timestamp character by character from the earliest instant, so
# "2019" is 2019-01-01 00:00:00 and "201910" is 2019-10-01 (the same template that
# OpenWayback's Timestamp.padStartDateStr and cdx_toolkit use).
_PAD_TEMPLATE = "00000101000000"
# More than 14 digits: fractions of a second (WARC/1.1 dates, 17-digit Heritrix log stamps).
# Longer than this is not a timestamp.
_MAX_DIGITS = 20


def parse_timestamp(text: str) -> datetime:
    """Parse a Wayback timestamp (``yyyyMMddhhmmss``) into an aware UTC datetime.

    * 4 to 13 digits are padded the way Wayback pads them (``2019`` -> 2019-01-01 00:00:00).
    * 15 to 20 digits carry fractions of a second; they are dropped, because Wayback
      addresses captures by the second and a 14-digit key is what the rest of HACS stores.
    * Impossible values raise ``CdxError``: month 00 or 13, day 00 or Feb 30, hour 24,
      minute or second 60, non-digits. The Internet Archive's index does hold a few rows from
      crawls in 2000 with a "00" wrongly inserted before the month or day (``20000012170449``,
      ``20000800241623``; see edgi-govdata-archiving/wayback's ``parse_timestamp``). That
      client repairs them by guessing that the seconds were cut off; we reject them instead --
      the repaired time is a guess, and an unparseable timestamp is not an observation
      (DESIGN.md rule 1). The parsers count such rows as skipped.
    """
    digits = text.strip()
    if not (digits.isascii() and digits.isdigit()):
        raise CdxError(f"timestamp {text!r} is not a string of digits")
    n = len(digits)
    if n < 4:
        raise CdxError(f"timestamp {text!r} is too short (fewer than 4 digits)")
    if n > _MAX_DIGITS:
        raise CdxError(f"timestamp {text!r} is too long (more than {_MAX_DIGITS} digits)")
    digits = digits[:14] if n >= 14 else digits + _PAD_TEMPLATE[n:]
    try:
        return datetime(
            int(digits[0:4]),
            int(digits[4:6]),
            int(digits[6:8]),
            int(digits[8:10]),
            int(digits[10:12]),
            int(digits[12:14]),
            tzinfo=UTC,
        )
    except ValueError as exc:
        raise CdxError(f"impossible timestamp {text!r}: {exc}") from None


def format_timestamp(moment: datetime) -> str:
    """The 14-digit Wayback timestamp of a datetime (naive datetimes are taken as UTC)."""
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC)
    return moment.strftime("%Y%m%d%H%M%S")


def memento_url(wayback_url: str, moment: datetime | str, url: str, *, raw: bool = False) -> str:
    """The address of a capture in a Wayback Machine: ``{wayback}/{timestamp14}/{url}``.

    ``raw`` asks for the page as it was captured (``id_``: no banner, no rewritten links),
    which is what HACS parses; without it, the replay a person reads. ``moment`` is a datetime
    or an already formatted timestamp.
    """
    stamp = moment if isinstance(moment, str) else format_timestamp(moment)
    return f"{wayback_url.rstrip('/')}/{stamp}{'id_' if raw else ''}/{url}"


# --- records from raw fields -------------------------------------------------------------


def _optional_int(value: object, name: str) -> int | None:
    if type(value) is str and value.isdigit() and value.isascii():
        return int(value)  # the common case, first
    if value is None or value == "" or value == "-":
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and value.isascii() and value.isdigit():
        return int(value)
    raise CdxError(f"{name} {value!r} is not a number or '-'")


def _text(value: object, default: str = "-") -> str:
    if value is None or value == "":
        return default
    return value if isinstance(value, str) else str(value)


def _make_record(
    urlkey: object,
    timestamp: object,
    original: object,
    mimetype: object,
    status: object,
    digest: object,
    length: object,
) -> CdxRecord:
    original_text = _text(original, "")
    if not original_text:
        raise CdxError("the original URL is missing")
    if not isinstance(timestamp, str | int) or isinstance(timestamp, bool):
        raise CdxError(f"timestamp {timestamp!r} is not a string of digits")
    moment = parse_timestamp(str(timestamp))
    key = _text(urlkey, "")
    if not key:
        # Some `fl=` field lists leave the urlkey out; it is the SURT of the original.
        try:
            key = canonical_url(original_text)
        except ValueError as exc:
            raise CdxError(f"no urlkey, and the original URL is unusable: {exc}") from None
    return CdxRecord(
        urlkey=key,
        timestamp=moment,
        original=original_text,
        mimetype=_text(mimetype),
        status=_optional_int(status, "status"),
        digest=_text(digest),
        length=_optional_int(length, "length"),
    )


# Field names by dialect; the first name found wins.
_FIELD_NAMES: dict[str, tuple[str, ...]] = {
    "urlkey": ("urlkey",),
    "timestamp": ("timestamp",),
    "original": ("original", "url"),
    "mimetype": ("mimetype", "mime"),
    "status": ("statuscode", "status"),
    "digest": ("digest",),
    "length": ("length",),
}


def _record_from_mapping(row: Mapping[str, Any]) -> CdxRecord:
    values: dict[str, Any] = {}
    for name, aliases in _FIELD_NAMES.items():
        values[name] = next((row[a] for a in aliases if a in row), None)
    if values["timestamp"] is None:
        raise CdxError("the timestamp field is missing")
    return _make_record(**values)


# --- statistics --------------------------------------------------------------------------


@dataclass
class CdxStats:
    """What a parser has read so far: rows parsed, lines skipped and why, a resume key."""

    parsed: int = 0
    skipped: int = 0
    problems: list[tuple[int, str]] = field(default_factory=list)
    resume_key: str | None = None

    def skip(self, line_number: int, reason: str) -> None:
        self.skipped += 1
        if len(self.problems) < MAX_PROBLEMS:
            self.problems.append((line_number, reason))


# --- what a stored row can hold ----------------------------------------------------------

#: The first web archive crawls are from 1996: a capture time before it is a broken row.
EARLIEST_CAPTURE = datetime(1996, 1, 1, tzinfo=UTC)
# SQL's widest integer column (bigint).
_BIGINT_MAX = 2**63 - 1


@dataclass(frozen=True)
class RowLimits:
    """What a capture row may hold to be stored.

    Time bounds: nothing was archived before 1996, and nothing after tomorrow (a day of grace
    for clocks and time zones) -- one capture dated 2099 would otherwise stretch a site's last
    interval by decades. Sizes are the database columns' in characters; the caller reads them
    from its models (None: not checked here). ``status`` is HTTP's three-digit range.
    """

    latest: datetime
    earliest: datetime = EARLIEST_CAPTURE
    urlkey: int | None = None
    mimetype: int | None = None
    digest: int | None = None
    status: tuple[int, int] = (100, 999)
    length: tuple[int, int] = (0, _BIGINT_MAX)

    @classmethod
    def until_tomorrow(cls, now: datetime | None = None) -> RowLimits:
        """Limits whose latest capture time is the end of tomorrow (UTC) after ``now``."""
        day = (now or datetime.now(UTC)).astimezone(UTC).date() + timedelta(days=2)
        return cls(latest=datetime.combine(day, time(), tzinfo=UTC) - timedelta(seconds=1))


class RowProblem(NamedTuple):
    """Why a record cannot be stored: the field at fault and a sentence naming the value."""

    field: str
    reason: str


def row_problem(record: CdxRecord, limits: RowLimits) -> RowProblem | None:
    """The first reason ``record`` cannot be stored under ``limits``, or None when it can."""
    moment = record.timestamp
    if moment < limits.earliest:
        return RowProblem(
            "timestamp",
            f"timestamp {format_timestamp(moment)} is before {limits.earliest:%Y}, when web "
            "archiving began",
        )
    if moment > limits.latest:
        return RowProblem(
            "timestamp",
            f"timestamp {format_timestamp(moment)} is in the future (after "
            f"{limits.latest:%Y-%m-%d})",
        )
    text = record.urlkey + record.original + record.mimetype + record.digest
    if (
        "\x00" in text
        or not text.isascii()
        or len(record.urlkey) > (limits.urlkey or _BIGINT_MAX)
        or len(record.mimetype) > (limits.mimetype or _BIGINT_MAX)
        or len(record.digest) > (limits.digest or _BIGINT_MAX)
    ):
        # The rare case, checked field by field to name the one at fault (the test above is
        # the import's hot path: nearly every row is short ASCII).
        problem = _text_problem(record, limits)
        if problem is not None:
            return problem
    low, high = limits.status
    if record.status is not None and not low <= record.status <= high:
        return RowProblem("status", f"status {record.status} is not an HTTP status ({low}-{high})")
    low, high = limits.length
    if record.length is not None and not low <= record.length <= high:
        return RowProblem("length", f"length {record.length} is out of range ({low}-{high:,})")
    return None


def _text_problem(record: CdxRecord, limits: RowLimits) -> RowProblem | None:
    for name, label, value, size in (
        ("urlkey", "urlkey", record.urlkey, limits.urlkey),
        ("url", "URL", record.original, None),
        ("mimetype", "MIME type", record.mimetype, limits.mimetype),
        ("digest", "digest", record.digest, limits.digest),
    ):
        if "\x00" in value:
            return RowProblem(name, f"the {label} contains a NUL byte")
        if not value.isascii():
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                return RowProblem(name, f"the {label} holds a lone surrogate (not valid Unicode)")
        if size is not None and len(value) > size:
            return RowProblem(
                name, f"the {label} is {len(value):,} characters long; at most {size:,} fit"
            )
    return None


def _accepted(record: CdxRecord, number: int, stats: CdxStats, limits: RowLimits) -> bool:
    """Count ``record`` as parsed when it can be stored, else as a skipped line; say which."""
    problem = row_problem(record, limits)
    if problem is None:
        stats.parsed += 1
        return True
    stats.skip(number, problem.reason)
    return False


@dataclass(frozen=True)
class CdxParseResult:
    """A whole document parsed: the records, in order, and the parser's statistics."""

    dialect: Dialect
    records: tuple[CdxRecord, ...]
    parsed: int
    skipped: int
    problems: tuple[tuple[int, str], ...]
    resume_key: str | None


def _lines(source: str | Iterable[str], stats: CdxStats) -> Iterator[tuple[int, str]]:
    """Numbered lines, each one over ``MAX_LINE_CHARS`` skipped as a bad line."""
    # str.splitlines would also split on \x0b, \x1c, U+2028...; CDX lines end with \n.
    items = source.split("\n") if isinstance(source, str) else source
    for number, item in enumerate(items, start=1):
        line = item.rstrip("\r\n")
        if len(line) > MAX_LINE_CHARS:
            stats.skip(number, f"the line is longer than {MAX_LINE_CHARS:,} characters")
            continue
        yield number, line


# --- Internet Archive text and classic CDX files -----------------------------------------

# Column letters of the classic CDX format (OpenWayback's CDX spec); the ones HACS reads.
_LETTERS = {
    "N": "urlkey",  # massaged (SURT) url
    "A": "urlkey",  # canonicalised url, in old files without N
    "b": "timestamp",
    "a": "original",
    "m": "mimetype",
    "s": "status",
    "k": "digest",
    "S": "length",  # compressed record length
    "n": "length",  # arc document length, in old files without S
}
# Layouts by field count when there is no header (the ones pywb's CDXObject recognises).
_LAYOUTS = {
    7: "N b a m s k S",  # the IA CDX server's default fields
    9: "N b a m s k r V g",
    10: "N b a m s k r M V g",
    11: "N b a m s k r M S V g",
}


def _layout(letters: Sequence[str]) -> dict[str, int]:
    columns: dict[str, int] = {}
    for index, letter in enumerate(letters):
        name = _LETTERS.get(letter)
        if name is not None and name not in columns:
            columns[name] = index
    return columns


_DEFAULT_LAYOUTS = {count: _layout(spec.split()) for count, spec in _LAYOUTS.items()}


def iter_ia_text(
    source: str | Iterable[str], stats: CdxStats | None = None, limits: RowLimits | None = None
) -> Iterator[CdxRecord]:
    """Records from space-separated CDX text: the IA server's output or a classic CDX file.

    Without a `` CDX ...`` header, each line's field count picks the layout (7, 9, 10 or 11
    fields). A blank line followed by a single token is the resume key
    (``showResumeKey=true``); it goes to ``stats.resume_key``, exactly as printed. Lines that
    cannot be stored under ``limits`` (``RowLimits.until_tomorrow()`` by default) are skipped.
    """
    stats = stats if stats is not None else CdxStats()
    limits = limits if limits is not None else RowLimits.until_tomorrow()
    header: dict[str, int] | None = None
    header_size = 0
    after_blank = False
    for number, line in _lines(source, stats):
        fields = line.split()
        if not fields:
            after_blank = True
            continue
        if fields[0] == "CDX":
            header = _layout(fields[1:])
            header_size = len(fields) - 1
            missing = {"timestamp", "original"} - header.keys()
            if missing:
                raise CdxError(
                    f"the CDX header has no {' or '.join(sorted(missing))} column", number
                )
            after_blank = False
            continue
        if len(fields) == 1 and after_blank:
            stats.resume_key = fields[0]
            continue
        after_blank = False
        if header is not None:
            columns = header
            if len(fields) != header_size:
                stats.skip(
                    number,
                    f"expected {header_size} fields (per the CDX header), found {len(fields)}",
                )
                continue
        else:
            found = _DEFAULT_LAYOUTS.get(len(fields))
            if found is None:
                stats.skip(number, f"expected 7, 9, 10 or 11 fields, found {len(fields)}")
                continue
            columns = found
        fast = _fast_record(fields, columns)
        if fast is not None:
            if _accepted(fast, number, stats, limits):
                yield fast
            continue
        # The general path: checks every field and explains what is wrong with the line.
        get = fields.__getitem__
        try:
            record = _make_record(
                get(columns["urlkey"]) if "urlkey" in columns else None,
                get(columns["timestamp"]),
                get(columns["original"]),
                get(columns["mimetype"]) if "mimetype" in columns else None,
                get(columns["status"]) if "status" in columns else None,
                get(columns["digest"]) if "digest" in columns else None,
                get(columns["length"]) if "length" in columns else None,
            )
        except CdxError as exc:
            stats.skip(number, exc.reason)
            continue
        if _accepted(record, number, stats, limits):
            yield record


def _fast_record(fields: list[str], columns: dict[str, int]) -> CdxRecord | None:
    """The record of a well-formed line, built without the general path's checks, or None.

    Covers what nearly every line of a real index looks like (all seven fields present, a
    14-digit timestamp, numeric or ``-`` status and length); anything else returns None and
    goes through ``_make_record``, which names the problem.
    """
    if len(columns) != 7:
        return None
    stamp = fields[columns["timestamp"]]
    status = fields[columns["status"]]
    length = fields[columns["length"]]
    if not (len(stamp) == 14 and stamp.isdigit() and stamp.isascii()):
        return None
    if status == "-":
        status_value = None
    elif status.isdigit() and status.isascii():
        status_value = int(status)
    else:
        return None
    if length == "-":
        length_value = None
    elif length.isdigit() and length.isascii():
        length_value = int(length)
    else:
        return None
    urlkey = fields[columns["urlkey"]]
    original = fields[columns["original"]]
    if urlkey in ("", "-") or original in ("", "-"):
        return None
    try:
        moment = datetime(
            int(stamp[0:4]),
            int(stamp[4:6]),
            int(stamp[6:8]),
            int(stamp[8:10]),
            int(stamp[10:12]),
            int(stamp[12:14]),
            tzinfo=UTC,
        )
    except ValueError:
        return None  # the general path reports the impossible date
    return CdxRecord(
        urlkey,
        moment,
        original,
        fields[columns["mimetype"]],
        status_value,
        fields[columns["digest"]],
        length_value,
    )


# --- Internet Archive JSON ---------------------------------------------------------------


def iter_ia_json(
    text: str, stats: CdxStats | None = None, limits: RowLimits | None = None
) -> Iterator[CdxRecord]:
    """Records from the IA CDX server's ``output=json``: an array of arrays, header first.

    Line numbers are row numbers (the header is row 1), which are the line numbers of the
    server's one-row-per-line output. A final one-element row is the resume key.
    """
    stats = stats if stats is not None else CdxStats()
    limits = limits if limits is not None else RowLimits.until_tomorrow()
    try:
        data = json.loads(text) if text.strip() else []
    except json.JSONDecodeError as exc:
        raise CdxError(f"not valid JSON: {exc.msg} (column {exc.colno})", exc.lineno) from None
    if not isinstance(data, list):
        raise CdxError("expected a JSON array of rows")
    if not data:
        return
    header = data[0]
    if not (isinstance(header, list) and all(isinstance(name, str) for name in header)):
        raise CdxError("the first row is not a header of field names", 1)
    if "timestamp" not in header:
        raise CdxError("the header row has no 'timestamp' field", 1)
    rows = data[1:]
    if len(header) > 1 and rows and isinstance(rows[-1], list) and len(rows[-1]) == 1:
        stats.resume_key = _text(rows[-1][0], "") or None
        rows = rows[:-1]
    for number, row in enumerate(rows, start=2):
        if row == []:
            continue  # the separator before the resume key
        if not isinstance(row, list):
            stats.skip(number, "the row is not an array")
            continue
        if len(row) != len(header):
            stats.skip(number, f"expected {len(header)} fields, found {len(row)}")
            continue
        try:
            record = _record_from_mapping(dict(zip(header, row, strict=True)))
        except CdxError as exc:
            stats.skip(number, exc.reason)
            continue
        if _accepted(record, number, stats, limits):
            yield record


# --- pywb JSON lines and CDXJ ------------------------------------------------------------


def iter_pywb_json(
    source: str | Iterable[str], stats: CdxStats | None = None, limits: RowLimits | None = None
) -> Iterator[CdxRecord]:
    """Records from pywb's ``output=json``: one object per line (``url``, ``mime``, ``status``)."""
    stats = stats if stats is not None else CdxStats()
    limits = limits if limits is not None else RowLimits.until_tomorrow()
    for number, line in _lines(source, stats):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            stats.skip(number, f"not valid JSON: {exc.msg}")
            continue
        if not isinstance(row, dict):
            stats.skip(number, "the line is not a JSON object")
            continue
        try:
            record = _record_from_mapping(row)
        except CdxError as exc:
            stats.skip(number, exc.reason)
            continue
        if _accepted(record, number, stats, limits):
            yield record


def iter_cdxj(
    source: str | Iterable[str], stats: CdxStats | None = None, limits: RowLimits | None = None
) -> Iterator[CdxRecord]:
    """Records from CDXJ lines: ``urlkey timestamp {"url": ..., "mime": ..., ...}``.

    Lines starting with ``!`` are CDXJ metadata (``!OpenWayback-CDXJ 1.0``) and are passed over.
    """
    stats = stats if stats is not None else CdxStats()
    limits = limits if limits is not None else RowLimits.until_tomorrow()
    for number, line in _lines(source, stats):
        if not line.strip() or line.startswith("!"):
            continue
        parts = line.split(" ", 2)
        if len(parts) != 3 or not parts[2].lstrip().startswith("{"):
            stats.skip(number, "expected 'urlkey timestamp {json}'")
            continue
        urlkey, timestamp, blob = parts
        try:
            row = json.loads(blob)
        except json.JSONDecodeError as exc:
            stats.skip(number, f"not valid JSON: {exc.msg}")
            continue
        if not isinstance(row, dict):
            stats.skip(number, "the JSON part is not an object")
            continue
        try:
            record = _record_from_mapping({**row, "urlkey": urlkey, "timestamp": timestamp})
        except CdxError as exc:
            stats.skip(number, exc.reason)
            continue
        if _accepted(record, number, stats, limits):
            yield record


# --- whole documents ---------------------------------------------------------------------


def sniff_dialect(text: str) -> Dialect:
    """Guess the dialect from the first non-blank line (plain text when in doubt)."""
    for line in text.lstrip("\ufeff").split("\n"):
        stripped = line.strip()
        if not stripped:
            continue
        if stripped.startswith("["):
            return Dialect.IA_JSON
        if stripped.startswith("{"):
            return Dialect.PYWB_JSON
        if stripped.startswith("!"):
            return Dialect.CDXJ
        parts = stripped.split(" ", 2)
        if len(parts) == 3 and parts[2].lstrip().startswith("{"):
            return Dialect.CDXJ
        return Dialect.IA_TEXT
    return Dialect.IA_TEXT


def parse_cdx(
    text: str | bytes, dialect: Dialect | None = None, limits: RowLimits | None = None
) -> CdxParseResult:
    """Parse a whole CDX document in the given dialect (sniffed when None).

    Bytes are decoded as UTF-8, with undecodable bytes replaced (CDX lines are ASCII in
    practice; a stray byte must not lose the rest of the file).
    """
    if isinstance(text, bytes):
        text = text.decode("utf-8", errors="replace")
    text = text.lstrip("\ufeff")
    chosen = dialect if dialect is not None else sniff_dialect(text)
    stats = CdxStats()
    records = tuple(_records(chosen, text, stats, limits))
    return CdxParseResult(
        dialect=chosen,
        records=records,
        parsed=stats.parsed,
        skipped=stats.skipped,
        problems=tuple(stats.problems),
        resume_key=stats.resume_key,
    )


def _records(
    dialect: Dialect, source: str | Iterable[str], stats: CdxStats, limits: RowLimits | None
) -> Iterator[CdxRecord]:
    if dialect is Dialect.IA_TEXT:
        return iter_ia_text(source, stats, limits)
    if dialect is Dialect.IA_JSON:
        # One JSON document: it is read whole (json.loads), so it is valid or unusable.
        text = source if isinstance(source, str) else "".join(source)
        return iter_ia_json(text, stats, limits)
    if dialect is Dialect.PYWB_JSON:
        return iter_pywb_json(source, stats, limits)
    return iter_cdxj(source, stats, limits)


_GZIP_MAGIC = b"\x1f\x8b"


def read_cdx_file(
    stream: BinaryIO, stats: CdxStats | None = None, limits: RowLimits | None = None
) -> Iterator[CdxRecord]:
    """Records of a CDX file of any dialect, plain or gzip-compressed, read as a stream.

    Lines are decoded (UTF-8, undecodable bytes replaced) and parsed as they are read, so a
    caller that stores records in batches keeps every one before a damaged part. A line longer
    than ``MAX_LINE_CHARS`` is skipped as a bad line, never held whole. ``stream`` must be
    seekable (a file). Raises ``CdxError`` naming the line where reading stopped when the rest
    cannot be read: compressed data cut short or corrupt, an IA JSON document that is not valid
    JSON, has no header or is longer than ``MAX_JSON_CHARS``, a CDX header without a timestamp
    column.
    """
    stats = stats if stats is not None else CdxStats()
    magic = stream.read(2)
    stream.seek(-len(magic), io.SEEK_CUR)
    binary: gzip.GzipFile | BinaryIO = stream
    if magic == _GZIP_MAGIC:
        binary = gzip.GzipFile(fileobj=stream)
    text = io.TextIOWrapper(binary, encoding="utf-8-sig", errors="replace", newline="\n")
    lines = _FileLines(text)
    first: list[str] = []
    while line := lines.read_line():  # up to the first non-blank line, which names the dialect
        first.append(line)
        if line.strip():
            break
    dialect = sniff_dialect("".join(first))
    if dialect is Dialect.IA_JSON:
        yield from iter_ia_json(lines.document("".join(first)), stats, limits)
        return
    if first and _over(first[-1]):
        lines.skip_rest()
    yield from _records(dialect, _chain(first, lines), stats, limits)


def _chain(first: list[str], rest: Iterable[str]) -> Iterator[str]:
    yield from first
    yield from rest


def _over(line: str) -> bool:
    """Whether ``line``, as ``_FileLines.read_line`` read it, is the start of a longer one."""
    return len(line) > MAX_LINE_CHARS and not line.endswith("\n")


class _FileLines:
    """The lines of a text file, counted, each read ``MAX_LINE_CHARS`` + 1 characters at most
    (a longer line is passed over), with damage in compressed data as a ``CdxError``."""

    def __init__(self, text: io.TextIOWrapper) -> None:
        self.text = text
        self.count = 0

    def __iter__(self) -> Iterator[str]:
        return self

    def __next__(self) -> str:
        line = self.read_line()
        if not line:
            raise StopIteration
        if _over(line):
            self.skip_rest()  # its first characters stand for it: a bad line (``_lines``)
        return line

    def read_line(self) -> str:
        """The next line ("" at the end), its first ``MAX_LINE_CHARS`` + 1 characters at most."""
        line = self._read(self.text.readline, MAX_LINE_CHARS + 1)
        self.count += bool(line)
        return line

    def skip_rest(self) -> None:
        """Pass over the rest of a line too long to hold."""
        while _over(self._read(self.text.readline, MAX_LINE_CHARS + 1)):
            pass

    def document(self, start: str) -> str:
        """The whole file, which begins with ``start``: an IA JSON document, read whole."""
        room = MAX_JSON_CHARS + 1 - len(start)
        whole = start + (self._read(self.text.read, room) if room > 0 else "")
        if len(whole) > MAX_JSON_CHARS:
            raise CdxError(
                f"the file is a JSON document longer than {MAX_JSON_CHARS:,} characters, which "
                "HACS reads whole: split it into smaller files",
                1,
            )
        return whole

    def _read(self, read: Callable[[int], str], size: int) -> str:
        try:
            return read(size)
        except EOFError:
            raise CdxError(
                "the compressed data ends early: the file is truncated", self.count + 1
            ) from None
        except (zlib.error, gzip.BadGzipFile) as error:
            raise CdxError(f"the compressed data is damaged ({error})", self.count + 1) from None
