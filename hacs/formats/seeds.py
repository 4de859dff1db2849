"""Reading a librarian's seed list: CSV with a header, or one URL per line.

Pure module (stdlib and ``hacs.formats.canon``): it checks every line, canonicalises the URLs,
merges lines that name the same site (``canon.seed_key``: http/https, ``www.``, a trailing slash
and a directory page such as ``index.html`` or ``home.html`` do not count; the path's case
does), and explains every line it cannot use. A bad line never stops the good ones; only a
file that cannot be read at all (not UTF-8, empty, too large, more seeds than allowed, a CSV
without a ``url`` column) raises ``SeedFileError``.

A CSV's ``tags`` cell holds several tags separated by ``;`` (``ml;theory``); ``|`` works too,
and so does ``,`` inside a quoted cell (``"ml, theory"``). ``split_tags`` is that rule, for any
other place a librarian types tags.

A line is only accepted when what would be stored fits: the caller passes its columns' sizes
(``max_url_length``, ``max_key_length``), because tidying can lengthen a URL (each non-ASCII
character becomes up to twelve ``%XX`` characters). A line longer than ``MAX_LINE_LENGTH``
(in a CSV, a row: several lines when a quoted cell spans them) is rejected with its length and
the limit; its cells never reach the ``csv`` module, whose field size limit would raise.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from hacs.formats.canon import SeedError, is_user_directory, seed_key, validate_seed_url

_TAG_SPLIT = re.compile(r"[;|,]")
MAX_AUTHOR_LENGTH = 300
MAX_TAG_LENGTH = 100
#: The most characters a seed line (a CSV row) may have. A real one is a URL (at most 2,000, the
#: seed URL column), an author (300) and a few tags of 100: far below this. Anything longer is
#: not a seed line, and is rejected before the ``csv`` module reads it (its cells stop at
#: ``csv.field_size_limit()``, 131,072 characters, with an exception).
MAX_LINE_LENGTH = 8_192
# Characters that do not decide where a CSV cell or row ends (the reader's dialect: excel).
_ORDINARY_RUN = re.compile(r'[^",]+')


class SeedFileError(ValueError):
    """The whole file cannot be read; the message says why and what to do."""


@dataclass(frozen=True)
class SeedRow:
    line: int
    url: str
    key: str
    author: str = ""
    tags: tuple[str, ...] = ()


@dataclass(frozen=True)
class RejectedLine:
    line: int
    text: str
    reason: str


@dataclass(frozen=True)
class MergedLine:
    line: int
    url: str
    key: str
    into_line: int


@dataclass
class SeedList:
    rows: list[SeedRow] = field(default_factory=list)
    rejected: list[RejectedLine] = field(default_factory=list)
    merged: list[MergedLine] = field(default_factory=list)
    format: str = "text"


def decode_seed_file(data: bytes, *, max_bytes: int) -> str:
    if len(data) > max_bytes:
        raise SeedFileError(
            f"The file is {len(data):,} bytes; the limit is {max_bytes:,}. Split it into smaller "
            "lists and upload them one by one."
        )
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        raise SeedFileError(
            f"The file is not UTF-8 text (byte 0x{data[error.start]:02x} on line {line}). "
            "Save it as UTF-8 (in a spreadsheet: CSV UTF-8) and upload it again."
        ) from None
    return _checked_text(text)


def _checked_text(text: str) -> str:
    if "\x00" in text:
        raise SeedFileError("The file contains NUL bytes; it looks like a binary file, not text.")
    if not text.strip():
        raise SeedFileError("The file is empty: it holds no seed URLs.")
    return text


def parse_seed_list(
    data: bytes | str,
    *,
    max_bytes: int = 5 * 1024 * 1024,
    max_lines: int = 50_000,
    user_directories_only: bool = False,
    max_url_length: int | None = None,
    max_key_length: int | None = None,
) -> SeedList:
    """Parse a seed list; see the module docstring for the two accepted formats.

    ``max_lines`` is the number of seeds (lines naming a URL; not a CSV header, blank lines or
    comments). ``max_url_length`` and ``max_key_length`` are the sizes of the columns that hold
    the tidied URL and its canonical key; a longer one rejects its line (None: not checked).
    """
    text = data if isinstance(data, str) else decode_seed_file(data, max_bytes=max_bytes)
    text = _checked_text(text)
    lines = text.splitlines()
    result = SeedList()
    first_index = next(i for i, line in enumerate(lines) if line.strip())
    header = _header(lines[first_index])
    if header is not None:
        result.format = "csv"
        entries = _csv_entries(lines, first_index, header)
    else:
        entries = _text_entries(lines)
    if len(entries) > max_lines:
        raise SeedFileError(
            f"The list has {len(entries):,} seeds; the limit is {max_lines:,} seeds per upload. "
            "Split it into smaller lists and upload them one by one."
        )
    first_line_of: dict[str, int] = {}
    for line, raw, url_text, author, tags, problem in entries:
        url = key = ""
        if not problem:
            url, key, problem = _checked_seed(
                url_text, max_url_length, max_key_length, user_directories_only
            )
        if problem:
            result.rejected.append(RejectedLine(line, raw[:200], problem))
            continue
        if key in first_line_of:
            result.merged.append(MergedLine(line, url, key, first_line_of[key]))
            continue
        first_line_of[key] = line
        result.rows.append(SeedRow(line, url, key, author, tags))
    return result


def _checked_seed(
    url_text: str,
    max_url_length: int | None,
    max_key_length: int | None,
    user_directories_only: bool,
) -> tuple[str, str, str]:
    """(tidied URL, canonical key, "") of a line's URL, or ("", "", why the line is rejected)."""
    try:
        url = validate_seed_url(url_text)
        key = seed_key(url)
    except (SeedError, ValueError) as error:
        return "", "", str(error)
    too_long = _too_long(url, key, max_url_length, max_key_length)
    if too_long:
        return "", "", too_long
    if user_directories_only and not is_user_directory(url):
        return "", "", "not a user-directory homepage (no ~name in the path)"
    return url, key, ""


