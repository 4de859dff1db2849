"""Hand-offs trust nobody (issue #24, items 2 and 3): Browsertrix only over https at public
addresses unless an operator lists the host, credentials only from variables set aside for them,
nothing a server says shown on a page, one deadline for the whole hand-off; Heritrix writes only
inside HACS_HERITRIX_ROOT, through no symbolic link, into files nobody else may read.

Each rule is checked twice: when an admin saves the hand-off (``full_clean``, as the admin form
does) and when a row saved before the rule is sent.
"""

from __future__ import annotations

import logging
import os
import socket
import stat
import threading
import time
from collections.abc import Iterator
from datetime import date
from pathlib import Path
from typing import Any

import pytest
from django.core.exceptions import ValidationError

from archive.models import Site
from handoff.models import HandOff
from handoff.services import hand_off_run
from jobs.models import JobRecord
from scheduling.models import CrawlList, CrawlListEntry
from testbed.browsertrix_server import ORG_ID, TOKEN, WORKFLOW_ID, BrowsertrixServer
from tests.factories import make_site, make_user

pytestmark = pytest.mark.django_db
DAY = date(2026, 11, 24)
TOKEN_VAR = "HACS_BROWSERTRIX_TOKEN_SECURITY_TEST"
SECRET = "db_password=hunter2"


def make_list(sites: list[Site]) -> CrawlList:
    crawl = CrawlList.objects.create(date=DAY, level="homepage", history_days=1095, e_days=1)
    CrawlListEntry.objects.bulk_create(
        CrawlListEntry(crawl_list=crawl, rank=n, site=site, probability=0.9)
        for n, site in enumerate(sites, start=1)
    )
    return crawl


@pytest.fixture()
def crawl() -> CrawlList:
    return make_list([make_site(seed_url=f"http://www.cs.example.edu/~s{n}/") for n in (1, 2)])


@pytest.fixture()
def server(monkeypatch: pytest.MonkeyPatch, settings: Any) -> Iterator[BrowsertrixServer]:
    """A local Browsertrix on 127.0.0.1 over http, which no operator has listed yet."""
    monkeypatch.setenv(TOKEN_VAR, TOKEN)
    settings.HACS_BROWSERTRIX_ALLOWED_HOSTS = []
    with BrowsertrixServer() as running:
        yield running


def allow(settings: Any, url: str) -> None:
    settings.HACS_BROWSERTRIX_ALLOWED_HOSTS = [url.split("://", 1)[1]]


def browsertrix_row(api_url: str, **kw: Any) -> HandOff:
    """A row as one saved before the rules would be: stored without ``full_clean``."""
    kw.setdefault("token_env", TOKEN_VAR)
    return HandOff.objects.create(
        name="Scholars on Browsertrix",
        kind=HandOff.Kind.BROWSERTRIX,
        api_url=api_url,
        org_id=ORG_ID,
        workflow_id=WORKFLOW_ID,
        **kw,
    )


def saved_errors(**kw: Any) -> dict[str, list[str]]:
    """The admin form's field errors for a hand-off with these fields (empty when it saves)."""
    kw.setdefault("name", "h")
    try:
        HandOff(**kw).full_clean()
    except ValidationError as error:
        return error.message_dict
    return {}


def browsertrix_errors(api_url: str, **kw: Any) -> dict[str, list[str]]:
    kw.setdefault("token_env", "HACS_BROWSERTRIX_TOKEN_SCHOLARS")
    return saved_errors(
        kind=HandOff.Kind.BROWSERTRIX, api_url=api_url, org_id=ORG_ID, workflow_id=WORKFLOW_ID, **kw
    )


