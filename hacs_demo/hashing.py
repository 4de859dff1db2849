"""Hashes that make the demo archive the same bytes on every run.

Choices that must not change between versions of a page (how an anchor is written, whether a
server names its charset) hang on a stable hash of names rather than on the random stream, so
drawing one more event never rewrites a page's links. Digests and urlkeys are computed exactly
as the tools archivists use compute them, so HACS reads the demo as it reads a real archive.
"""

from __future__ import annotations

import base64
import functools
import hashlib

import surt


def stable_hash(*parts: str) -> int:
    """A 64-bit number that depends only on ``parts`` (not on Python's per-run hash seed)."""
    h = hashlib.blake2b("\x1f".join(parts).encode("utf-8"), digest_size=8)
    return int.from_bytes(h.digest(), "big")


def payload_digest(body: bytes) -> str:
    """The base-32 SHA-1 that WARC ``WARC-Payload-Digest`` headers and CDX lines carry."""
    return base64.b32encode(hashlib.sha1(body).digest()).decode("ascii")


@functools.lru_cache(maxsize=4096)
def urlkey(url: str) -> str:
    """The CDX urlkey of ``url``, exactly as pywb's indexer writes it (``surt.surt``).

    Cached because each page is captured under only a few URL forms.
    """
    return str(surt.surt(url))