def seed_keys_refreshed(stored: Sequence[tuple[int, str, str]]) -> dict[int, str]:
    """The new keys of stored sites whose key is not ``seed_key`` of their seed URL.

    ``stored`` holds ``(site id, stored key, seed URL)``. Sites stored under an older rule (the
    path lower-cased, fewer directory page names) get the key a seed list would give them now,
    except where that would make two sites one: then the site already holding the key, or else
    the oldest (smallest id), takes it and the others keep theirs, so nothing stored is merged
    or lost. A seed URL that no longer parses keeps its key.
    """
    wanted: dict[int, str] = {}
    for pk, key, url in stored:
        try:
            new = seed_key(url)
        except ValueError:
            continue
        if new != key:
            wanted[pk] = new
    current = {pk: key for pk, key, _url in stored}
    holder = {key: pk for pk, key in current.items()}
    moved = True
    while moved:  # a site moving frees its old key for another (at most len(wanted) passes)
        moved = False
        for pk in sorted(wanted):
            new = wanted[pk]
            if current[pk] != new and new not in holder:
                del holder[current[pk]]
                holder[new], current[pk] = pk, new
                moved = True
    return {pk: new for pk, new in wanted.items() if current[pk] == new}


def _too_long(url: str, key: str, max_url: int | None, max_key: int | None) -> str:
    """Why a tidied URL or its key does not fit its column ("" when both fit)."""
    if max_url is not None and len(url) > max_url:
        return (
            f"the URL is too long once tidied ({len(url):,} characters, non-ASCII characters "
            f"percent-encoded; the limit is {max_url:,})"
        )
    if max_key is not None and len(key) > max_key:
        return (
            f"the URL's canonical key is too long ({len(key):,} characters; the limit is "
            f"{max_key:,})"
        )
    return ""


def _header(line: str) -> list[str] | None:
    """The lower-cased column names when the first line is a CSV header, else None."""
    if len(line) > MAX_LINE_LENGTH:
        return None  # no header: a plain list, whose first line is then rejected as too long
    try:
        cells = [cell.strip().lower() for cell in next(csv.reader([line]))]
    except csv.Error:  # only if something in this process lowered csv.field_size_limit
        return None
    if "url" in cells:
        return cells
    looks_like_header = len(cells) > 1 and not any("." in cell or "/" in cell for cell in cells)
    if looks_like_header:
        raise SeedFileError(
            f"The CSV header ({', '.join(cells)}) has no 'url' column. The first line must name "
            "the columns, with 'url' required and 'author' and 'tags' optional."
        )
    return None


