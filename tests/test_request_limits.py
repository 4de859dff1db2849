"""Nobody fills the disk with an upload: a body is refused by its declared length and the sender's
role before it is read, and what is read stays in memory (``dashboard.request_limits``).

Over real sockets against the web server as ``run.py`` starts it: each client declares a 1 GiB
seed list (or sends one in chunks) and keeps sending, up to ``SENT`` bytes, while it waits for
the answer. Before, the server read everything sent into a file in its temporary directory and
waited for the rest of the gigabyte: no answer came. Now the answer comes at once, the server
stops reading, and its temporary directory never holds a file.
"""

from __future__ import annotations

import os
import socket
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from tests.conftest import database_url_of_test_db
from tests.factories import PASSWORD, make_user
from tests.support.web_server import WebServer, http_login, web_server

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

GIB = 1024 * 1024 * 1024
MIB = 1024 * 1024
SENT = 64 * MIB  # what a client sends at most (it declares a gigabyte)
BOUNDARY = "hacsboundary7MA4YWxkTrZu0gW"
SEEDS = b"".join(b"http://cs.example.edu/~author%06d/\n" % n for n in range(30_000))[:MIB]


@pytest.fixture()
def server(tmp_path: Path, redis_url: str) -> Any:
    make_user("lib", role="librarian")
    make_user("viewer", role="viewer")
    with web_server(database_url_of_test_db(), tmp_path, REDIS_URL=redis_url) as running:
        yield running


@dataclass
class Outcome:
    """What a client sending a big body saw: the answer's status line and headers (empty when
    none came), the bytes of body it managed to send, and the files that appeared meanwhile in
    the server's temporary directory."""

    answer: str = ""
    sent: int = 0
    temporary_files: set[str] = field(default_factory=set)

    @property
    def status(self) -> int | None:
        return int(self.answer.split(" ", 2)[1]) if self.answer else None


def multipart_start(token: str) -> bytes:
    return (
        f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="csrfmiddlewaretoken"\r\n\r\n'
        f'{token}\r\n--{BOUNDARY}\r\nContent-Disposition: form-data; name="action"\r\n\r\n'
        f'check\r\n--{BOUNDARY}\r\nContent-Disposition: form-data; name="file"; '
        'filename="seeds.csv"\r\nContent-Type: text/csv\r\n\r\n'
    ).encode()


def send_big_upload(
    server: WebServer, cookies: dict[str, str], *, chunked: bool = False
) -> Outcome:
    """POST a seed list declared as 1 GiB (or sent in chunks) to the upload page, sending up to
    ``SENT`` bytes while waiting for the answer (60 s at most: a guard, not a measurement)."""
    temporary = Path(server.log).parent / "tmp"
    before = set(os.listdir(temporary))
    outcome = Outcome()
    done = threading.Event()

    def watch() -> None:  # the server's temporary directory, every few milliseconds
        while not done.is_set():
            outcome.temporary_files |= set(os.listdir(temporary)) - before
            time.sleep(0.005)

    framing = "Transfer-Encoding: chunked" if chunked else f"Content-Length: {GIB}"
    head = (
        f"POST /sites/upload/ HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n"
        f"Cookie: {'; '.join(f'{k}={v}' for k, v in cookies.items())}\r\n"
        f"Content-Type: multipart/form-data; boundary={BOUNDARY}\r\n{framing}\r\n\r\n"
    ).encode()
    start = multipart_start(cookies.get("csrftoken", ""))
    connection = server.connect(timeout=60)

    def send() -> None:
        piece = b"%x\r\n%s\r\n" % (len(SEEDS), SEEDS) if chunked else SEEDS
        try:
            connection.sendall(head + (b"%x\r\n%s\r\n" % (len(start), start) if chunked else start))
            while outcome.sent < SENT and not done.is_set():
                connection.sendall(piece)
                outcome.sent += len(SEEDS)
        except OSError:
            pass  # the server closed the connection: it reads no more

    threads = [threading.Thread(target=watch), threading.Thread(target=send)]
    for thread in threads:
        thread.start()
    try:
        outcome.answer = read_answer_head(connection)
    finally:
        done.set()
        connection.close()  # ends a send blocked on a server that stopped reading
        for thread in threads:
            thread.join(timeout=60)
    outcome.temporary_files |= set(os.listdir(temporary)) - before
    return outcome


