"""The JSON dialects of CDX: the Internet Archive's ``output=json``, pywb's JSON lines, CDXJ.

Pure module: see ``hacs.formats.cdx`` for the dialects and how bad lines are counted.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator

from hacs.formats.cdx_record import (
    CdxError,
    CdxRecord,
    CdxStats,
    RowLimits,
    accepted,
    field_text,
    numbered_lines,
    record_from_mapping,
)

__all__ = ["iter_cdxj", "iter_ia_json", "iter_pywb_json"]


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
        stats.resume_key = field_text(rows[-1][0], "") or None
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
            record = record_from_mapping(dict(zip(header, row, strict=True)))
        except CdxError as exc:
            stats.skip(number, exc.reason)
            continue
        if accepted(record, number, stats, limits):
            yield record


# --- pywb JSON lines and CDXJ ------------------------------------------------------------


def iter_pywb_json(
    source: str | Iterable[str], stats: CdxStats | None = None, limits: RowLimits | None = None
) -> Iterator[CdxRecord]:
    """Records from pywb's ``output=json``: one object per line (``url``, ``mime``, ``status``)."""
    stats = stats if stats is not None else CdxStats()
    limits = limits if limits is not None else RowLimits.until_tomorrow()
    for number, line in numbered_lines(source, stats):
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
            record = record_from_mapping(row)
        except CdxError as exc:
            stats.skip(number, exc.reason)
            continue
        if accepted(record, number, stats, limits):
            yield record


def iter_cdxj(
    source: str | Iterable[str], stats: CdxStats | None = None, limits: RowLimits | None = None
) -> Iterator[CdxRecord]:
    """Records from CDXJ lines: ``urlkey timestamp {"url": ..., "mime": ..., ...}``.

    Lines starting with ``!`` are CDXJ metadata (``!OpenWayback-CDXJ 1.0``) and are passed over.
    """
    stats = stats if stats is not None else CdxStats()
    limits = limits if limits is not None else RowLimits.until_tomorrow()
    for number, line in numbered_lines(source, stats):
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
            record = record_from_mapping({**row, "urlkey": urlkey, "timestamp": timestamp})
        except CdxError as exc:
            stats.skip(number, exc.reason)
            continue
        if accepted(record, number, stats, limits):
            yield record