@pytest.fixture()
def resolve_as(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[str]]:
    """Names ending in ``.test`` resolve to the addresses the test puts in this dict (as a DNS
    server the attacker controls would answer); every other name resolves as usual."""
    answers: dict[str, list[str]] = {}
    real = socket.getaddrinfo

    def getaddrinfo(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(host, str) and host.endswith(".test"):
            return [
                (
                    socket.AF_INET6 if ":" in ip else socket.AF_INET,
                    socket.SOCK_STREAM,
                    6,
                    "",
                    (ip, int(port)) if ":" not in ip else (ip, int(port), 0, 0),
                )
                for ip in answers[host]
            ]
        return real(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    return answers


# --- 1. loopback, link-local and private addresses ---------------------------------------------


@pytest.mark.parametrize(
    ("url", "what"),
    [
        ("https://127.0.0.1:8443", "loopback"),
        ("https://localhost", "loopback"),
        ("https://169.254.169.254", "link-local"),
        ("https://10.1.2.3", "private"),
        ("https://192.168.0.5", "private"),
        ("https://[::1]:8443", "loopback"),
        ("https://[fd12:3456::1]", "private"),
        ("https://[fe80::1]", "link-local"),
        ("https://[::ffff:127.0.0.1]", "loopback"),
        ("https://[::ffff:169.254.169.254]", "link-local"),
        ("https://0.0.0.0", "unspecified"),
        ("https://224.0.0.1", "multicast"),
    ],
)
def test_an_admin_cannot_save_a_loopback_link_local_or_private_address(url: str, what: str) -> None:
    [message] = browsertrix_errors(url)["api_url"]
    assert what in message and "HACS_BROWSERTRIX_ALLOWED_HOSTS" in message


def test_a_listed_host_may_be_on_this_machine_over_http(settings: Any) -> None:
    settings.HACS_BROWSERTRIX_ALLOWED_HOSTS = ["127.0.0.1:9871", "btrix.library.test"]
    assert browsertrix_errors("http://127.0.0.1:9871") == {}
    assert browsertrix_errors("http://btrix.library.test:8000") == {}
    assert "api_url" in browsertrix_errors("http://127.0.0.1:9872")  # another port: not listed
    assert browsertrix_errors("https://app.browsertrix.com") == {}


def test_a_stored_row_whose_name_resolves_to_loopback_sends_nothing(
    crawl: CrawlList, server: BrowsertrixServer, resolve_as: dict[str, list[str]]
) -> None:
    """The name passes when saved (it is not an address); when sent, its address is checked
    before connecting, so the local service behind it never hears from HACS."""
    resolve_as["btrix.rebound.test"] = ["127.0.0.1"]
    port = server.url.rsplit(":", 1)[1]
    hand_off = browsertrix_row(f"https://btrix.rebound.test:{port}")
    run = hand_off_run(hand_off=hand_off, crawl_list=crawl)
    assert run.status == "failed" and server.requests == []
    assert "the name resolves to a loopback address (127.0.0.1)" in run.message
    assert f"list btrix.rebound.test:{port} in HACS_BROWSERTRIX_ALLOWED_HOSTS" in run.message


def test_every_address_a_name_resolves_to_is_checked(
    resolve_as: dict[str, list[str]], settings: Any
) -> None:
    """A public address first and the metadata service second is refused, whichever one a
    connection would have tried."""
    from handoff.transport import AddressRefused, checked_addresses

    resolve_as["btrix.mixed.test"] = ["93.184.215.14", "169.254.169.254"]
    with pytest.raises(AddressRefused, match="link-local address"):
        checked_addresses("btrix.mixed.test", 443, listed=False, timeout=5)
    resolve_as["btrix.public.test"] = ["93.184.215.14", "2606:2800:21f:cb07:6820:80da:af6b:8b2c"]
    assert len(checked_addresses("btrix.public.test", 443, listed=False, timeout=5)) == 2


def test_each_request_connects_to_the_address_it_checked(
    crawl: CrawlList, server: BrowsertrixServer, resolve_as: dict[str, list[str]], settings: Any
) -> None:
    """One lookup per request, made by HACS and then connected to: the HTTP library never
    looks the name up a second time (where a rebinding DNS server could answer otherwise)."""
    port = server.url.rsplit(":", 1)[1]
    resolve_as["btrix.local.test"] = ["127.0.0.1"]
    settings.HACS_BROWSERTRIX_ALLOWED_HOSTS = [f"btrix.local.test:{port}"]
    lookups: list[str] = []
    resolving = socket.getaddrinfo

    def counting(host: Any, *args: Any, **kwargs: Any) -> Any:
        lookups.append(host)
        return resolving(host, *args, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(socket, "getaddrinfo", counting)
        run = hand_off_run(
            hand_off=browsertrix_row(f"http://btrix.local.test:{port}"), crawl_list=crawl
        )
    assert run.status == "sent", run.message
    assert lookups.count("btrix.local.test") == len(server.requests) == 3
    assert {r.headers["host"] for r in server.requests} == {f"btrix.local.test:{port}"}


# --- 2. http only for listed hosts ---------------------------------------------------------------


def test_an_admin_cannot_save_an_http_address_unless_its_host_is_listed() -> None:
    [message] = browsertrix_errors("http://btrix.library.example")["api_url"]
    assert "only over https" in message
    assert "list btrix.library.example:80 in HACS_BROWSERTRIX_ALLOWED_HOSTS" in message
    assert browsertrix_errors("https://btrix.library.example") == {}
    assert "api_url" in browsertrix_errors("https://user:pw@btrix.library.example")


def test_a_stored_http_row_sends_no_token(crawl: CrawlList, server: BrowsertrixServer) -> None:
    run = hand_off_run(hand_off=browsertrix_row(server.url), crawl_list=crawl)
    assert run.status == "failed" and server.requests == []
    assert "HACS sends a Browsertrix token only over https" in run.message
    assert "HACS_BROWSERTRIX_ALLOWED_HOSTS" in run.message and "Nothing was sent" in run.message


# --- 3. credentials only from HACS_BROWSERTRIX_TOKEN_… and HACS_BROWSERTRIX_LOGIN_… ------------


@pytest.mark.parametrize(
    ("field", "name"),
    [
        ("token_env", "SECRET_KEY"),
        ("token_env", "REDIS_URL"),
        ("token_env", "HACS_BROWSERTRIX_TOKEN_"),
        ("token_env", "hacs_browsertrix_token_x"),
        ("username_env", "DATABASE_URL"),
        ("password_env", "HACS_BROWSERTRIX_TOKEN_X"),
    ],
)
def test_an_admin_cannot_name_a_variable_outside_the_prefix(field: str, name: str) -> None:
    fields = {
        "username_env": "HACS_BROWSERTRIX_LOGIN_U",
        "password_env": "HACS_BROWSERTRIX_LOGIN_P",
    }
    fields[field] = name
    errors = browsertrix_errors("https://app.browsertrix.com", **fields)
    [message] = errors[field]
    prefix = "HACS_BROWSERTRIX_TOKEN_" if field == "token_env" else "HACS_BROWSERTRIX_LOGIN_"
    assert f"must start with {prefix}" in message


@pytest.mark.parametrize("variable", ["SECRET_KEY", "REDIS_URL"])
def test_a_stored_row_naming_secret_key_sends_nothing(
    crawl: CrawlList,
    server: BrowsertrixServer,
    settings: Any,
    monkeypatch: pytest.MonkeyPatch,
    variable: str,
) -> None:
    monkeypatch.setenv(variable, "the-secret-value")
    allow(settings, server.url)
    run = hand_off_run(hand_off=browsertrix_row(server.url, token_env=variable), crawl_list=crawl)
    assert run.status == "failed" and server.requests == []
    assert f"'{variable}' is not a variable HACS reads Browsertrix credentials from" in (
        run.message
    )
    assert "the-secret-value" not in run.message


def test_a_stored_row_naming_login_variables_outside_the_prefix_sends_nothing(
    crawl: CrawlList, server: BrowsertrixServer, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(TOKEN_VAR)
    monkeypatch.setenv("HOME", "/root")
    allow(settings, server.url)
    hand_off = browsertrix_row(server.url, username_env="HOME", password_env="PATH")
    run = hand_off_run(hand_off=hand_off, crawl_list=crawl)
    assert run.status == "failed" and server.requests == []
    assert "must start with HACS_BROWSERTRIX_LOGIN_" in run.message


# --- 4. what a server says stays off the pages ---------------------------------------------------


def pages_seen_by_a_viewer(client: Any, crawl: CrawlList) -> dict[str, str]:
    client.force_login(make_user("viewer", role="viewer"))
    return {
        url: client.get(url).content.decode()
        for url in (f"/crawl-list/?list={crawl.pk}", "/jobs/", "/jobs/status.json")
    }


@pytest.mark.parametrize(
    ("status", "answer"),
    [
        (404, {"body": f"INTERNAL-ONLY: {SECRET}".encode()}),
        (500, {"detail": f"Error starting crawl: {SECRET}"}),
        (400, {"detail": SECRET}),
        (403, {"body": b"<html>" + SECRET.encode() + b"</html>" + b"x" * 5000}),
    ],
)
def test_a_remote_body_is_never_shown_only_logged_cut_short(
    client: Any,
    crawl: CrawlList,
    server: BrowsertrixServer,
    settings: Any,
    caplog: pytest.LogCaptureFixture,
    status: int,
    answer: dict[str, Any],
) -> None:
    allow(settings, server.url)
    server.fail("upload", status, **answer)
    with caplog.at_level(logging.WARNING, logger="handoff"):
        run = hand_off_run(hand_off=browsertrix_row(server.url), crawl_list=crawl)
    assert run.status == "failed" and f"{status}" in run.message
    assert SECRET not in run.message and "hunter2" not in run.message
    assert "hunter2" not in JobRecord.objects.get(kind="hand_off").error
    for url, page in pages_seen_by_a_viewer(client, crawl).items():
        assert "hunter2" not in page, url
    [logged] = [r for r in caplog.records if "hunter2" in r.getMessage()]
    assert logged.levelno == logging.WARNING and len(logged.getMessage()) < 1000


def test_the_crawl_list_page_shows_the_status_in_hacss_words(
    client: Any, crawl: CrawlList, server: BrowsertrixServer, settings: Any
) -> None:
    allow(settings, server.url)
    server.fail("upload", 404, body=f"INTERNAL-ONLY: {SECRET}".encode())
    hand_off_run(hand_off=browsertrix_row(server.url), crawl_list=crawl)
    page = pages_seen_by_a_viewer(client, crawl)[f"/crawl-list/?list={crawl.pk}"]
    assert "answered 404 for /api/orgs/" in page and "INTERNAL-ONLY" not in page


def test_where_a_redirect_points_is_not_shown(
    client: Any, crawl: CrawlList, server: BrowsertrixServer, settings: Any
) -> None:
    allow(settings, server.url)
    server.redirect("upload", f"http://10.0.0.7/internal/{SECRET}")
    run = hand_off_run(hand_off=browsertrix_row(server.url), crawl_list=crawl)
    assert "answered 307 (a redirect)" in run.message and "hunter2" not in run.message
    assert len(server.requests) == 1


def test_an_unexpected_error_is_named_by_its_type_and_its_text_only_logged(
    crawl: CrawlList, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    import handoff.services

    def broken(**kwargs: Any) -> Any:
        raise ValueError(f"unexpected answer {SECRET}")

    monkeypatch.setattr(handoff.services, "browsertrix_deliver", broken)
    with caplog.at_level(logging.ERROR, logger="handoff"):
        run = hand_off_run(hand_off=browsertrix_row("https://btrix.example.org"), crawl_list=crawl)
    assert run.status == "failed" and "unexpected error (ValueError)" in run.message
    assert "hunter2" not in run.message
    assert "hunter2" in caplog.text  # in the logged traceback, for whoever runs HACS


# --- 5. one deadline for the whole hand-off ------------------------------------------------------


class TricklingServer:
    """Answers every request one byte at a time, every ``interval`` seconds, for at most
    ``duration`` seconds: the status line and headers (``where="headers"``) or the body."""

    def __init__(self, where: str, *, interval: float = 0.1, duration: float = 40.0) -> None:
        self.where, self.interval, self.duration = where, interval, duration
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.closed_by_client = threading.Event()  # HACS hung up before the trickle ended

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.listener.getsockname()[1]}"

    def __enter__(self) -> TricklingServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.listener.close()
        self.thread.join(timeout=10)

    def _serve(self) -> None:
        self.listener.settimeout(0.2)
        while not self.stop.is_set():
            try:
                conn, _ = self.listener.accept()
            except OSError:
                continue
            threading.Thread(target=self._trickle, args=(conn,), daemon=True).start()

    def _trickle(self, conn: socket.socket) -> None:
        with conn:
            conn.recv(65536)  # the request (small enough to arrive at once)
            body = b'{"added": true, "id": "x"}' + b" " * 100_000
            head = f"HTTP/1.1 200 OK\r\nContent-Length: {len(body)}\r\n".encode()
            if self.where == "headers":
                head += b"X-Slow: " + b"." * 100_000 + b"\r\n"
            else:
                conn.sendall(head + b"\r\n")
            data = head + b"\r\n" + body if self.where == "headers" else body
            ends = time.monotonic() + self.duration
            for byte in data:
                if self.stop.is_set() or time.monotonic() > ends:
                    return
                try:
                    conn.sendall(bytes([byte]))
                except OSError:  # HACS closed the connection
                    self.closed_by_client.set()
                    return
                time.sleep(self.interval)


@pytest.mark.parametrize("where", ["headers", "body"])
def test_a_trickling_browsertrix_ends_at_the_deadline(
    crawl: CrawlList, settings: Any, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    """Each byte comes well within HACS_HTTP_TIMEOUT, so no read ever times out; the deadline
    ends the hand-off instead, long before the server would stop trickling (40 s)."""
    monkeypatch.setenv(TOKEN_VAR, TOKEN)
    settings.HACS_HTTP_TIMEOUT = 2.0
    settings.HACS_HTTP_DEADLINE = 1.5
    with TricklingServer(where) as trickling:
        allow(settings, trickling.url)
        run = hand_off_run(hand_off=browsertrix_row(trickling.url), crawl_list=crawl)
        # HACS hung up on the trickle, which would otherwise have gone on for 40 s.
        assert trickling.closed_by_client.wait(trickling.duration)
    assert run.status == "failed"
    assert "did not finish answering within 1.5 s (HACS_HTTP_DEADLINE" in run.message


# --- 6. Heritrix: inside HACS_HERITRIX_ROOT, through no symbolic link ---------------------------


@pytest.fixture()
def root(settings: Any, tmp_path: Path) -> Path:
    """HACS_HERITRIX_ROOT with one launched job (``job/action``), and a job outside it."""
    (tmp_path / "jobs" / "job" / "action").mkdir(parents=True)
    (tmp_path / "outside" / "job" / "action").mkdir(parents=True)
    settings.HACS_HERITRIX_ROOT = str(tmp_path / "jobs")
    return tmp_path / "jobs"


def heritrix_row(job_dir: Path | str, **kw: Any) -> HandOff:
    kw.setdefault("kind", HandOff.Kind.HERITRIX_ACTION)
    return HandOff.objects.create(name="Scholars on Heritrix", job_dir=str(job_dir), **kw)


def written(directory: Path) -> list[Path]:
    return sorted(p for p in directory.rglob("*") if p.is_file() and not p.is_symlink())


@pytest.mark.parametrize(
    "job_dir",
    [
        "{root}/../outside/job",
        "{root}/job/../../outside/job",
        "{root}/job/../outside/../job",
        "/etc",
        "/root",
    ],
)
def test_an_admin_cannot_save_a_job_directory_outside_the_root(root: Path, job_dir: str) -> None:
    errors = saved_errors(kind=HandOff.Kind.HERITRIX_ACTION, job_dir=job_dir.format(root=root))
    [message] = errors["job_dir"]
    assert "HACS_HERITRIX_ROOT" in message or "without '..'" in message
    assert saved_errors(kind=HandOff.Kind.HERITRIX_ACTION, job_dir=str(root / "job")) == {}


def test_a_stored_row_escaping_with_dot_dot_writes_nothing(
    root: Path, crawl: CrawlList, tmp_path: Path
) -> None:
    run = hand_off_run(hand_off=heritrix_row(f"{root}/job/../../outside/job"), crawl_list=crawl)
    assert run.status == "failed" and "without '..'" in run.message
    assert written(tmp_path) == []


@pytest.mark.parametrize("job_dir", ["/etc", "/root"])
def test_a_stored_row_at_a_system_directory_writes_nothing(
    root: Path, crawl: CrawlList, job_dir: str
) -> None:
    readable = os.access(job_dir, os.R_OK)  # /root is not, unless the tests run as root
    before = set(os.listdir(job_dir)) if readable else set()
    run = hand_off_run(hand_off=heritrix_row(job_dir), crawl_list=crawl)
    assert run.status == "failed"
    assert f"The job directory {job_dir} is outside HACS_HERITRIX_ROOT ({root})" in run.message
    assert (set(os.listdir(job_dir)) if readable else set()) == before


def test_a_symlinked_job_directory_leading_outside_writes_nothing(
    root: Path, crawl: CrawlList, tmp_path: Path
) -> None:
    (root / "linked").symlink_to(tmp_path / "outside" / "job")
    hand_off = heritrix_row(root / "linked")
    [message] = saved_errors(kind=hand_off.kind, job_dir=hand_off.job_dir)["job_dir"]
    assert f"resolves to {tmp_path / 'outside' / 'job'}" in message
    run = hand_off_run(hand_off=hand_off, crawl_list=crawl)
    assert run.status == "failed" and "outside HACS_HERITRIX_ROOT" in run.message
    assert written(tmp_path / "outside") == []


def test_a_symlinked_action_directory_writes_nothing(
    root: Path, crawl: CrawlList, tmp_path: Path
) -> None:
    (root / "job" / "action").rmdir()
    (root / "job" / "action").symlink_to(tmp_path / "outside" / "job" / "action")
    run = hand_off_run(hand_off=heritrix_row(root / "job"), crawl_list=crawl)
    assert run.status == "failed" and "action directory" in run.message
    assert "is a symbolic link" in run.message
    assert written(tmp_path) == []


def test_a_symlink_in_place_of_seeds_txt_is_not_written_through_or_replaced(
    root: Path, crawl: CrawlList, tmp_path: Path
) -> None:
    victim = tmp_path / "outside" / "victim.txt"
    victim.write_text("precious\n")
    (root / "job" / "seeds.txt").symlink_to(victim)
    hand_off = heritrix_row(root / "job", kind=HandOff.Kind.HERITRIX_RELAUNCH)
    run = hand_off_run(hand_off=hand_off, crawl_list=crawl)
    assert run.status == "failed" and "symbolic link" in run.message
    assert victim.read_text() == "precious\n"
    assert (root / "job" / "seeds.txt").is_symlink()


def test_a_directory_swapped_for_a_symlink_after_the_check_is_not_written_through(
    root: Path, tmp_path: Path
) -> None:
    """The write opens each directory below the root without following symlinks."""
    import errno

    from handoff.heritrix import write_atomically

    real_job = root / "job"
    real_job.rename(root / "moved")
    real_job.symlink_to(tmp_path / "outside" / "job")
    with pytest.raises(OSError) as raised:
        write_atomically("x\n", root=str(root), job_dir=str(real_job), subdir="", name="s.txt")
    assert raised.value.errno in (errno.ELOOP, errno.ENOTDIR)
    assert written(tmp_path / "outside") == []


def test_without_a_root_no_heritrix_hand_off_writes(
    settings: Any, crawl: CrawlList, tmp_path: Path
) -> None:
    settings.HACS_HERITRIX_ROOT = ""
    (tmp_path / "job" / "action").mkdir(parents=True)
    [message] = saved_errors(kind=HandOff.Kind.HERITRIX_ACTION, job_dir=str(tmp_path / "job"))[
        "job_dir"
    ]
    assert "HACS_HERITRIX_ROOT, which is not set" in message
    run = hand_off_run(hand_off=heritrix_row(tmp_path / "job"), crawl_list=crawl)
    assert run.status == "failed" and "HACS_HERITRIX_ROOT, which is not set" in run.message
    assert written(tmp_path) == []


@pytest.mark.parametrize("kind", [HandOff.Kind.HERITRIX_ACTION, HandOff.Kind.HERITRIX_RELAUNCH])
def test_written_seeds_are_group_readable_and_not_world_readable(
    root: Path, crawl: CrawlList, kind: str
) -> None:
    old = os.umask(0o077)  # a strict umask must not take the group's read bit either
    try:
        run = hand_off_run(hand_off=heritrix_row(root / "job", kind=kind), crawl_list=crawl)
    finally:
        os.umask(old)
    assert run.status == "sent", run.message
    [seeds] = written(root)
    assert stat.S_IMODE(seeds.stat().st_mode) == 0o640
