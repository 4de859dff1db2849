"""The one observation loader: a level's observations as flat NumPy arrays, from one query.

Estimates (``scheduling.estimates``), crawl lists, evaluation runs and learned schedulers all
read observations through :func:`observations_load`; :func:`evaluation_tables_load` gives them
as the evaluation core's ``ObservationTable`` per level. The database converts each timestamp
to whole milliseconds since 1970 (:class:`EpochMilliseconds`), so millions of rows never
become Python ``datetime`` objects and every caller gets the same days (``hacs.clock.to_days``
to the last bit).
"""

from __future__ import annotations

import gc
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np
from django.db import connection
from django.db.models import BigIntegerField, Count, Func, QuerySet
from django.db.models.functions import Coalesce
from django.db.utils import NotSupportedError
from numpy.typing import NDArray

from archive.captures import MAX_DEPTH
from archive.models import Capture, Site
from hacs.evaluation import ObservationTable
from scheduling.models import Level

_BATCH = 200_000  # rows turned into arrays at a time: bounds the Python objects alive at once

IntArray = NDArray[np.int64]
FloatArray = NDArray[np.float64]


class EpochMilliseconds(Func):
    """A DateTimeField as whole milliseconds since 1970-01-01 UTC, computed by the database.

    An integer, so that ``to_days`` is reproduced exactly in NumPy: for whole milliseconds,
    (ms / 10³) / 86400 rounds exactly as ``timedelta.total_seconds() / 86400`` does. Archive
    timestamps are whole seconds (14-digit CDX timestamps); finer parts are rounded to the
    millisecond, which is SQLite's own date precision.
    """

    arity = 1
    output_field = BigIntegerField()

    def as_sqlite(
        self, compiler: Any, connection: Any, **extra_context: Any
    ) -> tuple[str, tuple[Any, ...]]:
        sql, params = compiler.compile(self.source_expressions[0])
        # julianday() keeps an integer count of milliseconds and returns it divided by
        # 86 400 000, so multiplying back and rounding recovers it exactly; 2440587.5 days is
        # 1970-01-01. Four times faster than strftime('%s') over millions of rows.
        return (
            f"(CAST(ROUND(julianday({sql}) * 86400000.0) AS INTEGER) - 210866760000000)",
            tuple(params),
        )

    def as_postgresql(
        self, compiler: Any, connection: Any, **extra_context: Any
    ) -> tuple[str, tuple[Any, ...]]:
        sql, params = compiler.compile(self.source_expressions[0])
        # EXTRACT(EPOCH …) is numeric (exact) since PostgreSQL 14.
        return f"CAST(ROUND(EXTRACT(EPOCH FROM {sql}) * 1000) AS BIGINT)", tuple(params)

    def as_sql(
        self,
        compiler: Any,
        connection: Any,
        function: str | None = None,
        template: str | None = None,
        arg_joiner: str | None = None,
        **extra_context: Any,
    ) -> tuple[str, tuple[Any, ...]]:
        raise NotSupportedError(
            f"EpochMilliseconds supports SQLite and PostgreSQL, not {connection.vendor}"
        )


@dataclass(frozen=True, eq=False)
class Observations:
    """One level's observations, one entry per observation, in no particular order.

    ``site_pk`` is the ``Site`` primary key, ``page`` numbers the (site, page) pairs from 0,
    ``time`` is days since 1970 (``hacs.clock.to_days``), and ``page_index`` / ``link_floor`` are
    each observation's stored update data (DESIGN's hint for speed); ``new_links`` counts the links
    no earlier copy of its page held.
    """

    site_pk: IntArray
    page: IntArray
    time: FloatArray
    page_index: IntArray
    link_floor: IntArray
    new_links: IntArray


def observations_queryset(
    *, level: str, start: datetime | None, end: datetime | None, site_ids: Sequence[int] | None
) -> QuerySet[Capture]:
    """Observations with update data at ``level`` with ``start ≤ timestamp ≤ end``."""
    if level not in Level.values:
        raise ValueError(f"level must be one of {', '.join(Level.values)}; got {level!r}")
    rows = Capture.objects.filter(is_observation=True, page_index__isnull=False)
    if level == Level.HOMEPAGE:
        rows = rows.filter(depth=0)
    else:
        rows = rows.filter(depth__lte=MAX_DEPTH)
    if start is not None:
        rows = rows.filter(timestamp__gte=start)
    if end is not None:
        rows = rows.filter(timestamp__lte=end)
    if site_ids is not None:
        rows = rows.filter(site_id__in=list(site_ids))
    return rows