def read_answer_head(connection: socket.socket) -> str:
    """The answer's status line and headers; empty when none came before the socket's timeout."""
    data = b""
    try:
        while b"\r\n\r\n" not in data:
            chunk = connection.recv(65536)
            if not chunk:
                break
            data += chunk
    except OSError:
        pass
    return data.split(b"\r\n\r\n", 1)[0].decode("latin-1") if b"\r\n\r\n" in data else ""


def header(answer: str, name: str) -> str:
    for line in answer.split("\r\n")[1:]:
        key, _colon, value = line.partition(":")
        if key.strip().lower() == name.lower():
            return value.strip()
    return ""


def assert_refused_unread(outcome: Outcome, status: int) -> None:
    assert outcome.answer, f"no answer after sending {outcome.sent:,} bytes"
    assert outcome.status == status, outcome.answer
    # The server stopped reading: what it took is what the sockets' buffers hold, not the rest.
    assert outcome.sent < SENT // 2, f"the server read {outcome.sent:,} bytes"
    assert outcome.temporary_files == set()


def test_a_librarians_gigabyte_upload_is_refused_unread_with_its_limit(server: WebServer) -> None:
    session = http_login(server.url, "lib", PASSWORD)
    outcome = send_big_upload(server, session.cookies.get_dict())
    assert_refused_unread(outcome, 413)
    page = session.get(f"{server.url}/sites/upload/", timeout=60)
    assert page.status_code == 200  # the same librarian carries on


def test_a_viewers_gigabyte_upload_is_refused_unread_with_the_403_page(server: WebServer) -> None:
    session = http_login(server.url, "viewer", PASSWORD)
    outcome = send_big_upload(server, session.cookies.get_dict())
    assert_refused_unread(outcome, 403)


def test_an_anonymous_gigabyte_upload_is_sent_to_the_login_page_unread(server: WebServer) -> None:
    import requests

    cookies = requests.get(f"{server.url}/accounts/login/", timeout=60).cookies.get_dict()
    assert "csrftoken" in cookies  # all the client holds: the login page's cookie
    outcome = send_big_upload(server, cookies)
    assert_refused_unread(outcome, 302)
    assert header(outcome.answer, "Location").startswith("/accounts/login/?next=")


def test_a_chunked_upload_is_refused_unread_with_411(server: WebServer) -> None:
    session = http_login(server.url, "lib", PASSWORD)
    outcome = send_big_upload(server, session.cookies.get_dict(), chunked=True)
    assert_refused_unread(outcome, 411)


def test_a_seed_list_within_the_limit_is_still_checked(server: WebServer) -> None:
    session = http_login(server.url, "lib", PASSWORD)
    csrf = session.cookies["csrftoken"]
    answer = session.post(
        f"{server.url}/sites/upload/",
        data={"csrfmiddlewaretoken": csrf, "action": "check"},
        files={"file": ("seeds.csv", b"http://a.example.edu/~ada/\nnot a url\n", "text/csv")},
        timeout=60,
    )
    assert answer.status_code == 200
    assert "~ada" in answer.text
    assert os.listdir(Path(server.log).parent / "tmp") == []


def test_a_file_over_the_limit_in_a_request_within_it_is_named_with_its_size(
    client: Any, settings: Any, tmp_path: Path
) -> None:
    """A file a little over HACS_MAX_UPLOAD_BYTES still reaches the form, which says its size;
    only its first HACS_MAX_UPLOAD_BYTES + 1 bytes were held, in memory."""
    settings.VAR_DIR = tmp_path
    settings.FILE_UPLOAD_TEMP_DIR = str(tmp_path)
    client.force_login(make_user())
    limit = settings.HACS_MAX_UPLOAD_BYTES
    data = (SEEDS * (limit // len(SEEDS) + 1))[: limit + 1000]
    upload = SimpleUploadedFile("seeds.csv", data, "text/csv")
    page = client.post("/sites/upload/", {"file": upload, "action": "check"})
    assert page.status_code == 400
    assert f"The file is {len(data):,} bytes; the limit is {limit:,}." in page.content.decode()
    assert [p.name for p in tmp_path.iterdir()] == []
