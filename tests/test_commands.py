"""The commands and the pages agree: crawl_list builds what the form and the daily job build and
says so on the page, a list is not stored twice, export_estimates reads what crawl_list reads,
CSV opens in Excel, and the commands show progress (and success) on a terminal."""

from __future__ import annotations

import csv
import fcntl
import getpass
import io
import os
import pty
import re
import struct
import subprocess
import sys
import termios
from datetime import UTC, date, timedelta
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.urls import reverse

from archive.models import Site
from dashboard.forms import CrawlListForm
from hacs.clock import reference_instant
from scheduling.crawl_lists import CrawlListOptions
from scheduling.jobs import daily_crawl_list
from scheduling.models import DEFAULT_METHOD, CrawlList, Level
from tests.conftest import database_url_of_test_db
from tests.factories import add_observations, make_site

pytestmark = pytest.mark.django_db
ROOT = Path(__file__).resolve().parent.parent
TODAY = date(2024, 3, 15)
RED = "\x1b[31"  # the start of Django's ERROR style, whatever its weight
GREEN = "\x1b[32"  # SUCCESS


@pytest.fixture()
def frozen_today(monkeypatch: pytest.MonkeyPatch) -> date:
    monkeypatch.setattr("hacs.clock.today", lambda *args, **kw: TODAY)
    return TODAY


def before(*days: float) -> list[Any]:
    t = reference_instant(TODAY)
    return [t - timedelta(days=d, hours=3) for d in days]


@pytest.fixture()
def sites(frozen_today: date) -> list[Site]:
    """Three sites with a few updates each in the last months, one author with a non-ASCII
    name."""
    found = []
    for n, (name, gap) in enumerate(
        [("Søren Kierkegaard", 9), ("Ada Lovelace", 15), ("Emmy Noether", 30)]
    ):
        site = make_site(
            author=name, seed_url=f"http://u.edu/~s{n}/", canonical_key=f"edu,u)/~s{n}"
        )
        days = [gap * k + 2 for k in range(8, 0, -1)]
        add_observations(site, before(*days), updates=[k % 2 == 1 for k in range(8)])
        found.append(site)
    return found


