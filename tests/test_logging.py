"""What HACS writes to the terminal it runs in: a refused click is one line, not a traceback."""

from __future__ import annotations

import io
import logging
from typing import Any

import pytest
from django.conf import settings

from hacs_site.log_redaction import RefusalWithoutTraceback
from tests.factories import make_user


@pytest.mark.django_db
def test_a_refused_request_is_one_line_without_a_traceback(client: Any) -> None:
    assert "refusals" in settings.LOGGING["handlers"]["console"]["filters"]
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.setFormatter(logging.Formatter(settings.LOGGING["formatters"]["plain"]["format"]))
    handler.addFilter(RefusalWithoutTraceback())
    logger = logging.getLogger("django.request")
    logger.addHandler(handler)
    try:
        client.force_login(make_user("reader", role="viewer"))
        response = client.post("/crawl-list/build/", {"day": "2018-06-01", "theta": "0.5"})
    finally:
        logger.removeHandler(handler)
    assert response.status_code == 403
    written = out.getvalue()
    assert "Forbidden" in written and "/crawl-list/build/" in written
    assert "Traceback" not in written and len(written.strip().splitlines()) == 1


def test_other_errors_keep_their_traceback() -> None:
    try:
        raise ValueError("a fault")
    except ValueError:
        record = logging.LogRecord(
            "django.request",
            logging.ERROR,
            __file__,
            1,
            "Internal Server Error",
            (),
            exc_info=__import__("sys").exc_info(),
        )
    record.status_code = 500
    assert RefusalWithoutTraceback().filter(record) and record.exc_info is not None
