"""hacs.formats.queries: one CDX query per host for a refresh, split when a group is too big."""

from __future__ import annotations

import random
from datetime import UTC, datetime

import pytest

from hacs.formats.canon import SeedScope
from hacs.formats.queries import SHARED_HOSTS, CdxQuery, RefreshSeed, plan_queries, refresh_from


def seed(site_id: int, url: str, since: str | None = "20240101") -> RefreshSeed:
    return RefreshSeed(site_id, url, since)


def by_sites(queries: list[CdxQuery]) -> dict[tuple[int, ...], CdxQuery]:
    return {q.site_ids: q for q in queries}


def test_seeds_of_one_host_are_asked_once_on_their_common_path() -> None:
    queries = plan_queries(
        [seed(1, "http://www.cs.foo.edu/~alice/"), seed(2, "https://cs.foo.edu/~bob/", "202312")]
    )
    assert queries == [
        # A group is asked from its seeds' ``since`` (wide) unless named in ``narrow``.
        CdxQuery("cs.foo.edu/~", "prefix", (1, 2), "202312", "edu,foo,cs)/~", wide=True)
    ]


def test_seeds_sharing_only_the_host_are_asked_with_a_host_query() -> None:
    [query] = plan_queries(
        [seed(1, "http://cs.foo.edu/~alice/"), seed(2, "http://cs.foo.edu/people/bob/")]
    )
    assert (query.url, query.match_type, query.key) == ("cs.foo.edu", "host", "edu,foo,cs)/")
    # A seed that is the whole host makes its host's group a host query too.
    [query] = plan_queries([seed(1, "http://foo.edu/"), seed(2, "http://foo.edu/~a/")])
    assert (query.url, query.match_type, set(query.site_ids)) == ("foo.edu", "host", {1, 2})


def test_a_first_import_a_shared_platform_and_a_lone_seed_are_asked_alone() -> None:
    queries = plan_queries(
        [
            seed(1, "http://cs.foo.edu/~alice/"),
            seed(2, "http://cs.foo.edu/~bob/", since=None),  # nothing from this archive yet
            seed(3, "https://sites.google.com/view/carol"),
            seed(4, "https://sites.google.com/view/dan"),
            seed(5, "https://erin.github.io/"),
        ]
    )
    assert sorted(q.site_ids for q in queries) == [(1,), (2,), (3,), (4,), (5,)]
    found = by_sites(queries)
    assert found[(2,)].since is None and found[(2,)].url == "cs.foo.edu/~bob"
    assert found[(3,)].url == "sites.google.com/view/carol"
    # A seed asked alone is asked exactly as a per-seed import asks it.
    for query, url in (
        (found[(1,)], "http://cs.foo.edu/~alice/"),
        (found[(5,)], "https://erin.github.io/"),
    ):
        assert query.url == SeedScope.from_url(url).cdx_query_url()
        assert query.match_type == "prefix"
    assert "com,google,sites" in SHARED_HOSTS


def test_ports_are_other_hosts() -> None:
    queries = plan_queries([seed(1, "http://foo.edu:8080/~a/"), seed(2, "http://foo.edu/~b/")])
    assert sorted(q.site_ids for q in queries) == [(1,), (2,)]
    assert by_sites(queries)[(1,)].url == "foo.edu:8080/~a"


def test_a_group_too_big_last_time_splits_by_one_more_character() -> None:
    seeds = [
        seed(1, "http://cs.foo.edu/people/alice/"),
        seed(2, "http://cs.foo.edu/people/albert/"),
        seed(3, "http://cs.foo.edu/staff/bob/"),
        seed(4, "http://cs.foo.edu/staff/barbara/"),
        seed(5, "http://cs.foo.edu/~carol/"),
    ]
    [whole] = plan_queries(seeds)
    assert (whole.match_type, whole.key) == ("host", "edu,foo,cs)/")
    split = by_sites(plan_queries(seeds, too_big={whole.key}))
    assert split == {
        (2, 1): CdxQuery(
            "cs.foo.edu/people/al", "prefix", (2, 1), "20240101", "edu,foo,cs)/people/al", wide=True
        ),
        (4, 3): CdxQuery(
            "cs.foo.edu/staff/b", "prefix", (4, 3), "20240101", "edu,foo,cs)/staff/b", wide=True
        ),
        (5,): CdxQuery("cs.foo.edu/~carol", "prefix", (5,), "20240101", "edu,foo,cs)/~carol"),
    }
    # Too big again: one more character leaves single seeds.
    again = plan_queries(seeds, too_big={whole.key, "edu,foo,cs)/people/al"})
    assert sorted(q.site_ids for q in again) == [(1,), (2,), (4, 3), (5,)]


