"""How long a request body HACS accepts for a page that takes a file: the file's own limit (a
setting) and the form's other fields. The web server's worker (``hacs_site.web_worker``) reads a
body up to the seed list's whole before a thread serves it; the pages' middleware
(``dashboard.request_limits``) refuses a longer one unread."""

from __future__ import annotations

from django.conf import settings

#: Bytes of an upload's other fields and multipart framing, beyond the file's own limit.
UPLOAD_FORM_BYTES = 1024 * 1024


def upload_request_bytes(setting: str = "HACS_MAX_UPLOAD_BYTES") -> int:
    """The longest body of a page whose file may hold ``setting`` bytes: that and the form."""
    return int(getattr(settings, setting)) + UPLOAD_FORM_BYTES