def run(*args: str) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command(*args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


# --- 1. One set of defaults; who built a list ------------------------------------------------


def test_crawl_list_without_options_builds_the_daily_jobs_list(
    sites: list[Site], settings: Any, logged_in_client: Any
) -> None:
    settings.HACS_THETA, settings.HACS_HISTORY_DAYS, settings.HACS_E_DAYS = 0.05, 400, 3.0
    out, err = run("crawl_list")
    crawl = CrawlList.objects.get()
    assert (crawl.date, crawl.level, crawl.method) == (TODAY, Level.HOMEPAGE, DEFAULT_METHOD)
    assert (crawl.theta, crawl.budget, crawl.history_days, crawl.e_days) == (0.05, None, 400, 3)
    assert crawl.source == CrawlList.Source.COMMAND_LINE
    assert crawl.terminal_user == getpass.getuser() and crawl.created_by is None
    # The form offers the same values, the daily job builds the same list.
    configured = CrawlListOptions.from_settings()
    initial = CrawlListForm.initial_values()
    assert {k: initial[k] for k in configured.to_json()} == configured.to_json()
    assert (initial["theta"], initial["history_days"], initial["e_days"]) == (0.05, 400, 3.0)
    assert "built: 3 of 3 sites" in err and out.startswith("rank,url,author")
    assert "Stored as an experiment" in err and not crawl.is_daily

    page = logged_in_client.get(reverse("crawl-list")).content.decode()
    assert f"from the command line by {getpass.getuser()}" in page
    assert "No daily list yet" in page and "Experiment</span>" in page

    # The daily job builds the same entries, as the day's own list: never the experiment.
    daily = CrawlList.objects.get(pk=daily_crawl_list())
    assert daily.pk != crawl.pk and daily.is_daily and daily.source == CrawlList.Source.DAILY_JOB
    fields = ("rank", "site_id", "probability")
    assert list(daily.entries.values_list(*fields)) == list(crawl.entries.values_list(*fields))
    page = logged_in_client.get(reverse("crawl-list")).content.decode()
    assert "Daily list for" in page and "by the daily job" in page


def test_each_list_says_who_built_it(sites: list[Site], logged_in_client: Any) -> None:
    daily_crawl_list()
    form = {
        "day": "2024-03-15",
        "theta": "0.2",
        "level": "homepage",
        "method": DEFAULT_METHOD,
        "history_days": "1095",
        "e_days": "1",
    }
    logged_in_client.post(reverse("crawl-list-create"), form)
    run("crawl_list", "--theta", "0.1")
    built = {c.source: c.built_by for c in CrawlList.objects.all()}
    assert built == {
        "daily_job": "by the daily job",
        "page": "by librarian",
        "command": f"from the command line by {getpass.getuser()}",
    }
    page = logged_in_client.get(reverse("crawl-list")).content.decode()
    for label in built.values():
        assert label in page
    # Stored lists are dated as every other page dates a day.
    assert '<time datetime="2024-03-15">15 Mar 2024</time> · Homepage' in page


def test_the_command_refuses_a_list_of_every_site_as_the_form_does(sites: list[Site]) -> None:
    with pytest.raises(CommandError, match="No list was built: give a threshold --theta"):
        run("crawl_list", "--theta", "none")
    out, _err = run("crawl_list", "--theta", "none", "--budget", "2")
    assert len(out.splitlines()) == 3 and CrawlList.objects.get().theta is None
    with pytest.raises(CommandError, match="--e-days.*not between 0 and 3650"):
        run("crawl_list", "--e-days", "-1")
    assert CrawlList.objects.count() == 1


# --- 2. Identical lists are stored once ------------------------------------------------------


def test_an_identical_list_is_not_stored_again_and_a_changed_one_is(
    sites: list[Site], logged_in_client: Any
) -> None:
    form = {
        "day": "2024-03-15",
        "theta": "0",
        "level": "homepage",
        "method": DEFAULT_METHOD,
        "history_days": "1095",
        "e_days": "1",
    }
    first = logged_in_client.post(reverse("crawl-list-create"), form, follow=True)
    crawl = CrawlList.objects.get()
    assert "built: 3 of 3 sites" in first.content.decode()
    again = logged_in_client.post(reverse("crawl-list-create"), form, follow=True)
    at = crawl.created_at.astimezone(UTC).strftime("%H:%M")
    assert CrawlList.objects.count() == 1
    assert again.redirect_chain[-1][0].endswith(f"?list={crawl.pk}")
    assert f"Same as the list built at {at} UTC on" in again.content.decode()
    assert "by librarian; not stored again." in again.content.decode()
    _out, err = run("crawl_list", "--theta", "0")
    assert "by librarian; not stored again." in err and CrawlList.objects.count() == 1

    # Other options, or a new capture that changes a probability: a new list.
    run("crawl_list", "--theta", "0", "--budget", "2")
    assert CrawlList.objects.count() == 2
    add_observations(sites[0], before(1), updates=[True], page="new/")
    run("crawl_list", "--theta", "0")
    assert CrawlList.objects.count() == 3
    newest = CrawlList.objects.order_by("-pk").first()
    assert newest is not None and newest.source == CrawlList.Source.COMMAND_LINE


# --- 3. export_estimates reads what crawl_list reads ------------------------------------------


def test_export_estimates_has_the_defaults_of_crawl_list(sites: list[Site], settings: Any) -> None:
    settings.HACS_HISTORY_DAYS = 100  # cuts the slowest site's history: the window matters
    listed, _err = run("crawl_list", "--theta", "0")
    exported, _err = run("export_estimates")
    ranked = {row["url"]: row for row in csv.DictReader(io.StringIO(listed))}
    rows = list(csv.DictReader(io.StringIO(exported)))
    assert len(rows) == 3 and {row["url"] for row in rows} == set(ranked)
    for row in rows:
        assert (row["level"], row["method"]) == (Level.HOMEPAGE, DEFAULT_METHOD)
        same = ranked[row["url"]]
        for column in (
            "rate_per_day",
            "interval_days",
            "tau",
            "observations",
            "span_days",
            "interval_low_days",
            "interval_high_days",
            "last_copy",
        ):
            assert row[column] == same[column], column
    slow = next(row for row in rows if row["author"] == "Emmy Noether")
    assert int(slow["observations"]) < 8  # the window, not the whole history
    whole, _err = run("export_estimates", "--start", "2000-01-01", "--end", "2024-03-15")
    assert (
        next(r for r in csv.DictReader(io.StringIO(whole)) if r["author"] == "Emmy Noether")[
            "observations"
        ]
        == "8"
    )
    with pytest.raises(CommandError, match="--stored prints the stored estimates"):
        run("export_estimates", "--stored", "--date", "2024-03-01")


# --- 5. CSV for spreadsheets; URL lists -------------------------------------------------------


def test_crawl_list_prints_csv_or_urls_and_excel_reads_names(
    sites: list[Site], logged_in_client: Any
) -> None:
    csv_text, _err = run("crawl_list", "--theta", "0")
    crawl = CrawlList.objects.get()
    urls, _err = run("crawl_list", "--theta", "0", "--format", "urls")
    ranked = list(crawl.entries.order_by("rank").values_list("site__seed_url", flat=True))
    assert urls.splitlines() == ranked and len(ranked) == 3
    assert [row["url"] for row in csv.DictReader(io.StringIO(csv_text))] == ranked
    # Plain CSV: no byte order mark, the header's first name is "rank".
    assert csv_text.startswith("rank,")
    plain = b"".join(
        logged_in_client.get(reverse("crawl-list-csv", args=[crawl.pk])).streaming_content
    )
    assert plain.startswith(b"rank,") and "Søren".encode() in plain
    # For Excel: a UTF-8 byte order mark, then the same text.
    excel_text, _err = run("crawl_list", "--theta", "0", "--excel")
    assert excel_text == "\ufeff" + csv_text
    download = logged_in_client.get(reverse("crawl-list-csv", args=[crawl.pk]), {"excel": "1"})
    body = b"".join(download.streaming_content)
    assert body == b"\xef\xbb\xbf" + plain
    assert "-excel.csv" in download["Content-Disposition"]
    assert body.decode("utf-8-sig").splitlines()[1:] == csv_text.splitlines()[1:]
    with pytest.raises(CommandError, match="--excel applies to --format csv only"):
        run("crawl_list", "--theta", "0", "--format", "urls", "--excel")
    page = logged_in_client.get(reverse("crawl-list"), {"list": crawl.pk}).content.decode()
    assert f'href="/crawl-list/{crawl.pk}.csv?excel=1"' in page


# --- 6. Progress and success on a terminal ----------------------------------------------------


def on_terminal(args: list[str], env: dict[str, str]) -> tuple[str, int]:
    """Run ``manage.py`` with stdout and stderr on a pseudo-terminal of 100 columns, as in a
    terminal window; returns what it showed and its exit status."""
    controller, terminal = pty.openpty()
    fcntl.ioctl(terminal, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))
    process = subprocess.Popen(
        [sys.executable, str(ROOT / "manage.py"), *args],
        cwd=ROOT,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=terminal,
        stderr=terminal,
    )
    os.close(terminal)
    shown = b""
    while True:
        try:
            chunk = os.read(controller, 65536)
        except OSError:  # the command closed the terminal
            break
        if not chunk:
            break
        shown += chunk
    os.close(controller)
    return shown.decode("utf-8", "replace"), process.wait(timeout=600)