class Entry(NamedTuple):
    """A seed line as read: its number, text, URL, author and tags, or why it is rejected."""

    line: int
    raw: str
    url: str = ""
    author: str = ""
    tags: tuple[str, ...] = ()
    problem: str = ""


def _line_too_long(length: int, first: int, last: int) -> str:
    span = f" (lines {first}–{last}: a quoted cell spans them)" if last > first else ""
    return f"{length:,} characters{span}, longer than the {MAX_LINE_LENGTH:,} a seed line may have"


@dataclass
class _Row:
    """The lines of the CSV row being read, as ``_csv_entries`` feeds them to the reader."""

    first: int = 0
    last: int = 0
    length: int = 0  # characters of its lines, with the line breaks between them


def _csv_entries(lines: list[str], header_index: int, header: list[str]) -> list[Entry]:
    """The rows after the header, each numbered by its first line in the file (a quoted cell
    may hold line breaks, so rows and lines are counted apart)."""
    url_col = header.index("url")
    author_col = header.index("author") if "author" in header else None
    tags_col = header.index("tags") if "tags" in header else None
    row = _Row()

    def feed() -> Iterator[str]:
        for number in range(header_index + 2, len(lines) + 1):
            line = lines[number - 1]
            row.last = number
            row.length += len(line) + (1 if row.length else 0)
            if row.length > MAX_LINE_LENGTH:
                # The row is rejected whatever it holds; the reader only has to find where it
                # ends. Each run of characters other than '"' and ',' made one character keeps
                # that place (such characters only ever extend the cell they are in) and keeps
                # the cells short, so a cell of any length never reaches csv's field size limit.
                line = _ORDINARY_RUN.sub("x", line)
            yield line + "\n"

    reader = csv.reader(feed())
    entries: list[Entry] = []
    while True:
        row.first, row.length = header_index + 2 + reader.line_num, 0
        problem = ""
        try:
            cells = next(reader)
        except StopIteration:
            break
        except csv.Error as error:
            # Only a pathological row still overflows (a long line of quotes, each pair one
            # character of a cell), or one under a field_size_limit lowered elsewhere in this
            # process: the row is rejected, and the reader starts afresh on the next line.
            cells, problem = [], f"not readable as CSV: {error}"
        if row.length > MAX_LINE_LENGTH:
            problem = _line_too_long(row.length, row.first, row.last)
        if problem:
            entries.append(Entry(row.first, lines[row.first - 1], problem=problem))
            continue
        raw = ",".join(cells)
        if not any(cell.strip() for cell in cells):
            continue
        if len(cells) <= url_col:
            entries.append(Entry(row.first, raw))
            continue
        author = _cell(cells, author_col).strip()[:MAX_AUTHOR_LENGTH]
        tags = _tags(_cell(cells, tags_col))
        entries.append(Entry(row.first, raw, cells[url_col], author, tags))
    return entries


def _cell(cells: list[str], column: int | None) -> str:
    """The cell in ``column``, or "" when the column is absent or the row is short."""
    return cells[column] if column is not None and column < len(cells) else ""


def split_tags(text: str) -> tuple[str, ...]:
    """The tags in ``text`` as a CSV's tags cell is read (``"ml; theory"`` -> ``("ml",
    "theory")``): separated by ``;``, ``|`` or ``,``, stripped, no empty tag, each once, in
    order. Not cut to ``MAX_TAG_LENGTH``: a form says when a tag is too long."""
    return tuple(dict.fromkeys(t.strip() for t in _TAG_SPLIT.split(text) if t.strip()))


def _tags(cell: str) -> tuple[str, ...]:
    return tuple(dict.fromkeys(tag[:MAX_TAG_LENGTH] for tag in split_tags(cell)))


def _text_entries(lines: list[str]) -> list[Entry]:
    entries: list[Entry] = []
    for index, raw in enumerate(lines):
        if len(raw) > MAX_LINE_LENGTH and raw.strip():
            problem = _line_too_long(len(raw), index + 1, index + 1)
            entries.append(Entry(index + 1, raw, problem=problem))
            continue
        stripped = raw.strip()
        if not stripped or stripped.startswith("#"):
            continue
        entries.append(Entry(index + 1, raw, stripped))
    return entries
