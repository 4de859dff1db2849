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
import zlib
from collections.abc import Callable, Iterable, Iterator
from typing import BinaryIO

from hacs.formats.cdx_json import iter_cdxj, iter_ia_json, iter_pywb_json
from hacs.formats.cdx_record import (
    EARLIEST_CAPTURE,
    HTML_TYPES,
    MAX_JSON_CHARS,
    MAX_LINE_CHARS,
    MAX_PROBLEMS,
    REVISIT_TYPE,
    CdxError,
    CdxParseResult,
    CdxRecord,
    CdxStats,
    Dialect,
    RowLimits,
    RowProblem,
    bare_digest,
    format_timestamp,
    is_html_type,
    memento_url,
    parse_timestamp,
    row_problem,
)
from hacs.formats.cdx_text import iter_ia_text

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
            self.skip_rest()  # its first characters stand for it: a bad line (``numbered_lines``)
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
