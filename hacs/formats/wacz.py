"""Reading WACZ files: the WARC files inside a ZIP, streamed with bounded memory.

A WACZ (webrecorder's Web Archive Collection Zipped) is a ZIP holding ``archive/*.warc.gz`` (the
crawl's records), ``indexes/`` (CDX or CDXJ), ``pages/pages.jsonl`` and ``datapackage.json``.
Browsertrix, browsertrix-crawler and ArchiveWeb.page write them. HACS reads only the WARC
entries, each through ``hacs.formats.warc.read_warc`` like a WARC file, and extracts nothing to
disk. Memory stays bounded whatever the file's size: an entry is inflated as it is read and handed
on as a stream, never read whole.

A WACZ comes from a crawler or a person HACS trusts with nothing, so before any record is read
the ZIP's directory is checked and the file refused with a sentence naming the entry
(``WaczError``) when it holds:

* an entry whose name is absolute or climbs with ``..`` (HACS extracts nothing, but no honest
  writer makes one), a name given twice, or more than ``MAX_ENTRIES`` entries;
* an encrypted entry, or a WARC entry compressed other than stored or deflated;
* an archive inside the archive: an entry named ``….zip`` or ``….wacz``, or a WARC entry that
  is itself a ZIP;
* a ZIP bomb: an entry declared to inflate to more than ``MAX_RATIO`` times its compressed size,
  or entries overlapping one another in the file (the bomb that reuses one compressed stream);
  an entry that inflates past that ratio while it is read is stopped there.

A ZIP cut short has lost its directory, which is written last. Its entries are then read one
after the other from their local headers (also those whose sizes follow their data, as streaming
writers put them), every complete record is kept, and ``WaczError`` says the file is truncated.

Pure: stdlib only.
"""

from __future__ import annotations

import re
import struct
import zipfile
import zlib
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, BinaryIO, Protocol

__all__ = ["MAX_ENTRIES", "MAX_RATIO", "WaczEntry", "WaczError", "is_wacz", "read_wacz"]

MAX_RATIO = 200  # deflate reaches ~1,000 on a bomb; text indexes compress 5-20 times
RATIO_FLOOR = 1 << 20  # an entry inflating to less than this cannot hurt, whatever its ratio
MAX_ENTRIES = 100_000
WARC_SUFFIXES = (".warc", ".warc.gz")
NESTED_SUFFIXES = (".zip", ".wacz")
KEEP_BYTES = 256 * 1024  # read-behind a WARC reader may seek back into (its look-ahead)
CHUNK = 64 * 1024

_LOCAL = b"PK\x03\x04"
_DESCRIPTOR = b"PK\x07\x08"
_LOCAL_HEADER = struct.Struct("<4s5H3L2H")
_ZIP64_EXTRA = 0x0001
_DRIVE = re.compile(r"[A-Za-z]:")


class WaczError(ValueError):
    """The WACZ is refused, or cannot be read on: ``reason`` is one sentence, ``entry`` the
    entry it names (empty for the file as a whole)."""

    def __init__(self, reason: str, entry: str = "", *, truncated: bool = False) -> None:
        self.reason = reason
        self.entry = entry
        self.truncated = truncated  # the file ends early; what came before it was read
        super().__init__(reason)


@dataclass(frozen=True)
class WaczEntry:
    """A WARC entry of a WACZ: its name, uncompressed size (None when the ZIP gives it only
    after the data) and the offset of its local header in the file."""

    name: str
    size: int | None
    offset: int


class EntryStream(Protocol):
    """What ``read_wacz`` yields for an entry: a readable stream with a WARC reader's needs."""

    failure: str

    def read(self, size: int = -1) -> bytes: ...

    def tell(self) -> int: ...

    def seek(self, offset: int, whence: int = 0) -> int: ...


