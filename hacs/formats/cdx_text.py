"""The Internet Archive's CDX text and classic CDX files (``ia-text``), space-separated.

Pure module: see ``hacs.formats.cdx`` for the dialects and how bad lines are counted.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from hacs.formats.cdx_record import (
    CdxError,
    CdxRecord,
    CdxStats,
    RowLimits,
    accepted,
    make_record,
    numbered_lines,
)

__all__ = ["iter_ia_text"]

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
    layout = _Layout()
    for number, line in numbered_lines(source, stats):
        fields = line.split()
        columns = layout.columns(fields, number, stats)
        if columns is None:
            continue
        record = _fast_record(fields, columns)
        if record is None:
            record = _checked_record(fields, columns, number, stats)
        if record is not None and accepted(record, number, stats, limits):
            yield record


@dataclass
class _Layout:
    """Where a text CDX's fields are: its `` CDX ...`` header's columns, or each line's count's."""

    header: dict[str, int] | None = None
    header_size: int = 0
    after_blank: bool = False  # the line before was blank: a lone token is the resume key

    def columns(self, fields: list[str], number: int, stats: CdxStats) -> dict[str, int] | None:
        """The columns of a line's fields, or None for a line that holds no record: a blank
        line, the header, the resume key, or a line of the wrong length (counted as skipped)."""
        if not fields:
            self.after_blank = True
            return None
        if fields[0] == "CDX":
            self._read_header(fields, number)
            return None
        if len(fields) == 1 and self.after_blank:
            stats.resume_key = fields[0]
            return None
        self.after_blank = False
        if self.header is not None:
            if len(fields) != self.header_size:
                found = len(fields)
                stats.skip(
                    number,
                    f"expected {self.header_size} fields (per the CDX header), found {found}",
                )
                return None
            return self.header
        columns = _DEFAULT_LAYOUTS.get(len(fields))
        if columns is None:
            stats.skip(number, f"expected 7, 9, 10 or 11 fields, found {len(fields)}")
        return columns

    def _read_header(self, fields: list[str], number: int) -> None:
        self.header = _layout(fields[1:])
        self.header_size = len(fields) - 1
        missing = {"timestamp", "original"} - self.header.keys()
        if missing:
            raise CdxError(f"the CDX header has no {' or '.join(sorted(missing))} column", number)
        self.after_blank = False


def _checked_record(
    fields: list[str], columns: dict[str, int], number: int, stats: CdxStats
) -> CdxRecord | None:
    """The general path: checks every field and explains what is wrong with the line."""

    def get(name: str) -> str | None:
        return fields[columns[name]] if name in columns else None

    try:
        return make_record(
            get("urlkey"),
            fields[columns["timestamp"]],
            fields[columns["original"]],
            get("mimetype"),
            get("status"),
            get("digest"),
            get("length"),
        )
    except CdxError as exc:
        stats.skip(number, exc.reason)
        return None


def _fast_record(fields: list[str], columns: dict[str, int]) -> CdxRecord | None:
    """The record of a well-formed line, built without the general path's checks, or None.

    Covers what nearly every line of a real index looks like (all seven fields present, a
    14-digit timestamp, numeric or ``-`` status and length); anything else returns None and
    goes through ``make_record``, which names the problem.
    """
    if len(columns) != 7:
        return None
    status = fields[columns["status"]]
    length = fields[columns["length"]]
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
    moment = _fast_moment(fields[columns["timestamp"]])
    if moment is None:
        return None
    mimetype, digest = fields[columns["mimetype"]], fields[columns["digest"]]
    return CdxRecord(urlkey, moment, original, mimetype, status_value, digest, length_value)


def _fast_moment(stamp: str) -> datetime | None:
    """The moment of a 14-digit timestamp, or None (the general path reports what is wrong)."""
    if not (len(stamp) == 14 and stamp.isdigit() and stamp.isascii()):
        return None
    try:
        return datetime(
            int(stamp[0:4]),
            int(stamp[4:6]),
            int(stamp[6:8]),
            int(stamp[8:10]),
            int(stamp[10:12]),
            int(stamp[12:14]),
            tzinfo=UTC,
        )
    except ValueError:
        return None
