"""Handing the day's crawl list to Heritrix 3 and Browsertrix: files, requests, failures, the
daily job, the command and the Crawl list page."""

from __future__ import annotations

import os
import socket
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import pytest
from django.core.exceptions import ValidationError
from django.core.management import call_command
from django.core.management.base import CommandError

from archive.models import Site, Tag
from hacs.clock import reference_instant
from hacs_site.clock import today
from handoff import heritrix
from handoff.models import HandOff, HandOffRun
from handoff.services import hand_off_run
from jobs.models import JobRecord
from operations.daily import daily_crawl_list_and_hand_offs
from scheduling.models import CrawlList, CrawlListEntry
from testbed.browsertrix_server import ORG_ID, TOKEN, VIEWER_TOKEN, WORKFLOW_ID, BrowsertrixServer
from tests.factories import add_observations, make_site, make_user

pytestmark = pytest.mark.django_db
DAY = date(2026, 11, 24)
TOKEN_VAR = "HACS_BROWSERTRIX_TOKEN_TEST"
USER_VAR = "HACS_BROWSERTRIX_LOGIN_TEST_USER"
PASSWORD_VAR = "HACS_BROWSERTRIX_LOGIN_TEST_PASSWORD"


def make_list(
    sites: list[Site], *, day: date = DAY, level: str = "homepage", daily: bool = False
) -> CrawlList:
    crawl = CrawlList.objects.create(
        date=day, level=level, history_days=1095, e_days=1, is_daily=daily
    )
    CrawlListEntry.objects.bulk_create(
        CrawlListEntry(crawl_list=crawl, rank=n, site=site, probability=1 - n / 100)
        for n, site in enumerate(sites, start=1)
    )
    return crawl


@pytest.fixture(autouse=True)
def heritrix_root(settings: Any, tmp_path: Path) -> Path:
    """Heritrix hand-offs write only inside HACS_HERITRIX_ROOT: here, the test's directory."""
    settings.HACS_HERITRIX_ROOT = str(tmp_path)
    return tmp_path


def allow(settings: Any, url: str) -> None:
    """Trust the local Browsertrix at ``url`` (http on 127.0.0.1), as an operator would."""
    settings.HACS_BROWSERTRIX_ALLOWED_HOSTS = [url.removeprefix("http://")]


@pytest.fixture()
def sites() -> list[Site]:
    return [make_site(seed_url=f"http://www.cs.example.edu/~s{n}/") for n in range(1, 6)]


@pytest.fixture()
def job_dir(tmp_path: Path) -> Path:
    """A Heritrix job directory as a launched job leaves it: with its action directory."""
    (tmp_path / "job" / "action").mkdir(parents=True)
    return tmp_path / "job"


def heritrix_hand_off(job_dir: Path, **kw: Any) -> HandOff:
    kw.setdefault("name", "Scholars on Heritrix")
    kw.setdefault("kind", HandOff.Kind.HERITRIX_ACTION)
    return HandOff.objects.create(job_dir=str(job_dir), **kw)


def browsertrix_hand_off(server: BrowsertrixServer, **kw: Any) -> HandOff:
    kw.setdefault("name", "Scholars on Browsertrix")
    kw.setdefault("org_id", ORG_ID)
    kw.setdefault("workflow_id", WORKFLOW_ID)
    kw.setdefault("token_env", TOKEN_VAR)
    return HandOff.objects.create(kind=HandOff.Kind.BROWSERTRIX, api_url=server.url, **kw)


def seed_lines(path: Path) -> list[str]:
    return [line for line in path.read_text().splitlines() if not line.startswith("#")]


@pytest.fixture()
def browsertrix(monkeypatch: pytest.MonkeyPatch, settings: Any) -> Any:
    monkeypatch.setenv(TOKEN_VAR, TOKEN)
    with BrowsertrixServer() as server:
        allow(settings, server.url)
        yield server


