"""The names of the four files the demo archive writes, and the formats' fixed parts.

HACS's import commands, its tests and the benchmarks find the files by these names, so they
live in one place.
"""

from __future__ import annotations

WARC_NAME = "demo.warc.gz"
CDX_NAME = "demo.cdx"
SEEDS_NAME = "seeds.csv"
TRUTH_NAME = "truth.json"
# The header line pywb's ``cdx-indexer`` writes: the 11-field CDX format.
CDX_HEADER = " CDX N b a m s k r M S V g"
TRUTH_SCHEMA = 1