def is_wacz(stream: BinaryIO) -> bool:
    """Whether the stream starts like a ZIP (a WARC file starts ``WARC/`` or with gzip's
    ``1f 8b``); it is left where it was. A buffered stream is peeked at, so that a pipe, which
    cannot seek back, is read on as a WARC file."""
    peek = getattr(stream, "peek", None)
    if callable(peek):
        return bytes(peek(4))[:4] == _LOCAL
    if not stream.seekable():
        return False
    where = stream.tell()
    try:
        return stream.read(4) == _LOCAL
    finally:
        stream.seek(where)


def read_wacz(stream: BinaryIO) -> Iterator[tuple[WaczEntry, EntryStream]]:
    """The WARC entries (``archive/*.warc.gz`` or ``*.warc``) of the WACZ in ``stream`` (a
    seekable binary file), in the order they lie in the file, each as a stream to read whole
    before the next is asked for.

    Raises ``WaczError`` before the first entry when the file is refused (see the module), and
    after the last entry it could read when the file is truncated. An entry that fails while it
    is read (its checksum, its data cut, a bomb) ends its stream early with ``failure`` set to
    the sentence saying why.
    """
    try:
        archive = zipfile.ZipFile(stream)
    except (zipfile.BadZipFile, EOFError, ValueError, struct.error):
        yield from _without_directory(stream)
        return
    with archive:
        infos = archive.infolist()
        _check_directory(infos, getattr(archive, "start_dir", None))
        for info in sorted(infos, key=lambda i: i.header_offset):
            if not _is_warc_name(info.filename):
                continue
            data = _local_data(stream, info)
            entry = _Rewindable(data, size=info.file_size, name=info.filename)
            _refuse_nested(entry, info.filename)
            yield WaczEntry(info.filename, info.file_size, info.header_offset), entry


def _local_data(stream: BinaryIO, info: zipfile.ZipInfo) -> _LocalEntry:
    """An entry's data from its local header on, with the sizes and checksum the directory
    gives (the local header must name the same entry)."""
    stream.seek(info.header_offset)
    header = stream.read(_LOCAL_HEADER.size)
    fields = _LOCAL_HEADER.unpack(header) if len(header) == _LOCAL_HEADER.size else None
    if fields is None or fields[0] != _LOCAL:
        raise WaczError(
            f"the directory places the entry {info.filename} at offset {info.header_offset:,}, "
            "where no entry starts: the WACZ is damaged",
            info.filename,
        )
    name_length, extra_length = fields[9], fields[10]
    if stream.read(name_length) != info.orig_filename.encode(
        "utf-8" if info.flag_bits & 0x800 else "cp437"
    ):
        raise WaczError(
            f"the entry {info.filename} has another name in its own header than in the "
            "directory: the WACZ is damaged or forged",
            info.filename,
        )
    stream.seek(extra_length, 1)
    return _LocalEntry(
        stream,
        method=info.compress_type,
        size=info.compress_size,
        name=info.filename,
        crc=info.CRC,
        expanded=info.file_size,
    )


# --- The directory ------------------------------------------------------------------------------


def _check_directory(infos: list[zipfile.ZipInfo], directory_start: int | None) -> None:
    """Refuse a WACZ whose directory lists what no honest writer makes (see the module)."""
    if len(infos) > MAX_ENTRIES:
        raise WaczError(
            f"the ZIP lists {len(infos):,} entries, more than the {MAX_ENTRIES:,} HACS reads: "
            "it is refused as a ZIP bomb"
        )
    seen: set[str] = set()
    warcs = 0
    for info in infos:
        name = info.filename
        _check_name(name, info.flag_bits, seen)
        if _is_warc_name(name):
            warcs += 1
            _check_method(name, info.compress_type)
        if info.file_size > RATIO_FLOOR and info.file_size > MAX_RATIO * max(info.compress_size, 1):
            raise WaczError(
                f"the entry {name} would inflate {info.compress_size:,} bytes to "
                f"{info.file_size:,}, more than {MAX_RATIO} times: it is refused as a ZIP bomb",
                name,
            )
    _check_overlaps(infos, directory_start)
    if not warcs:
        raise WaczError(
            "it holds no WARC file under archive/ (a WACZ keeps its captures in "
            "archive/*.warc.gz); is it a WACZ?"
        )


