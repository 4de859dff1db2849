"""The one "today" of HACS: the current date in the configured ``TIME_ZONE``.

Every page, command and job asks this function, so that a list built from the command line, the
daily job and the pages agree on the date (``hacs.clock`` holds the pure rules).
"""

from __future__ import annotations

from datetime import date

from django.conf import settings

from hacs import clock


def today() -> date:
    return clock.today(settings.TIME_ZONE)
