"""The names of the four files the demo archive writes, and the formats' fixed parts.

HACS's import commands, its tests and the benchmarks find the files by these names, so they
live in one place.
"""

from __future__ import annotations

WARC_NAME = "demo.warc.gz"
#: The WARC file's name in the demo archive that ``load_demo`` writes under ``HACS_VAR_DIR`` and
#: HACS replays itself: its captures are stored with the source ``warc:<this name>``, which
#: tells them from those of any other WARC file, a ``make_demo_archive`` one included.
LOCAL_WARC_NAME = "hacs-demo-archive.warc.gz"
CDX_NAME = "demo.cdx"
SEEDS_NAME = "seeds.csv"
TRUTH_NAME = "truth.json"
# The header line pywb's ``cdx-indexer`` writes: the 11-field CDX format.
CDX_HEADER = " CDX N b a m s k r M S V g"
TRUTH_SCHEMA = 1