def _check_name(name: str, flags: int, seen: set[str]) -> None:
    problem = _name_problem(name)
    if problem:
        raise WaczError(problem, name)
    if name in seen:
        raise WaczError(f"two entries are named {name}: the ZIP is refused as malformed", name)
    seen.add(name)
    if flags & 0x1:
        raise WaczError(
            f"the entry {name} is encrypted; HACS reads no encrypted archive, so export the "
            "crawl without a password",
            name,
        )
    if name.lower().endswith(NESTED_SUFFIXES):
        raise WaczError(
            f"the entry {name} is an archive inside the archive; HACS opens no nested archive, "
            "so import the inner WACZ itself",
            name,
        )


def _name_problem(name: str) -> str:
    """Why an entry name is refused, or empty."""
    shown = name[:200].encode("unicode_escape").decode("ascii")
    if not name or "\x00" in name:
        return f"an entry has an empty name or one with a NUL byte ({shown!r})"
    if name.startswith(("/", "\\")) or _DRIVE.match(name):
        return f"the entry {shown} has an absolute name; a WACZ's entries are relative paths"
    if ".." in re.split(r"[/\\]", name):
        return f"the entry {shown} climbs out of the archive with '..'; such a ZIP is refused"
    return ""


def _check_method(name: str, method: int) -> None:
    if method not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
        raise WaczError(
            f"the entry {name} is compressed with ZIP method {method}; HACS reads WARC entries "
            "that are stored or deflated",
            name,
        )


def _check_overlaps(infos: list[zipfile.ZipInfo], directory_start: int | None) -> None:
    """Refuse entries whose data overlap: a ZIP bomb's way of reusing one compressed stream
    for many entries. A local header is at least 30 bytes and its name long."""
    ordered = sorted(infos, key=lambda i: i.header_offset)
    ends = [*(i.header_offset for i in ordered[1:]), directory_start]
    for info, following in zip(ordered, ends, strict=True):
        length = len(info.orig_filename.encode("utf-8" if info.flag_bits & 0x800 else "cp437"))
        end = info.header_offset + 30 + length + info.compress_size
        if following is not None and end > following:
            raise WaczError(
                f"the entry {info.filename} overlaps the next one in the file: the ZIP is "
                "refused as a ZIP bomb",
                info.filename,
            )


def _is_warc_name(name: str) -> bool:
    return name.startswith("archive/") and name.lower().endswith(WARC_SUFFIXES)


def _refuse_nested(entry: _Rewindable, name: str) -> None:
    head = entry.read(4)
    entry.seek(0)
    if head == _LOCAL:
        raise WaczError(
            f"the entry {name} is a ZIP file, not a WARC file; HACS opens no nested archive", name
        )


def _short(error: BaseException) -> str:
    return (str(error).strip().splitlines() or [type(error).__name__])[0][:120]


# --- A stream that a WARC reader may seek back into -----------------------------------------