def observations_load(
    *,
    level: str,
    start: datetime | None = None,
    end: datetime | None = None,
    site_ids: Sequence[int] | None = None,
) -> Observations:
    """The level's observations in [start, end] (of the given sites, or all) from one query."""
    rows = observations_queryset(level=level, start=start, end=end, site_ids=site_ids)
    values = rows.order_by().values_list(
        "site_id",
        "page_index",
        "link_floor",
        EpochMilliseconds("timestamp"),
        "page_key",
        Coalesce("new_links", 0),
    )
    # Millions of rows: run the query through the cursor (Django's row iterator costs more
    # than the query) and turn each batch into arrays at once, with the collector off while
    # the batches create millions of short-lived tuples.
    sql, params = values.query.sql_with_params()
    pages: dict[tuple[int, str], int] = {}
    columns: list[list[NDArray[Any]]] = [[], [], [], [], [], []]
    collecting = gc.isenabled()
    gc.disable()
    try:
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            while batch := cursor.fetchmany(_BATCH):
                pks, indices, floors, stamps, keys, fresh = zip(*batch, strict=True)
                del batch
                ids = [pages.setdefault(pair, len(pages)) for pair in zip(pks, keys, strict=True)]
                data_columns = (pks, ids, indices, floors, stamps, fresh)
                for column, data in zip(columns, data_columns, strict=True):
                    column.append(np.array(data, dtype=np.int64))
    finally:
        if collecting:
            gc.enable()
    site_pk, page, page_index, floor, millis, new_links = (
        np.concatenate(column) if column else np.zeros(0, dtype=np.int64) for column in columns
    )
    return Observations(
        site_pk=site_pk,
        page=page,
        time=millis.astype(np.float64) / 1e3 / 86400.0,
        page_index=page_index,
        link_floor=floor,
        new_links=new_links,
    )


class EvaluationTables(dict[str, ObservationTable]):
    """Observation tables by level; ``site_ids[i]`` is the ``Site`` pk of site index i."""

    def __init__(self, tables: Mapping[str, ObservationTable], site_ids: IntArray) -> None:
        super().__init__(tables)
        self.site_ids = site_ids


# --------------------------------------------------------------------------------------------
# Loading
# --------------------------------------------------------------------------------------------


def evaluation_tables_load(
    *, levels: Iterable[str], start: datetime | None = None, end: datetime | None = None
) -> EvaluationTables:
    """Each level's observations with ``start ≤ timestamp ≤ end`` as an ``ObservationTable``.

    One query per level. Every site is numbered (canonical-key order), also sites without
    observations, so the levels share one numbering and ``site_ids`` maps it back.
    """
    site_ids = np.fromiter(
        Site.objects.order_by("canonical_key").values_list("pk", flat=True), dtype=np.int64
    )
    tables = {
        level: _table_load(level=level, start=start, end=end, site_ids=site_ids) for level in levels
    }
    return EvaluationTables(tables, site_ids)


def _table_load(
    *, level: str, start: datetime | None, end: datetime | None, site_ids: IntArray
) -> ObservationTable:
    found = observations_load(level=level, start=start, end=end)
    # Site pk → index in canonical-key order.
    by_pk = np.argsort(site_ids)
    site = by_pk[np.searchsorted(site_ids, found.site_pk, sorter=by_pk)]
    return ObservationTable(
        site=site,
        page=found.page,
        time=found.time,
        page_index=found.page_index,
        link_floor=found.link_floor,
        n_sites=int(site_ids.size),
        new_links=found.new_links,
    )


def known_page_counts(
    *, level: str, end: datetime | None, site_ids: Sequence[int] | None = None
) -> dict[int, int]:
    """Each site's number of pages with an observation at ``level`` up to ``end``, the window's
    start aside: the pages a website's rate sums over (``hacs.website``, "Every known page")."""
    rows = observations_queryset(level=level, start=None, end=end, site_ids=site_ids)
    counts = rows.order_by().values("site_id").annotate(pages=Count("page_key", distinct=True))
    return {int(row["site_id"]): int(row["pages"]) for row in counts}