def test_a_group_of_two_splits_into_its_two_seeds() -> None:
    seeds = [seed(1, "http://foo.edu/~a/"), seed(2, "http://foo.edu/~b/")]
    [group] = plan_queries(seeds)
    assert sorted(q.site_ids for q in plan_queries(seeds, too_big={group.key})) == [(1,), (2,)]


def test_a_bad_seed_url_is_named() -> None:
    with pytest.raises(ValueError, match="seed 'ftp://foo.edu/' of site 7"):
        plan_queries([seed(7, "ftp://foo.edu/")])


HOSTS = [
    "cs.foo.edu",
    "www.cs.foo.edu",
    "math.foo.edu",
    "bar.org",
    "bar.org:8080",
    "sites.google.com",
    "a.github.io",
    "b.github.io",
]
PATHS = ["", "~a", "~ab", "~b", "people/a", "people/b", "staff/x/y", "view/a", "view/b"]


@pytest.mark.parametrize("trial", range(30))
def test_every_seed_is_in_exactly_one_query_that_covers_its_pages(trial: int) -> None:
    rng = random.Random(trial)
    seeds = [
        seed(
            i,
            f"http://{rng.choice(HOSTS)}/{rng.choice(PATHS)}/".replace("//", "/").replace(
                "http:/", "http://"
            ),
            rng.choice([None, "2024", "20231201", "20240115120000"]),
        )
        for i in range(rng.randint(1, 25))
    ]
    keys = {q.key for q in plan_queries(seeds)}
    too_big = set(rng.sample(sorted(keys), k=rng.randint(0, len(keys))))
    for queries in (plan_queries(seeds), plan_queries(seeds, too_big=too_big)):
        placed = [i for q in queries for i in q.site_ids]
        assert sorted(placed) == [s.site_id for s in seeds]
        for query in queries:
            members = [s for s in seeds if s.site_id in query.site_ids]
            stamps = [s.since for s in members]
            if query.is_group:
                assert None not in stamps
                assert query.since == min(stamps, key=lambda s: str(s).ljust(14, "0"))
            for member in members:
                own = SeedScope.from_url(member.seed_url)
                assert own.host_key not in SHARED_HOSTS or not query.is_group
                # The query reads every page of the seed: same host, and its path below the
                # query's prefix (a host query reads the whole host).
                assert own.cdx_query_url().startswith(query.url)
                assert query.key.startswith(own.host_key + ")")
    # A group too big last time is never asked whole again.
    assert not any(q.is_group and q.key in too_big for q in plan_queries(seeds, too_big=too_big))


def test_a_host_of_many_tilde_seeds_splits_by_initial_not_into_single_seeds() -> None:
    names = [f"{a}{b}" for a in "abc" for b in ("ann", "bob", "cy")]
    seeds = [seed(n, f"http://cs.uni.edu/~{name}/") for n, name in enumerate(names)]
    [whole] = plan_queries(seeds)
    assert whole.key == "edu,uni,cs)/~"
    split = plan_queries(seeds, too_big={whole.key})
    assert sorted((q.url, len(q.site_ids)) for q in split) == [
        ("cs.uni.edu/~a", 3),
        ("cs.uni.edu/~b", 3),
        ("cs.uni.edu/~c", 3),
    ]
    again = plan_queries(seeds, too_big={whole.key, "edu,uni,cs)/~a"})
    assert sorted(q.url for q in again)[:3] == [
        "cs.uni.edu/~aann",
        "cs.uni.edu/~abob",
        "cs.uni.edu/~acy",
    ]


def test_from_is_the_last_answers_newest_row_less_the_margin_never_before_1990() -> None:
    newest = datetime(2018, 5, 20, 6, 30, tzinfo=UTC)
    assert refresh_from(newest, margin_days=5) == "20180515063000"
    assert refresh_from(newest, margin_days=0.5) == "20180519183000"
    assert refresh_from(datetime(1990, 1, 5, tzinfo=UTC), margin_days=30) == "19900101000000"


def test_a_group_asked_wide_lately_asks_from_its_narrow_from_the_others_wide() -> None:
    seeds = [
        RefreshSeed(1, "http://cs.uni.edu/~ann/", "20180401000000", "20180420000000"),
        RefreshSeed(2, "http://cs.uni.edu/~bob/", "20180402000000", "20180425000000"),
        RefreshSeed(3, "http://solo.org/", "20180401000000", "20180428000000"),
    ]
    (wide, single) = plan_queries(seeds)
    assert (wide.since, wide.wide) == ("20180401000000", True)
    assert (single.since, single.wide) == ("20180401000000", False)  # alone: always its since
    (narrow, single) = plan_queries(seeds, narrow={wide.key})
    assert (narrow.since, narrow.wide) == ("20180420000000", False)
    assert single.since == "20180401000000"