def piped(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(ROOT / "manage.py"), *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


@pytest.fixture()
def terminal_env(frozen_today: date) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "DJANGO_COLORS")}
    env.update(DATABASE_URL=database_url_of_test_db(), TERM="xterm-256color", PYTHONUNBUFFERED="1")
    return env


SIMULATE = ["simulate", "--start", "2017-06-01", "--days", "3", "--budgets", "0.5", "--skip-checks"]


def evaluate_to(result: Path) -> list[str]:
    """An evaluation of one week at the homepage level, written to ``result``."""
    dates = ["--start", "2017-06-01", "--end", "2017-06-08"]
    return ["evaluate", *dates, "--w-weeks", "4", "--level", "homepage", "--output", str(result)]


def check_the_demo_archive_shows_a_bar_on_a_terminal_only(
    tmp_path: Path, terminal_env: dict[str, str]
) -> None:
    # System checks are skipped: the test is about what the commands show, not the project.
    demo = ["make_demo_archive", str(tmp_path / "demo"), "--sites", "20", "--skip-checks"]
    shown, status = on_terminal(demo, terminal_env)
    assert status == 0, shown
    assert "Writing demo.warc.gz" in shown and "B/s" in shown  # the bar, moving
    assert "Wrote " in shown and RED not in shown
    quiet = piped([demo[0], str(tmp_path / "again"), *demo[2:]], terminal_env)
    assert quiet.returncode == 0 and "Wrote " in quiet.stdout
    assert quiet.stderr == ""  # no bar in a pipe or a log file


