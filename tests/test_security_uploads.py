"""Hardening of uploads and learned schedulers (issue #24, items 4 and 7), where users meet them.

* A seed line or CSV cell of 200,000 characters is one rejected line, with its number and the
  limit, on the Upload seeds page and from ``import_seeds``; the other lines are read and
  nothing stored is lost (it raised ``_csv.Error`` out of both before).
* Held uploads are bounded per user and in total: the oldest go first, and their owner is told
  which (20 checks of 5 MB held 100 MB before).
* A stored GP4C function nested thousands deep is refused with a sentence on the Crawl list
  page, from ``crawl_list`` and in an evaluation (it raised ``RecursionError`` before).

The pure readers are tested in ``tests/hacs/test_security_formats.py``.
"""

from __future__ import annotations

import io
import re
import threading
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.test import Client

from archive.models import Site
from hacs.clock import reference_instant
from scheduling.models import CrawlList, LearnedScorer
from tests.factories import add_observations, make_site, make_user
from tests.support.commands import learned_list_command
from tests.support.runs import stored_run

LONG = 200_000
TOO_LONG = "characters, longer than the 8,192 a seed line may have"


@pytest.fixture(autouse=True)
def held_files_in(tmp_path: Any, settings: Any) -> Path:
    """Checked files are held under this test's own VAR_DIR."""
    settings.VAR_DIR = tmp_path
    return tmp_path / "uploads"


def post_file(client: Any, data: bytes, action: str, name: str = "seeds.csv") -> Any:
    form = {"file": SimpleUploadedFile(name, data, "text/csv"), "action": action}
    return client.post("/sites/upload/", form)


def rejected_rows(page: str) -> list[tuple[str, str]]:
    """(line, reason) of each row of the page's table of rejected lines."""
    table = page.split('<table class="rejected">', 1)[1].split("</table>", 1)[0]
    return re.findall(r'<tr><td class="num">(\d+)</td><td>([^<]*)</td>', table)


# --- Item 4: a line or cell too long -----------------------------------------------------------

LONG_LINE_FIRST = f"{'x' * LONG}\nhttp://a.edu/~ada/\n".encode()
LONG_CELL = f"url,author\nhttp://a.edu/~x/,{'A' * LONG}\nhttp://b.edu/~bea/,Bea\n".encode()


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("data", "line", "length", "kept"),
    [
        (LONG_LINE_FIRST, "1", "200,000", "http://a.edu/~ada/"),
        (LONG_CELL, "2", "200,017", "http://b.edu/~bea/"),
    ],
    ids=["line", "csv-cell"],
)
def test_the_upload_page_rejects_a_200000_character_line_and_adds_the_rest(
    logged_in_client: Any, data: bytes, line: str, length: str, kept: str
) -> None:
    stored = make_site()
    checked = post_file(logged_in_client, data, "check")
    assert checked.status_code == 200
    assert rejected_rows(checked.content.decode()) == [(line, f"{length} {TOO_LONG}")]
    assert '<strong data-count="added">1</strong>' in checked.content.decode()
    added = post_file(logged_in_client, data, "import")
    assert added.status_code == 200
    assert rejected_rows(added.content.decode()) == [(line, f"{length} {TOO_LONG}")]
    assert set(Site.objects.values_list("seed_url", flat=True)) == {stored.seed_url, kept}