class _Rewindable:
    """An entry's data as a WARC reader reads a file: ``tell``, ``read``, and ``seek`` back over
    the last ``KEEP_BYTES`` (``read_warc`` checks what follows the last record it read) or to
    the end when the size is known. Errors of the ZIP layer end the data, with ``failure``."""

    def __init__(self, raw: Any, *, size: int | None, name: str) -> None:
        self._raw = raw
        self._size = size
        self._name = name
        self._kept: deque[bytes] = deque()
        self._kept_bytes = 0
        self._read_to = 0  # bytes taken from ``raw``
        self._pos = 0  # where the next read starts
        self._ended = False
        self.failure = ""

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = 0) -> int:
        if whence == 2:
            if self._size is None:
                raise OSError("the entry's size is not known until it has been read")
            target = self._size + offset
        elif whence == 1:
            target = self._pos + offset
        else:
            target = offset
        if target < self._read_to - self._kept_bytes or target < 0:
            raise OSError(f"cannot seek back to {target:,} in a streamed ZIP entry")
        self._pos = target
        return target

    def read(self, size: int = -1) -> bytes:
        wanted = CHUNK * 16 if size is None or size < 0 else size
        parts: list[bytes] = []
        if self._pos < self._read_to:
            behind = self._behind(self._pos, wanted)
            parts.append(behind)
            self._pos += len(behind)
            wanted -= len(behind)
        while self._pos > self._read_to and not self._ended:  # skip forward
            self._take(min(self._pos - self._read_to, CHUNK))
        if wanted > 0 and not self._ended:
            chunk = self._take(wanted)
            parts.append(chunk)
            self._pos += len(chunk)
        return b"".join(parts)

    def close(self) -> None:
        self._raw.close()

    def _take(self, size: int) -> bytes:
        try:
            chunk = self._raw.read(size)
        except WaczError as error:
            chunk, self.failure = b"", error.reason
        except (zipfile.BadZipFile, EOFError, zlib.error, struct.error, ValueError) as error:
            chunk = b""
            self.failure = (
                f"the entry {self._name} is damaged or cut short ({_short(error)}); its "
                "complete records were kept"
            )
        if not chunk:
            self._ended = True
            return b""
        self._read_to += len(chunk)
        self._kept.append(chunk)
        self._kept_bytes += len(chunk)
        while self._kept and self._kept_bytes - len(self._kept[0]) >= KEEP_BYTES:
            self._kept_bytes -= len(self._kept.popleft())
        return bytes(chunk)

    def _behind(self, position: int, size: int) -> bytes:
        start = self._read_to - self._kept_bytes
        joined = b"".join(self._kept)
        return joined[position - start : position - start + size]


# --- A ZIP without its directory ----------------------------------------------------------------


def _without_directory(stream: BinaryIO) -> Iterator[tuple[WaczEntry, EntryStream]]:
    """The WARC entries of a ZIP whose directory is missing (cut short), from local headers;
    raises ``WaczError`` at the end, since such a file is truncated or is no ZIP at all."""
    stream.seek(0)
    seen: set[str] = set()
    count = warcs = 0
    while True:
        offset = stream.tell()
        header = stream.read(_LOCAL_HEADER.size)
        if header[:4] != _LOCAL or len(header) < _LOCAL_HEADER.size:
            break
        _sig, _ver, flags, method, _t, _d, crc, csize, usize, nlen, xlen = _LOCAL_HEADER.unpack(
            header
        )
        raw_name, extra = stream.read(nlen), stream.read(xlen)
        if len(raw_name) < nlen or len(extra) < xlen:
            break
        name = raw_name.decode("utf-8" if flags & 0x800 else "cp437", errors="replace")
        count += 1
        if count > MAX_ENTRIES:
            raise WaczError(f"the ZIP holds more than {MAX_ENTRIES:,} entries: it is refused")
        _check_name(name, flags, seen)
        csize, usize = _zip64_sizes(extra, csize, usize)
        known = None if flags & 0x8 else csize
        _check_ratio(name, known, usize)
        data = _LocalEntry(
            stream,
            method=method,
            size=known,
            name=name,
            crc=None if known is None else crc,
            expanded=None if known is None else usize,
        )
        if _is_warc_name(name):
            warcs += 1
            _check_method(name, method)
            entry = _Rewindable(data, size=None, name=name)
            _refuse_nested(entry, name)
            yield WaczEntry(name, None if flags & 0x8 else usize, offset), entry
        if not data.finish():  # its end, and the descriptor after it, could not be found
            break
    raise _no_directory(count, warcs)


def _check_ratio(name: str, known: int | None, usize: int) -> None:
    """Refuse an entry that would inflate more than ``MAX_RATIO`` times (a ZIP bomb)."""
    if known is not None and usize > RATIO_FLOOR and usize > MAX_RATIO * max(known, 1):
        raise WaczError(
            f"the entry {name} would inflate {known:,} bytes to {usize:,}, more than "
            f"{MAX_RATIO} times: it is refused as a ZIP bomb",
            name,
        )