def check_the_warc_import_shows_its_share_of_bytes_read(
    tmp_path: Path, terminal_env: dict[str, str]
) -> None:
    seeds = tmp_path / "demo" / "seeds.csv"
    piped(["import_seeds", str(seeds), "--skip-checks"], terminal_env)
    warc = ["import_warc", str(tmp_path / "demo" / "demo.warc.gz"), "--skip-checks"]
    shown, status = on_terminal(warc, terminal_env)
    assert status == 0, shown
    # The bar with its share of bytes read (a bar left off at its end clears its last state, so
    # whether 100 % is ever drawn depends on timing).
    assert re.search(r"Importing:\s+\d+%\|", shown), shown
    assert "WARC captures read" in shown and RED not in shown
    assert Site.objects.filter(import_status="done").count() == 20


@pytest.mark.integration
@pytest.mark.django_db(transaction=True)
def test_demo_archive_and_warc_import_show_progress_on_a_terminal_only(
    tmp_path: Path, terminal_env: dict[str, str]
) -> None:
    check_the_demo_archive_shows_a_bar_on_a_terminal_only(tmp_path, terminal_env)
    check_the_warc_import_shows_its_share_of_bytes_read(tmp_path, terminal_env)

    # An evaluation written to a file: where it went and its summary, neither in red.
    result = tmp_path / "evaluation.json"
    shown, status = on_terminal([*evaluate_to(result), "--skip-checks"], terminal_env)
    assert status == 0, shown
    assert f"written to {result}" in shown and GREEN in shown and "F1" in shown
    assert RED not in shown and result.stat().st_size > 0

    # A replay: a bar through its policies' days on a terminal, none in a pipe (the bar clears
    # itself at its end, so which share it last drew depends on timing).
    shown, status = on_terminal(SIMULATE, terminal_env)
    assert status == 0, shown
    assert re.search(r"Replaying:\s+\d+%\|", shown) and "found/crawls" in shown, shown
    quiet = piped(SIMULATE, terminal_env)
    assert quiet.returncode == 0 and "found/crawls" in quiet.stdout and quiet.stderr == ""


@pytest.mark.integration
@pytest.mark.django_db(transaction=True)
def test_success_is_not_shown_in_red_and_errors_are(
    sites: list[Site], terminal_env: dict[str, str]
) -> None:
    shown, status = on_terminal(
        ["crawl_list", "--date", "2024-03-15", "--theta", "0", "--skip-checks"], terminal_env
    )
    assert status == 0, shown
    assert "built: 3 of 3 sites" in shown and "rank,url,author" in shown
    assert RED not in shown
    shown, status = on_terminal(["crawl_list", "--theta", "none", "--skip-checks"], terminal_env)
    assert status == 1 and RED in shown and "No list was built: give a threshold" in shown


@pytest.mark.django_db(transaction=True)
def test_lists_stored_before_the_source_was_recorded_keep_who_built_them() -> None:
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    executor = MigrationExecutor(connection)
    before = [("scheduling", "0006_learned_scorers")]
    executor.migrate(before)
    old_apps = executor.loader.project_state(before).apps
    user = old_apps.get_model("auth", "User").objects.create(username="ada")
    lists = old_apps.get_model("scheduling", "CrawlList").objects
    lists.create(date=TODAY, history_days=1095, e_days=1, created_by=user)
    lists.create(date=TODAY, history_days=1095, e_days=1)

    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes())
    built = sorted(c.built_by for c in CrawlList.objects.select_related("created_by"))
    assert built == ["by ada", "by the daily job"]