@pytest.mark.django_db
def test_pasted_text_with_a_200000_character_line_is_explained_the_same_way(
    logged_in_client: Any,
) -> None:
    text = f"http://a.edu/~ada/\n{'y' * LONG}\n"
    response = logged_in_client.post("/sites/upload/", {"text": text, "action": "import"})
    assert response.status_code == 200
    assert rejected_rows(response.content.decode()) == [("2", f"200,000 {TOO_LONG}")]
    assert Site.objects.get().seed_url == "http://a.edu/~ada/"


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("data", "rejected", "added"),
    [
        (LONG_LINE_FIRST, f":1: rejected: 200,000 {TOO_LONG}: {'x' * 200}", "http://a.edu/~ada/"),
        (
            LONG_CELL,
            f":2: rejected: 200,017 {TOO_LONG}: http://a.edu/~x/,{'A' * 183}",
            "http://b.edu/~bea/",
        ),
    ],
    ids=["line", "csv-cell"],
)
def test_import_seeds_reports_a_200000_character_line_like_any_bad_line(
    tmp_path: Path, data: bytes, rejected: str, added: str
) -> None:
    stored = make_site()
    path = tmp_path / "seeds.csv"
    path.write_bytes(data + b"ftp://c.edu/~cy/\n")
    out, err = io.StringIO(), io.StringIO()
    call_command("import_seeds", str(path), stdout=out, stderr=err)  # no CommandError: exit 0
    lines = err.getvalue().splitlines()
    assert lines[0] == f"{path}{rejected}"
    assert ": rejected: only http and https URLs can be crawled" in lines[1]  # as any bad line
    assert "Traceback" not in err.getvalue()
    summary = "1 added, 0 already stored, 0 merged duplicate lines, 2 rejected"
    assert out.getvalue().splitlines()[-1] == summary
    assert set(Site.objects.values_list("seed_url", flat=True)) == {stored.seed_url, added}


# --- Item 4: held uploads bounded ---------------------------------------------------------------

MB = 1024 * 1024


