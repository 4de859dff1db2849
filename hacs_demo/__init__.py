"""A synthetic scholarly web archive with known truth, for HACS's tests, demos and benchmarks.

Archivists cannot check a crawl scheduler against real archives: nobody knows when a real
homepage really changed. So ``build_demo_archive(outdir)`` invents authors, lets them edit
their homepages for a few years, lets an archive capture them the way archives do, and writes
four files -- the archive, and what really happened:

* ``demo.warc.gz`` -- WARC/1.0 ``response`` and ``revisit`` records (one gzip member each, after
  a ``warcinfo`` record) of authors' tilde homepages and the pages under them: 200 HTML pages,
  301/302 redirects, 404/503 errors, PDFs and images, and identical-payload-digest revisits
  (``hacs_demo.warc``).
* ``demo.cdx`` -- the same captures as an 11-field CDX file, byte for byte what pywb's
  ``cdx-indexer --sort`` writes for ``demo.warc.gz`` -- plus deliberate dirt listed in the truth:
  exact duplicate lines, a line dated in month 13 and a truncated line (``hacs_demo.cdx``).
* ``seeds.csv`` -- ``url,author,tags`` with URLs written several ways, a non-http row, an
  empty-URL row and one duplicate seed written another way (``hacs_demo.seedlist``).
* ``truth.json`` -- per site its seed, true update rates and events, and every CDX line of its
  pages with its kind and link set (schema in ``hacs_demo.truth``).

The world, module by module:

* ``pages`` -- each author has a ``/~name/`` homepage with pages to depth 3, each with a
  long-run rate of link additions, log-normal across sites as in the HACS paper's Fig. 4;
* ``sessions`` -- links arrive in self-exciting editing sessions (a new paper, then its slides
  and code days later; teaching links around term starts), not as a memoryless process;
* ``content`` and ``history`` -- what the items are, and the other edits (removals, re-adds, text
  edits, a move to https) that change bytes but are not updates by DESIGN.md rule 3;
* ``hrefs`` and ``htmlpage`` -- the same link written many equivalent ways, next to things that
  are not links, and the truth's canonical form of every link;
* ``captures`` and ``responses`` -- bursty captures, URL variants, redirects, errors, revisits;
* ``authors``, ``vocabulary``, ``urls``, ``model``, ``site`` and ``world`` -- who the authors
  are (each ``/~user/`` is the author's initial and surname, numbered for a namesake in the
  same department) and how the pieces fit together.

``load_demo`` names the WARC file of the demo archive it keeps under ``HACS_VAR_DIR``
``LOCAL_WARC_NAME``, so that its captures are known by their source, and HACS replays them
itself (``archive``: a capture by URL and time, its stored response, its links pointed back
into the replay), since no public archive ever held them.

Pure: stdlib, NumPy, warcio and surt (for urlkeys exactly as pywb computes them); no Django.
Deterministic for a given (sites, seed, start, end): same bytes every run. A site's world
depends only on (seed, its index), so the first 40 sites of a 500-site archive are the same
authors with the same histories as a 40-site archive.
"""

from __future__ import annotations

from hacs_demo.build import DemoArchive, build_demo_archive
from hacs_demo.files import (
    CDX_HEADER,
    CDX_NAME,
    LOCAL_WARC_NAME,
    SEEDS_NAME,
    TRUTH_NAME,
    TRUTH_SCHEMA,
    WARC_NAME,
)
from hacs_demo.hrefs import canonical_link

__all__ = [
    "CDX_HEADER",
    "CDX_NAME",
    "LOCAL_WARC_NAME",
    "SEEDS_NAME",
    "TRUTH_NAME",
    "TRUTH_SCHEMA",
    "WARC_NAME",
    "DemoArchive",
    "build_demo_archive",
    "canonical_link",
]
