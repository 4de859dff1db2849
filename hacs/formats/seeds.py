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
character becomes up to twelve ``%XX`` characters).
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from hacs.formats.canon import SeedError, is_user_directory, seed_key, validate_seed_url

_TAG_SPLIT = re.compile(r"[;|,]")
MAX_AUTHOR_LENGTH = 300
MAX_TAG_LENGTH = 100


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
    for line, raw, url_text, author, tags in entries:
        try:
            url = validate_seed_url(url_text)
            key = seed_key(url)
        except (SeedError, ValueError) as error:
            result.rejected.append(RejectedLine(line, raw[:200], str(error)))
            continue
        too_long = _too_long(url, key, max_url_length, max_key_length)
        if too_long:
            result.rejected.append(RejectedLine(line, raw[:200], too_long))
            continue
        if user_directories_only and not is_user_directory(url):
            result.rejected.append(
                RejectedLine(
                    line, raw[:200], "not a user-directory homepage (no ~name in the path)"
                )
            )
            continue
        if key in first_line_of:
            result.merged.append(MergedLine(line, url, key, first_line_of[key]))
            continue
        first_line_of[key] = line
        result.rows.append(SeedRow(line, url, key, author, tags))
    return result


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
    cells = [cell.strip().lower() for cell in next(csv.reader([line]))]
    if "url" in cells:
        return cells
    looks_like_header = len(cells) > 1 and not any("." in cell or "/" in cell for cell in cells)
    if looks_like_header:
        raise SeedFileError(
            f"The CSV header ({', '.join(cells)}) has no 'url' column. The first line must name "
            "the columns, with 'url' required and 'author' and 'tags' optional."
        )
    return None


Entry = tuple[int, str, str, str, tuple[str, ...]]


def _csv_entries(lines: list[str], header_index: int, header: list[str]) -> list[Entry]:
    url_col = header.index("url")
    author_col = header.index("author") if "author" in header else None
    tags_col = header.index("tags") if "tags" in header else None
    entries: list[Entry] = []
    body = lines[header_index + 1 :]
    reader = csv.reader(io.StringIO("\n".join(body)))
    for offset, cells in enumerate(reader):
        line = header_index + 2 + offset
        raw = ",".join(cells)
        if not any(cell.strip() for cell in cells):
            continue
        if len(cells) <= url_col:
            entries.append((line, raw, "", "", ()))
            continue
        author = _cell(cells, author_col).strip()[:MAX_AUTHOR_LENGTH]
        tags = _tags(_cell(cells, tags_col))
        entries.append((line, raw, cells[url_col], author, tags))
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
        stripped = raw.strip()
        if not stripped or stripped.startswith("#"):
            continue
        entries.append((index + 1, raw, stripped, "", ()))
    return entries