# --- Heritrix 3 ----------------------------------------------------------------------------------


def test_the_action_hand_off_writes_the_days_seeds_file_in_rank_order(
    sites: list[Site], job_dir: Path
) -> None:
    crawl = make_list(sites)
    run = hand_off_run(hand_off=heritrix_hand_off(job_dir), crawl_list=crawl)
    written = job_dir / "action" / "hacs-2026-11-24-scholars-on-heritrix.seeds"
    assert run.status == "sent" and run.sites == 5
    assert seed_lines(written) == [s.seed_url for s in sites]
    header = [line for line in written.read_text().splitlines() if line.startswith("#")]
    assert "HACS crawl list" in header[0] and "2026-11-24" in header[0]
    assert sorted(p.name for p in (job_dir / "action").iterdir()) == [written.name]
    assert [p.name for p in job_dir.iterdir()] == ["action"]  # no temporary file left
    record = JobRecord.objects.get(kind="hand_off")
    assert (record.status, record.counts["sites"], record.error) == ("finished", 5, "")


def test_two_days_lists_never_share_a_file(sites: list[Site], job_dir: Path) -> None:
    hand_off = heritrix_hand_off(job_dir)
    hand_off_run(hand_off=hand_off, crawl_list=make_list(sites[:2]))
    hand_off_run(hand_off=hand_off, crawl_list=make_list(sites[3:], day=DAY + timedelta(days=1)))
    action = job_dir / "action"
    assert seed_lines(action / "hacs-2026-11-24-scholars-on-heritrix.seeds") == [
        s.seed_url for s in sites[:2]
    ]
    assert seed_lines(action / "hacs-2026-11-25-scholars-on-heritrix.seeds") == [
        s.seed_url for s in sites[3:]
    ]


def test_a_tag_hands_off_only_the_tagged_sites_in_rank_order(
    sites: list[Site], job_dir: Path
) -> None:
    physics = Tag.objects.create(name="physics")
    for site in (sites[4], sites[1]):
        site.tags.add(physics)
    hand_off = heritrix_hand_off(job_dir, tag=physics)
    run = hand_off_run(hand_off=hand_off, crawl_list=make_list(sites))
    assert run.sites == 2
    written = next((job_dir / "action").glob("*.seeds"))
    assert seed_lines(written) == [sites[1].seed_url, sites[4].seed_url]
    assert 'tag "physics"' in written.read_text()