def seed_list(size: int, n: int) -> bytes:
    """A readable list of about ``size`` bytes: one seed, then comment lines (read quickly)."""
    comment = f"# list {n} " + "c" * 4000 + "\n"
    return f"http://a.edu/~u{n}/\n".encode() + comment.encode() * (size // len(comment))


def held_token(page: str) -> str:
    match = re.search(r'name="held" value="([^"]+)"', page)
    assert match, "the page carries no held file"
    return match.group(1)


def held(folder: Path) -> dict[str, int]:
    """The held files' names and sizes."""
    return {path.name: path.stat().st_size for path in folder.iterdir()}


@pytest.mark.django_db
def test_twenty_checks_of_several_mb_keep_each_users_newest_files_only(
    logged_in_client: Any, user: Any, held_files_in: Path, settings: Any
) -> None:
    assert settings.HACS_UPLOAD_HOLD_PER_USER == 5  # the default
    tokens = []
    for n in range(20):
        response = post_file(logged_in_client, seed_list(3 * MB, n), "check", f"list-{n:02}.csv")
        assert response.status_code == 200
        tokens.append(held_token(response.content.decode()))
        on_disk = held(held_files_in)
        assert len(on_disk) == min(n + 1, 5)
        assert sum(on_disk.values()) <= settings.HACS_UPLOAD_HOLD_TOTAL_BYTES
        if n == 5:  # the sixth lets the first go, and says so by name
            page = response.content.decode()
            assert (
                "list-00.csv (3.0\xa0MB) is no longer held on the server: HACS holds at most 5 "
                "checked files for you, and let the oldest go to hold this one." in page
            )
            assert "list-01.csv" not in page
    assert set(held(held_files_in)) == {f"{user.pk}.{token}.seeds" for token in tokens[-5:]}
    assert held_files_in.stat().st_mode & 0o777 == 0o700
    assert {path.stat().st_mode & 0o777 for path in held_files_in.iterdir()} == {0o600}
    assert set(logged_in_client.session["hacs_held_uploads"]) == set(tokens[-5:])
    # The newest held file is still added without choosing it again; a dropped one is explained.
    added = logged_in_client.post("/sites/upload/", {"held": tokens[-1], "action": "import"})
    assert added.status_code == 200 and Site.objects.get().seed_url == "http://a.edu/~u19/"
    gone = logged_in_client.post("/sites/upload/", {"held": tokens[0], "action": "import"})
    assert gone.status_code == 400
    assert "no longer held on the server" in gone.content.decode()


@pytest.mark.django_db
def test_the_total_bound_lets_the_oldest_file_of_any_user_go_and_tells_its_owner(
    held_files_in: Path, settings: Any
) -> None:
    settings.HACS_UPLOAD_HOLD_TOTAL_BYTES = 7 * MB  # three lists of 2 MB
    clients = {}
    for name in ("ann", "bob", "cy"):
        clients[name] = Client()
        clients[name].force_login(make_user(name))
    post_file(clients["ann"], seed_list(2 * MB, 0), "check", "ann-1.csv")
    post_file(clients["ann"], seed_list(2 * MB, 1), "check", "ann-2.csv")
    post_file(clients["bob"], seed_list(2 * MB, 2), "check", "bob-1.csv")
    assert len(held(held_files_in)) == 3
    fourth = post_file(clients["cy"], seed_list(2 * MB, 3), "check", "cy-1.csv")
    assert fourth.status_code == 200
    on_disk = held(held_files_in)
    assert len(on_disk) == 3 and sum(on_disk.values()) <= 7 * MB
    owners = sorted(name.split(".")[0] for name in on_disk)
    assert owners == sorted(str(c.session["_auth_user_id"]) for c in clients.values())
    assert "ann-1.csv" not in fourth.content.decode()  # not cy's to know
    # Ann is told on her next visit, once.
    page = clients["ann"].get("/sites/upload/").content.decode()
    assert "ann-1.csv is no longer held on the server" in page
    assert "ann-2.csv" not in page
    assert "ann-1.csv" not in clients["ann"].get("/sites/upload/").content.decode()
    # Ann's next file lets her own older one go, since it is now the oldest of all.
    fifth = post_file(clients["ann"], seed_list(2 * MB, 4), "check", "ann-3.csv")
    said = "ann-2.csv (2.0\xa0MB) is no longer held on the server: HACS holds at most 7.0\xa0MB"
    assert f"{said} of checked files in all" in fifth.content.decode()


def test_held_files_stay_within_the_bounds_when_requests_run_at_once(
    held_files_in: Path, settings: Any
) -> None:
    from dashboard.views import upload

    settings.HACS_UPLOAD_HOLD_PER_USER = 2
    settings.HACS_UPLOAD_HOLD_TOTAL_BYTES = 10_000
    errors: list[BaseException] = []

    def check_lists(owner: int) -> None:
        try:
            for n in range(25):
                upload._store(owner=str(owner), data=b"x" * (1000 + n))
        except BaseException as error:
            errors.append(error)

    threads = [threading.Thread(target=check_lists, args=(owner,)) for owner in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    # Side by side, requests may hold one file each beyond the bounds for a moment; the next
    # one held brings them back.
    upload._store(owner="99", data=b"y" * 1000)
    on_disk = held(held_files_in)
    assert sum(on_disk.values()) <= 10_000
    per_owner = [name.split(".")[0] for name in on_disk]
    assert max(per_owner.count(owner) for owner in per_owner) <= 2


def test_a_held_file_removed_by_another_request_meanwhile_is_simply_gone(
    held_files_in: Path, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dashboard.views import upload

    settings.HACS_UPLOAD_HOLD_PER_USER = 1
    first, _ = upload._store(owner="1", data=b"a" * 10)
    listed = upload._held_on_disk()
    (held_files_in / f"1.{first}.seeds").unlink()  # another request lets it go first
    monkeypatch.setattr(upload, "_held_on_disk", lambda: listed)
    second, dropped = upload._store(owner="1", data=b"b" * 10)
    assert [(file.token, why) for file, why in dropped] == [(first, "per_user")]
    assert set(held(held_files_in)) == {f"1.{second}.seeds"}


@pytest.mark.django_db
def test_the_upload_page_states_its_line_length_and_how_many_files_it_holds(
    logged_in_client: Any,
) -> None:
    response = post_file(logged_in_client, b"http://a.edu/~x/\n", "check")
    page = response.content.decode()
    assert "each line at most 8,192 characters" in page
    assert "it keeps your 5 most recently checked files" in page


# --- Item 7: a stored GP4C function nested thousands deep -------------------------------------

LIST_DAY = date(2018, 6, 1)


def deep(depth: int) -> str:
    return "log(" * depth + "X" + ")" * depth


@pytest.fixture()
def deep_scorer(request: pytest.FixtureRequest, db: None) -> LearnedScorer:
    """A finished GP4C scheduler whose stored function was edited to nest ``request.param``
    deep, and a site with observations for a list to rank."""
    t = reference_instant(LIST_DAY)
    site = make_site()
    add_observations(site, [t - timedelta(days=d) for d in (90, 60, 30)], updates=[False] * 3)
    parameters = {
        "kind": "gp4c",
        "level": "homepage",
        "start": "2017-03-01",
        "end": "2017-10-01",
        "w_weeks": 6,
    }
    return stored_run(
        LearnedScorer,
        kind="gp4c",
        level="homepage",
        start=date(2017, 3, 1),
        end=date(2017, 10, 1),
        parameters=parameters,
        status=LearnedScorer.Status.DONE,
        model={"expression": deep(request.param), "formula": "(edited)"},
        finished_at=datetime(2018, 1, 1, tzinfo=UTC),
    )


def refusal(depth: int) -> str:
    return (
        f"cannot be read back: score function nested {depth:,} deep; a score function may be "
        "at most 100 deep (GP4C learns functions at most 10 deep). Learn a new one with "
        "`manage.py learn_scorer --kind gp4c --level homepage"
    )


@pytest.mark.parametrize("deep_scorer", [3_000, 20_000], indirect=True)
def test_the_crawl_list_page_says_a_too_deep_function_cannot_be_read(
    logged_in_client: Any, deep_scorer: LearnedScorer
) -> None:
    depth = int(deep_scorer.model["expression"].count("("))
    form = {
        "day": LIST_DAY.isoformat(),
        "budget": "5",
        "level": "homepage",
        "method": "gp4c",
        "history_days": "400",
        "e_days": "7",
    }
    response = logged_in_client.post("/crawl-list/build/", form)
    assert response.status_code == 400
    page = response.content.decode()
    which = "The GP4C scheduler learned at the homepage level on 1 Mar 2017 to 1 Oct 2017"
    assert f"{which} (learning run {deep_scorer.pk}) {refusal(depth)}" in page
    assert not CrawlList.objects.exists()


@pytest.mark.parametrize("deep_scorer", [3_000, 20_000], indirect=True)
def test_crawl_list_and_the_evaluation_say_a_too_deep_function_cannot_be_read(
    deep_scorer: LearnedScorer,
) -> None:
    from scheduling.learning import UnusableLearnedScorer, learned_replay_policies

    depth = int(deep_scorer.model["expression"].count("("))
    with pytest.raises(CommandError) as raised:
        learned_list_command("gp4c", LIST_DAY)
    assert refusal(depth) in str(raised.value)
    # The evaluation and the replay say it too, rather than leave GP4C out unexplained.
    with pytest.raises(UnusableLearnedScorer, match=re.escape(refusal(depth))):
        learned_replay_policies("homepage")
    assert not CrawlList.objects.exists()


@pytest.mark.django_db
def test_a_stored_lws_model_that_cannot_be_read_back_is_said_the_same_way() -> None:
    t = reference_instant(LIST_DAY)
    add_observations(make_site(), [t - timedelta(days=d) for d in (60, 30)], updates=[False] * 2)
    scorer = stored_run(
        LearnedScorer,
        kind="lws",
        level="homepage",
        start=date(2017, 3, 1),
        end=date(2017, 10, 1),
        parameters={"kind": "lws", "start": "2017-03-01", "end": "2017-10-01"},
        status=LearnedScorer.Status.DONE,
        model={"features": ["n"]},
        finished_at=datetime(2018, 1, 1, tzinfo=UTC),
    )
    with pytest.raises(CommandError) as raised:
        learned_list_command("lws", LIST_DAY)
    assert f"(learning run {scorer.pk}) cannot be read back: not an LWS model" in str(raised.value)
