"""CDX rows as HACS reads them: the record type, Wayback timestamps and what a stored row may hold.

Pure module (stdlib only, plus ``hacs.formats.canon``): no Django, no network. The parsers of
each dialect (``hacs.formats.cdx_text``, ``hacs.formats.cdx_json``) build their records here;
``hacs.formats.cdx`` is the face the rest of HACS imports (see its docstring for the dialects).

A capture's time has one form in HACS: an aware UTC ``datetime``. ``parse_timestamp`` reads a
Wayback timestamp into it, ``format_timestamp`` writes it back, and nothing between a CDX line
and the database holds it in another form.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, time, timedelta
from enum import StrEnum
from functools import lru_cache
from typing import Any, NamedTuple

from hacs.formats.canon import canonical_url

__all__ = [
    "EARLIEST_CAPTURE",
    "HTML_TYPES",
    "MAX_JSON_CHARS",
    "MAX_LINE_CHARS",
    "MAX_PROBLEMS",
    "REVISIT_TYPE",
    "CdxError",
    "CdxParseResult",
    "CdxRecord",
    "CdxStats",
    "Dialect",
    "RowLimits",
    "RowProblem",
    "accepted",
    "bare_digest",
    "field_text",
    "format_timestamp",
    "is_html_type",
    "make_record",
    "memento_url",
    "numbered_lines",
    "parse_timestamp",
    "record_from_mapping",
    "row_problem",
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


def field_text(value: object, default: str = "-") -> str:
    if value is None or value == "":
        return default
    return value if isinstance(value, str) else str(value)


def make_record(
    urlkey: object,
    timestamp: object,
    original: object,
    mimetype: object,
    status: object,
    digest: object,
    length: object,
) -> CdxRecord:
    original_text = field_text(original, "")
    if not original_text:
        raise CdxError("the original URL is missing")
    if not isinstance(timestamp, str | int) or isinstance(timestamp, bool):
        raise CdxError(f"timestamp {timestamp!r} is not a string of digits")
    moment = parse_timestamp(str(timestamp))
    key = field_text(urlkey, "")
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
        mimetype=field_text(mimetype),
        status=_optional_int(status, "status"),
        digest=field_text(digest),
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


def record_from_mapping(row: Mapping[str, Any]) -> CdxRecord:
    values: dict[str, Any] = {}
    for name, aliases in _FIELD_NAMES.items():
        values[name] = next((row[a] for a in aliases if a in row), None)
    if values["timestamp"] is None:
        raise CdxError("the timestamp field is missing")
    return make_record(**values)


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


def accepted(record: CdxRecord, number: int, stats: CdxStats, limits: RowLimits) -> bool:
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


def numbered_lines(source: str | Iterable[str], stats: CdxStats) -> Iterator[tuple[int, str]]:
    """Numbered lines, each one over ``MAX_LINE_CHARS`` skipped as a bad line."""
    # str.splitlines would also split on \x0b, \x1c, U+2028...; CDX lines end with \n.
    items = source.split("\n") if isinstance(source, str) else source
    for number, item in enumerate(items, start=1):
        line = item.rstrip("\r\n")
        if len(line) > MAX_LINE_CHARS:
            stats.skip(number, f"the line is longer than {MAX_LINE_CHARS:,} characters")
            continue
        yield number, line
