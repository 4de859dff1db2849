"""Feed addresses kept out of the logs, and refusals logged without a traceback.

A feed address (``/feeds/<token>/…``) is a secret that stands for its user, so neither Django's
log (a 404 logs its path) nor the web server's access log may write the token. Both go through
:func:`redact_feed_tokens`: Django's through :class:`FeedTokenFilter` (settings ``LOGGING``),
gunicorn's through :class:`GunicornLogger` (``scripts/run.py``).
"""

from __future__ import annotations

import logging
import re
from typing import Any

from gunicorn.glogging import Logger

# Any path segment after /feeds/ that is not the Feeds page's own ("reset"), token or not: a
# mistyped token is as secret as a right one.
_FEED_TOKEN = re.compile(r"(/feeds/)(?!reset/)[^/?#\s\"]+")


def redact_feed_tokens(text: str) -> str:
    """``text`` with every feed address's token replaced by ``…``."""
    return _FEED_TOKEN.sub(r"\1…", text)


class FeedTokenFilter(logging.Filter):
    """Rewrites a log record's message without feed tokens (it never drops a record)."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if "/feeds/" in message:
            record.msg, record.args = redact_feed_tokens(message), ()
        return True


class RefusalWithoutTraceback(logging.Filter):
    """A refused request (403: a viewer's click on a librarian's action, a missing CSRF token)
    is one warning line, not a traceback: it is HACS working as meant, not a fault."""

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "status_code", None) == 403:
            record.exc_info, record.exc_text = None, None
        return True


class GunicornLogger(Logger):
    """gunicorn's logger, writing access-log lines without feed tokens."""

    def atoms(self, resp: Any, req: Any, environ: Any, request_time: Any) -> dict[str, Any]:
        atoms: dict[str, Any] = super().atoms(resp, req, environ, request_time)
        return {
            key: redact_feed_tokens(value) if isinstance(value, str) else value
            for key, value in atoms.items()
        }