def _no_directory(entries: int, warcs: int) -> WaczError:
    """The error of a ZIP read to the end of its entries without finding its directory."""
    if not entries:
        return WaczError("it is not a ZIP file (no ZIP entry at its start), so not a WACZ")
    if not warcs:
        return WaczError(
            "it is cut short before its first WARC file under archive/", truncated=True
        )
    return WaczError(
        "the ZIP is truncated (its directory, written last, is missing); the complete records "
        "of its WARC files were kept",
        truncated=True,
    )


def _zip64_sizes(extra: bytes, csize: int, usize: int) -> tuple[int, int]:
    """Sizes from the ZIP64 extra field when the header's are 0xFFFFFFFF."""
    at = 0
    while at + 4 <= len(extra):
        kind, length = struct.unpack_from("<2H", extra, at)
        body = extra[at + 4 : at + 4 + length]
        if kind == _ZIP64_EXTRA:
            values = [v for (v,) in struct.iter_unpack("<Q", body[: len(body) // 8 * 8])]
            if usize == 0xFFFFFFFF and values:
                usize = values.pop(0)
            if csize == 0xFFFFFFFF and values:
                csize = values.pop(0)
        at += 4 + length
    return csize, usize


class _LocalEntry:
    """One entry's data read from its local header on: stored or deflated, of known size or
    ending where its data descriptor starts (streaming writers). ``finish`` moves the file past
    the data and the descriptor, to the next header."""

    def __init__(
        self,
        stream: BinaryIO,
        *,
        method: int,
        size: int | None,
        name: str,
        crc: int | None = None,
        expanded: int | None = None,
    ) -> None:
        """``size``: compressed bytes (None: up to the descriptor); ``crc`` and ``expanded``:
        the checksum and uncompressed size to hold the data to, when known."""
        self._stream = stream
        self._crc_expected = crc
        self._crc = 0
        self._expanded = expanded
        self._method = method
        self._left = size  # compressed bytes left, when known
        self._name = name
        self._inflate = zlib.decompressobj(-15) if method == zipfile.ZIP_DEFLATED else None
        self._pending = b""  # stored data read ahead while looking for the descriptor
        self._produced = 0  # bytes handed out
        self._consumed = 0  # compressed bytes taken from the file
        self._done = False
        self._ok = True
        self._checked = False

    def read(self, size: int) -> bytes:
        while not self._done:
            if self._inflate is not None:
                data = self._inflated(size)
            elif self._left is not None:
                data = self._stored_known(size)
            else:
                data = self._stored_until_descriptor(size)
            if data:
                self._produced += len(data)
                self._crc = zlib.crc32(data, self._crc)
                self._check_ratio()
                return data
        self._check_whole()
        return b""

    def close(self) -> None:
        return None

    def finish(self) -> bool:
        """Skip the rest of the data and its descriptor; False when the file ends first (or
        the entry's end cannot be found)."""
        if self._inflate is None and self._method != zipfile.ZIP_STORED and self._left is None:
            return False  # another method, of unknown length: its end cannot be found
        try:
            while not self._done:
                self.read(CHUNK)
        except (EOFError, WaczError, zlib.error):
            return False
        if not self._ok:
            return False
        return self._skip_descriptor() if self._left is None else True

    def _inflated(self, size: int) -> bytes:
        inflate = self._inflate
        assert inflate is not None
        if inflate.eof:
            self._done = True
            return b""
        if inflate.unconsumed_tail:
            data = inflate.decompress(inflate.unconsumed_tail, size)
        else:
            want = CHUNK if self._left is None else min(CHUNK, self._left)
            raw = self._stream.read(want) if want else b""
            if not raw:
                self._end(complete=False)
            self._consumed += len(raw)
            if self._left is not None:
                self._left -= len(raw)
            data = inflate.decompress(raw, size)
        if inflate.eof and inflate.unused_data:
            # The descriptor or the next header was read along: give it back to the file.
            unused = len(inflate.unused_data)
            self._stream.seek(-unused, 1)
            self._consumed -= unused
            if self._left is not None:
                self._left += unused
        if inflate.eof and self._left is not None:
            self._left = 0
        return data

    def _stored_known(self, size: int) -> bytes:
        assert self._left is not None
        if not self._left:
            self._done = True
            return b""
        raw = self._stream.read(min(size, self._left))
        if not raw:
            self._end(complete=False)
        self._left -= len(raw)
        self._consumed += len(raw)
        return raw

    def _stored_until_descriptor(self, size: int) -> bytes:
        """Stored data of unknown length ends where a descriptor starts whose compressed size
        equals the bytes before it (``PK 07 08``, the CRC, then the sizes, 4 or 8 bytes each)."""
        more = self._stream.read(max(size, CHUNK))
        self._consumed += len(more)
        buffer = self._pending + more
        at = buffer.find(_DESCRIPTOR)
        while at >= 0:
            if self._is_descriptor(buffer, at):
                self._stream.seek(-(len(buffer) - at), 1)  # back to the descriptor
                self._pending, self._done = b"", True
                return buffer[:at]
            at = buffer.find(_DESCRIPTOR, at + 1)
        if not more:
            self._pending = b""
            if not buffer:
                self._end(complete=False)
            return buffer
        keep = min(len(buffer), 4 + 4 + 16 - 1)  # a descriptor may straddle two reads
        self._pending = buffer[len(buffer) - keep :]
        return buffer[: len(buffer) - keep]

    def _is_descriptor(self, buffer: bytes, at: int) -> bool:
        size = self._produced + at
        if len(buffer) >= at + 16 and struct.unpack_from("<L", buffer, at + 8)[0] == size:
            return True
        return len(buffer) >= at + 24 and struct.unpack_from("<Q", buffer, at + 8)[0] == size

    def _skip_descriptor(self) -> bool:
        """Past the descriptor (its signature is optional; its sizes 4 or 8 bytes each), to
        where the next header starts."""
        start = self._stream.tell()
        base = start + (4 if self._stream.read(4) == _DESCRIPTOR else 0)
        for sizes in (8, 16):
            self._stream.seek(base + 4 + sizes)
            if self._stream.read(4) in (_LOCAL, b"PK\x01\x02", b"PK\x05\x06"):
                self._stream.seek(base + 4 + sizes)
                return True
        return False

    def _end(self, *, complete: bool) -> None:
        self._done = True
        if not complete:
            self._ok = False
            raise EOFError(f"the entry {self._name} is cut short")

    def _check_whole(self) -> None:
        """At the end of the data: its size and checksum must be those declared."""
        if not self._ok or self._checked:
            return
        self._checked = True
        if self._expanded is not None and self._produced != self._expanded:
            self._ok = False
            raise WaczError(
                f"the entry {self._name} holds {self._produced:,} bytes where its header says "
                f"{self._expanded:,}: it is damaged",
                self._name,
            )
        if self._crc_expected is not None and self._crc != self._crc_expected:
            self._ok = False
            raise WaczError(
                f"the entry {self._name} does not match its checksum: it is damaged; the "
                "records read before the damage were kept",
                self._name,
            )

    def _check_ratio(self) -> None:
        if self._expanded is not None and self._produced > self._expanded:
            self._done, self._ok = True, False
            raise WaczError(
                f"the entry {self._name} inflates past the {self._expanded:,} bytes its header "
                "declares: it was stopped there",
                self._name,
            )
        if self._produced > RATIO_FLOOR and self._produced > MAX_RATIO * max(self._consumed, 1):
            self._done, self._ok = True, False
            raise WaczError(
                f"the entry {self._name} inflated past {MAX_RATIO} times its compressed size "
                "while it was read: it was stopped there as a ZIP bomb",
                self._name,
            )