def test_the_seeds_file_appears_whole_or_not_at_all(
    sites: list[Site], job_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """At the moment of the rename the whole text is in a temporary file outside ``action/``
    (Heritrix moves away every file it finds there), whose name is not a ``.seeds`` name, and
    no ``.seeds`` file is in ``action/`` yet."""
    seen: list[tuple[Path, list[str], str]] = []
    real_replace = os.replace

    def watching_replace(source: str, target: str, **dir_fds: int) -> None:
        # The names are relative to the job directory (source) and action/ (target).
        temp = job_dir / source
        seen.append(
            (temp, sorted(p.name for p in (job_dir / "action").iterdir()), temp.read_text())
        )
        real_replace(source, target, **dir_fds)

    monkeypatch.setattr(heritrix.os, "replace", watching_replace)
    many = sites + [make_site(seed_url=f"http://x.example.org/~p{n}/") for n in range(2000)]
    hand_off_run(hand_off=heritrix_hand_off(job_dir), crawl_list=make_list(many))
    [(source, action_listing, text)] = seen
    assert source.parent == job_dir and source.name.endswith(".tmp")
    assert action_listing == []
    assert [line for line in text.splitlines() if not line.startswith("#")] == [
        s.seed_url for s in many
    ]
    assert not source.exists()


def test_the_relaunch_hand_off_replaces_seeds_txt(sites: list[Site], job_dir: Path) -> None:
    (job_dir / "seeds.txt").write_text("http://yesterday.example.org/\n")
    hand_off = heritrix_hand_off(job_dir, kind=HandOff.Kind.HERITRIX_RELAUNCH)
    run = hand_off_run(hand_off=hand_off, crawl_list=make_list(sites[:3]))
    assert run.status == "sent"
    assert seed_lines(job_dir / "seeds.txt") == [s.seed_url for s in sites[:3]]
    assert sorted(p.name for p in job_dir.iterdir()) == ["action", "seeds.txt"]
    assert list((job_dir / "action").iterdir()) == []


@pytest.mark.parametrize(
    ("layout", "expected"),
    [
        ("missing", "the Heritrix job directory {job} does not exist"),
        ("file", "the Heritrix job directory {job} is not a directory"),
        ("no action", "the Heritrix job has no action directory {job}/action"),
    ],
)
def test_a_bad_job_directory_is_named_and_nothing_is_written(
    sites: list[Site], tmp_path: Path, layout: str, expected: str
) -> None:
    job = tmp_path / "jobs" / "scholars"
    if layout == "file":
        job.parent.mkdir()
        job.write_text("not a directory")
    elif layout == "no action":
        job.mkdir(parents=True)
    run = hand_off_run(hand_off=heritrix_hand_off(job), crawl_list=make_list(sites))
    message = expected.format(job=job)
    assert run.status == "failed" and message in run.message
    assert run.message.startswith('Hand-off "Scholars on Heritrix"')
    record = JobRecord.objects.get(kind="hand_off")
    assert record.status == "failed" and message in record.error
    assert not list(tmp_path.rglob("*.seeds")) and not list(tmp_path.rglob("*.tmp"))


def test_a_directory_that_cannot_be_written_is_named(sites: list[Site], settings: Any) -> None:
    """``/proc/self`` exists but takes no new file, even from root."""
    settings.HACS_HERITRIX_ROOT = "/proc"
    hand_off = heritrix_hand_off(Path("/proc/self"), kind=HandOff.Kind.HERITRIX_RELAUNCH)
    run = hand_off_run(hand_off=hand_off, crawl_list=make_list(sites))
    assert run.status == "failed"
    assert run.message == (
        'Hand-off "Scholars on Heritrix": HACS may not write to the Heritrix job directory '
        "/proc/self; give the user HACS runs as write permission there."
    )


def test_a_write_that_fails_leaves_no_file_behind(sites: list[Site], job_dir: Path) -> None:
    (job_dir / "seeds.txt").mkdir()  # a directory where the seeds file should go
    hand_off = heritrix_hand_off(job_dir, kind=HandOff.Kind.HERITRIX_RELAUNCH)
    run = hand_off_run(hand_off=hand_off, crawl_list=make_list(sites))
    assert run.status == "failed"
    assert f"could not write {job_dir / 'seeds.txt'}: Is a directory" in run.message
    assert "Nothing was written" in run.message
    assert sorted(p.name for p in job_dir.iterdir()) == ["action", "seeds.txt"]
    assert list((job_dir / "seeds.txt").iterdir()) == []


def test_a_list_without_the_tagged_sites_sends_nothing(sites: list[Site], job_dir: Path) -> None:
    hand_off = heritrix_hand_off(job_dir, tag=Tag.objects.create(name="chemistry"))
    run = hand_off_run(hand_off=hand_off, crawl_list=make_list(sites))
    assert run.status == "empty" and "no site carrying the tag chemistry" in run.message
    assert list((job_dir / "action").iterdir()) == []
    assert JobRecord.objects.get(kind="hand_off").status == "finished"


# --- Browsertrix ---------------------------------------------------------------------------------


def test_browsertrix_gets_the_file_the_workflow_change_and_the_start_in_order(
    sites: list[Site], browsertrix: BrowsertrixServer
) -> None:
    run = hand_off_run(hand_off=browsertrix_hand_off(browsertrix), crawl_list=make_list(sites))
    org = f"/api/orgs/{ORG_ID}"
    assert browsertrix.steps() == [
        ("PUT", f"{org}/files/seedFile"),
        ("PATCH", f"{org}/crawlconfigs/{WORKFLOW_ID}"),
        ("POST", f"{org}/crawlconfigs/{WORKFLOW_ID}/run"),
    ]
    upload, patch, start = browsertrix.requests
    assert all(r.headers["authorization"] == f"Bearer {TOKEN}" for r in browsertrix.requests)
    assert upload.query == {"filename": "hacs-2026-11-24-scholars-on-browsertrix.txt"}
    assert upload.body.decode().splitlines() == [s.seed_url for s in sites]
    [(file_id, _)] = browsertrix.state.files.items()
    assert patch.json() == {"config": {"seeds": None, "seedFileId": file_id}}
    assert start.body == b""
    assert browsertrix.state.workflows[WORKFLOW_ID]["config"]["seedFileId"] == file_id
    assert run.status == "sent" and run.sites == 5 and len(run.steps) == 3
    assert browsertrix.state.crawls[0] in run.message
    record = JobRecord.objects.get(kind="hand_off")
    assert (record.status, record.counts) == ("finished", {"sites": 5, "steps": 3})


def test_a_refused_token_names_its_variable_and_stops_at_once(
    sites: list[Site], browsertrix: BrowsertrixServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(TOKEN_VAR, "an expired token")
    run = hand_off_run(hand_off=browsertrix_hand_off(browsertrix), crawl_list=make_list(sites))
    assert f"Browsertrix refused the token in ${TOKEN_VAR} (401: invalid_credentials)" in (
        run.message
    )
    assert "Nothing was changed" in run.message and run.steps == []
    assert len(browsertrix.requests) == 1
    record = JobRecord.objects.get(kind="hand_off")
    assert record.status == "failed" and f"${TOKEN_VAR} (401" in record.error


def test_a_token_without_crawler_rights_is_a_403(
    sites: list[Site], browsertrix: BrowsertrixServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(TOKEN_VAR, VIEWER_TOKEN)
    run = hand_off_run(hand_off=browsertrix_hand_off(browsertrix), crawl_list=make_list(sites))
    assert f"Browsertrix refused the token in ${TOKEN_VAR} (403" in run.message
    assert f"crawler rights in organisation {ORG_ID}" in run.message


def test_an_unknown_organisation_is_named(
    sites: list[Site], browsertrix: BrowsertrixServer
) -> None:
    other = "00000000-0000-4000-8000-000000000000"
    hand_off = browsertrix_hand_off(browsertrix, org_id=other)
    run = hand_off_run(hand_off=hand_off, crawl_list=make_list(sites))
    assert f"has no organisation {other}" in run.message and "(404)" in run.message
    assert JobRecord.objects.get(kind="hand_off").status == "failed"


def test_an_unknown_workflow_is_named_after_the_upload_that_was_done(
    sites: list[Site], browsertrix: BrowsertrixServer
) -> None:
    other = "11111111-1111-4111-8111-111111111111"
    hand_off = browsertrix_hand_off(browsertrix, workflow_id=other)
    run = hand_off_run(hand_off=hand_off, crawl_list=make_list(sites))
    assert f"has no workflow {other} in organisation {ORG_ID} (404)" in run.message
    assert "Done before: uploaded 5 seeds" in run.message
    assert len(run.steps) == 1 and run.steps[0].startswith("uploaded 5 seeds")
    assert [m for m, _ in browsertrix.steps()] == ["PUT", "PATCH"]


@pytest.mark.parametrize("status", [500, 503])
def test_a_failing_browsertrix_names_the_host_and_the_steps_done(
    sites: list[Site], browsertrix: BrowsertrixServer, status: int
) -> None:
    browsertrix.fail("run", status)
    run = hand_off_run(hand_off=browsertrix_hand_off(browsertrix), crawl_list=make_list(sites))
    host = browsertrix.url.removeprefix("http://")
    assert f"Browsertrix at {host} failed with {status}" in run.message
    assert f"while starting workflow {WORKFLOW_ID}" in run.message
    assert len(run.steps) == 2 and "made file" in run.message
    record = JobRecord.objects.get(kind="hand_off")
    assert record.status == "failed" and f"failed with {status}" in record.error
    assert record.counts == {"sites": 0, "steps": 2}


def test_a_workflow_that_is_already_crawling_is_reported_with_browsertrixs_reason(
    sites: list[Site], browsertrix: BrowsertrixServer
) -> None:
    browsertrix.fail("run", 400, "crawl_already_running")
    run = hand_off_run(hand_off=browsertrix_hand_off(browsertrix), crawl_list=make_list(sites))
    assert f"refused starting workflow {WORKFLOW_ID} (400: crawl_already_running)" in run.message
    assert run.status == "failed" and len(run.steps) == 2


def test_a_browsertrix_that_refuses_connections_is_named(
    sites: list[Site], settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    allow(settings, f"http://127.0.0.1:{port}")
    monkeypatch.setenv(TOKEN_VAR, TOKEN)
    hand_off = HandOff.objects.create(
        name="Nowhere",
        kind=HandOff.Kind.BROWSERTRIX,
        api_url=f"http://127.0.0.1:{port}",
        org_id=ORG_ID,
        workflow_id=WORKFLOW_ID,
        token_env=TOKEN_VAR,
    )
    run = hand_off_run(hand_off=hand_off, crawl_list=make_list(sites))
    assert f"Browsertrix at 127.0.0.1:{port} could not be reached while uploading" in (run.message)
    assert "connection refused" in run.message


def test_a_browsertrix_that_does_not_answer_is_named(
    sites: list[Site], browsertrix: BrowsertrixServer, settings: Any
) -> None:
    settings.HACS_HTTP_TIMEOUT = 0.5
    browsertrix.stall("upload")
    run = hand_off_run(hand_off=browsertrix_hand_off(browsertrix), crawl_list=make_list(sites))
    host = browsertrix.url.removeprefix("http://")
    assert f"Browsertrix at {host} did not answer within 0.5 s" in run.message


def test_a_redirect_elsewhere_is_not_followed(
    sites: list[Site], browsertrix: BrowsertrixServer
) -> None:
    with BrowsertrixServer() as elsewhere:
        browsertrix.redirect("upload", f"{elsewhere.url}/api/orgs/{ORG_ID}/files/seedFile")
        run = hand_off_run(hand_off=browsertrix_hand_off(browsertrix), crawl_list=make_list(sites))
        assert elsewhere.requests == []
    assert "HACS follows no redirect" in run.message and len(browsertrix.requests) == 1


def test_an_unset_token_variable_is_named_before_any_request(
    sites: list[Site], browsertrix: BrowsertrixServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(TOKEN_VAR)
    run = hand_off_run(hand_off=browsertrix_hand_off(browsertrix), crawl_list=make_list(sites))
    assert f"the environment variable ${TOKEN_VAR} is not set" in run.message
    assert browsertrix.requests == []


def test_the_login_variables_stand_in_for_an_unset_token(
    sites: list[Site], browsertrix: BrowsertrixServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(TOKEN_VAR)
    monkeypatch.setenv(USER_VAR, browsertrix.username)
    monkeypatch.setenv(PASSWORD_VAR, browsertrix.password)
    hand_off = browsertrix_hand_off(browsertrix, username_env=USER_VAR, password_env=PASSWORD_VAR)
    run = hand_off_run(hand_off=hand_off, crawl_list=make_list(sites))
    assert run.status == "sent"
    login, *rest = browsertrix.requests
    assert (login.method, login.path) == ("POST", "/api/auth/jwt/login")
    assert b"username=crawler%40example.org" in login.body
    assert [r.headers["authorization"] for r in rest] == [f"Bearer {TOKEN}"] * 3


def test_a_refused_login_names_the_variables(
    sites: list[Site], browsertrix: BrowsertrixServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(TOKEN_VAR)
    monkeypatch.setenv(USER_VAR, browsertrix.username)
    monkeypatch.setenv(PASSWORD_VAR, "wrong")
    hand_off = browsertrix_hand_off(browsertrix, username_env=USER_VAR, password_env=PASSWORD_VAR)
    run = hand_off_run(hand_off=hand_off, crawl_list=make_list(sites))
    assert (
        f"Browsertrix refused the login in ${USER_VAR} and ${PASSWORD_VAR} "
        "(400: login_bad_credentials) while logging in"
    ) in run.message
    assert len(browsertrix.requests) == 1


# --- configuration -------------------------------------------------------------------------------


def messages_of(hand_off: HandOff) -> dict[str, list[str]]:
    with pytest.raises(ValidationError) as raised:
        hand_off.full_clean()
    return raised.value.message_dict


def test_a_heritrix_hand_off_needs_an_absolute_job_directory() -> None:
    missing = messages_of(HandOff(name="h", kind=HandOff.Kind.HERITRIX_ACTION))
    assert missing["job_dir"] == ["A Heritrix hand-off needs the job directory."]
    relative = messages_of(HandOff(name="h", kind="heritrix_relaunch", job_dir="jobs/scholars"))
    assert "must be an absolute path; 'jobs/scholars' is not" in relative["job_dir"][0]


def test_a_browsertrix_hand_off_names_each_bad_field() -> None:
    errors = messages_of(
        HandOff(
            name="b",
            kind=HandOff.Kind.BROWSERTRIX,
            api_url="ftp://btrix.example.org",
            org_id="my-org",
            workflow_id="",
            token_env="eyJhbGciOi secret",
        )
    )
    assert "is not an http:// or https:// address" in errors["api_url"][0]
    assert "'my-org' is not" in errors["org_id"][0]
    assert errors["workflow_id"][0].startswith("The workflow id is a UUID")
    assert "is not a variable HACS reads Browsertrix credentials from" in errors["token_env"][0]
    assert "Give the variable's name, not its value" in errors["token_env"][0]


def test_a_good_browsertrix_hand_off_is_tidied() -> None:
    hand_off = HandOff(
        name="b",
        kind=HandOff.Kind.BROWSERTRIX,
        api_url="https://btrix.example.org/api/",
        org_id=ORG_ID.upper(),
        workflow_id=WORKFLOW_ID,
        token_env="HACS_BROWSERTRIX_TOKEN_X",
    )
    hand_off.full_clean()
    assert hand_off.api_url == "https://btrix.example.org" and hand_off.org_id == ORG_ID


# --- the daily job -------------------------------------------------------------------------------


def test_the_daily_job_hands_off_after_the_list_and_one_failure_stops_no_other(
    settings: Any, job_dir: Path, tmp_path: Path, browsertrix: BrowsertrixServer
) -> None:
    settings.HACS_THETA = 0.0
    t = reference_instant(today())
    for n in range(3):
        site = make_site(seed_url=f"http://daily.example.edu/~d{n}/")
        add_observations(
            site,
            [t - timedelta(days=d) for d in (90, 60, 30, 10)],
            updates=[False, True, True, True],
        )
    browsertrix.fail("upload", 503)
    broken = browsertrix_hand_off(browsertrix, name="A Browsertrix that is down")
    working = heritrix_hand_off(job_dir, name="B Heritrix")
    heritrix_hand_off(tmp_path / "gone", name="C Heritrix gone")
    heritrix_hand_off(job_dir, name="D disabled", enabled=False)
    heritrix_hand_off(job_dir, name="E website level", level="website")

    list_id = daily_crawl_list_and_hand_offs()

    crawl = CrawlList.objects.get(pk=list_id)
    assert crawl.entries.count() == 3
    runs = {r.hand_off.name: r for r in HandOffRun.objects.select_related("hand_off")}
    assert sorted(runs) == ["A Browsertrix that is down", "B Heritrix", "C Heritrix gone"]
    assert runs["A Browsertrix that is down"].status == "failed"
    assert runs["C Heritrix gone"].status == "failed"
    assert runs[working.name].status == "sent" and runs[working.name].sites == 3
    assert len(list((job_dir / "action").glob("*.seeds"))) == 1
    records = JobRecord.objects.filter(kind="hand_off")
    assert sorted(records.values_list("status", flat=True)) == ["failed", "failed", "finished"]
    assert "failed with 503" in records.get(pk=runs[broken.name].job_id).error
    assert JobRecord.objects.get(kind="crawl_list").status == "finished"
    assert records.filter(created_at__lt=crawl.created_at).count() == 0


def test_the_cron_scheduler_runs_the_list_and_the_hand_offs() -> None:
    from rq.cron import CronScheduler

    scheduler = CronScheduler(connection=None)  # type: ignore[arg-type]
    scheduler.load_config_from_file("operations.cron")
    jobs = {job.func_name: job for job in scheduler.get_jobs()}
    assert jobs["operations.daily.daily_crawl_list_and_hand_offs"].cron == "0 5 * * *"
    assert "scheduling.jobs.daily_crawl_list" not in jobs


# --- the command ---------------------------------------------------------------------------------


def test_the_command_hands_off_the_daily_list_of_the_date_not_a_newer_experiment(
    sites: list[Site], job_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    daily = make_list(sites[1:4], daily=True)
    make_list(sites[:1])  # an experiment built later the same day
    heritrix_hand_off(job_dir)
    call_command("hand_off", "--date", "2026-11-24")
    out = capsys.readouterr().out
    assert "wrote 3 seeds to" in out
    run = HandOffRun.objects.get()
    assert run.crawl_list == daily
    assert seed_lines(next((job_dir / "action").glob("*.seeds"))) == [
        s.seed_url for s in sites[1:4]
    ]


def test_the_dry_run_says_what_it_would_send_and_sends_nothing(
    sites: list[Site],
    job_dir: Path,
    browsertrix: BrowsertrixServer,
    capsys: pytest.CaptureFixture[str],
) -> None:
    crawl = make_list(sites)
    heritrix_hand_off(job_dir)
    browsertrix_hand_off(browsertrix)
    call_command("hand_off", "--list", str(crawl.pk), "--dry-run")
    out = capsys.readouterr().out
    assert "would write 5 seeds to" in out and "would upload 5 seeds" in out
    assert sites[0].seed_url in out
    assert list((job_dir / "action").iterdir()) == [] and browsertrix.requests == []
    assert not HandOffRun.objects.exists() and not JobRecord.objects.exists()


def test_the_command_names_what_is_missing(
    sites: list[Site], job_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    heritrix_hand_off(job_dir)
    with pytest.raises(CommandError, match=r'No hand-off is named "nope" \(known: Scholars'):
        call_command("hand_off", "--name", "nope")
    with pytest.raises(CommandError, match="No crawl list has id 999"):
        call_command("hand_off", "--list", "999")
    with pytest.raises(CommandError, match="1 of 1 hand-offs did not go through"):
        call_command("hand_off", "--date", "2026-11-24")
    assert "no homepage-level daily list is stored for 2026-11-24" in capsys.readouterr().err
    with pytest.raises(CommandError, match="1 of 1"):
        call_command("hand_off", "--list", str(make_list(sites, level="website").pk))
    assert "takes homepage-level lists" in capsys.readouterr().err


def test_a_failed_hand_off_from_the_command_exits_non_zero(
    sites: list[Site], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    make_list(sites, daily=True)
    heritrix_hand_off(tmp_path / "missing")
    with pytest.raises(CommandError):
        call_command("hand_off", "--date", "2026-11-24")
    assert f"{tmp_path / 'missing'} does not exist" in capsys.readouterr().err


def test_the_command_says_a_date_has_no_daily_list_and_how_to_hand_off_an_experiment(
    sites: list[Site], job_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    experiment = make_list(sites)
    heritrix_hand_off(job_dir)
    with pytest.raises(CommandError):
        call_command("hand_off", "--date", "2026-11-24")
    assert "no homepage-level daily list is stored for 2026-11-24" in capsys.readouterr().err
    call_command("hand_off", "--list", str(experiment.pk))
    assert HandOffRun.objects.get().crawl_list == experiment


# --- the page ------------------------------------------------------------------------------------


def test_the_page_shows_the_hand_offs_of_the_lists_level_and_their_outcome(
    client: Any, sites: list[Site], job_dir: Path, tmp_path: Path
) -> None:
    crawl = make_list(sites)
    sent = heritrix_hand_off(job_dir)
    hand_off_run(hand_off=heritrix_hand_off(tmp_path / "x", name="Broken"), crawl_list=crawl)
    heritrix_hand_off(job_dir, name="Website crawler", level="website")
    client.force_login(make_user())
    page = client.get(f"/crawl-list/?list={crawl.pk}").content.decode()
    assert sent.name in page and "Broken" in page and "Website crawler" not in page
    assert "Not run yet." in page and "does not exist" in page
    assert page.count("Hand off now</button>") == 2


def test_a_librarian_hands_off_now_and_a_viewer_may_not(
    client: Any, sites: list[Site], job_dir: Path
) -> None:
    crawl = make_list(sites)
    hand_off = heritrix_hand_off(job_dir)
    client.force_login(make_user("viewer", role="viewer"))
    page = client.get(f"/crawl-list/?list={crawl.pk}").content.decode()
    assert "Scholars on Heritrix" in page and "Hand off now</button>" not in page
    url = f"/crawl-list/hand-off/{hand_off.pk}/"
    assert client.post(url, {"list": crawl.pk}).status_code == 403
    assert not HandOffRun.objects.exists()
    client.force_login(make_user())
    response = client.post(url, {"list": crawl.pk}, follow=True)
    assert response.redirect_chain[-1][0] == f"/crawl-list/?list={crawl.pk}#hand-offs"
    assert "wrote 5 seeds to" in response.content.decode()
    assert HandOffRun.objects.get().created_by.username == "librarian"
    assert client.get(url).status_code == 405


def test_admins_edit_hand_offs_and_see_field_named_messages(
    admin_client: Any, settings: Any
) -> None:
    settings.HACS_HERITRIX_ROOT = "/opt/heritrix/jobs"
    assert admin_client.get("/admin/handoff/handoff/add/").status_code == 200
    response = admin_client.post(
        "/admin/handoff/handoff/add/",
        {
            "name": "Scholars",
            "kind": "browsertrix",
            "level": "homepage",
            "enabled": "on",
            "api_url": "https://btrix.example.org",
            "org_id": ORG_ID,
            "workflow_id": "",
            "token_env": "HACS_BROWSERTRIX_TOKEN_SCHOLARS",
        },
    )
    assert response.status_code == 200 and not HandOff.objects.exists()
    assert response.context["adminform"].form.errors["workflow_id"] == [
        "The workflow id is a UUID such as 0f5d2b8e-9a8c-4a55-b3d4-7c0c1e7a9f21."
    ]
    response = admin_client.post(
        "/admin/handoff/handoff/add/",
        {
            "name": "Scholars",
            "kind": "heritrix_action",
            "level": "homepage",
            "enabled": "on",
            "job_dir": "/opt/heritrix/jobs/scholars",
        },
    )
    assert response.status_code == 302
    assert HandOff.objects.get().target == "/opt/heritrix/jobs/scholars/action/"
