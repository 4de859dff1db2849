"""The method's defaults (DESIGN rules 8 and 9), in one place for settings, forms and commands.

Kept apart from the numerical modules so that reading the settings loads no NumPy or SciPy.
"""

HISTORY_DAYS = 3 * 365  # rule 8: a crawl list's history window w, three years
# Rule 8: a crawl list's horizon e. A daily list is crawled before the next one is built, so
# it ranks by the chance of a change by tomorrow; a week (the paper's e, which the evaluation
# keeps, rule 9) ranks sites crawled yesterday by changes no crawl today can find
# (docs/readings.md: closed-loop replay, e = 7 days against 1).
E_DAYS = 1.0
# The longest history window, in weeks, that an evaluation or a learned scheduler accepts.
MAX_W_WEEKS = 52

# --- Asking the archive (archive.wayback.ArchiveConfig; settings HACS_CDX_*, HACS_HTTP_*) -------
# Mementos: 480 a minute (8 a second), the default of the field's maintained Wayback client
# (edgi-govdata-archiving/wayback), which the Internet Archive asked to stay at 80 % of its hard
# limit of 600 a minute. CDX queries stay well below that client's 48 a minute: a HACS query
# reads a site's whole prefix, up to 5,000 rows a page.
CDX_PER_MINUTE = 24.0
MEMENTO_PER_MINUTE = 480.0
HTTP_TIMEOUT = 30.0  # seconds to connect, and between two reads
HTTP_RETRIES = 5
HTTP_BACKOFF_BASE = 2.0  # seconds before the first retry; doubles each time
# A whole request (connection, headers, body) ends within this many seconds, however slowly the
# archive trickles its answer.
HTTP_DEADLINE = 60.0
# Decompressed bytes read of one memento (a longer one is recorded as too large, not parsed):
# about 19 times the largest real raw memento seen (270 KB; docs/security.md).
MAX_MEMENTO_BYTES = 5 * 1024 * 1024
# One CDX query stops after so many pages or decompressed bytes (16 MiB: about 130,000 captures
# of real rows, 32 times the largest real answer seen; docs/security.md).
CDX_MAX_PAGES = 100
MAX_CDX_BYTES = 16 * 1024 * 1024
# One CDX query (all its pages, retries and waits) ends within this many seconds.
CDX_QUERY_DEADLINE = 600.0
CDX_INDEX_LAG_DAYS = 30.0  # a re-import asks again for captures this far back

# --- The nightly refresh (hacs.refresh_budget, archive.archive_import; HACS_REFRESH_*) ----------
ARCHIVE_PARALLEL = 8  # queries and memento fetches in flight at once in one worker
# A host group's answer of more rows or pages than these is too big: its next refresh splits it.
GROUP_MAX_ROWS = 20_000
GROUP_MAX_PAGES = 4
GROUP_MAX_BLOCKS = 30  # index blocks (~3,000 lines) a group's key range may span
AUDIT_SHARE = 0.05  # grouped queries one of whose homepages is also asked exactly
REFRESH_MAX_AGE_DAYS = 30.0  # the longest a site waits between two checks
REFRESH_DUE_SHARE = 0.35  # the most of the budget sites past their deadline may take
