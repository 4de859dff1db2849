"""A local HTTP server that answers like Browsertrix's API for the routes a hand-off uses.

It speaks, on 127.0.0.1, the routes and answers of Browsertrix's backend
(``backend/btrixcloud`` in webrecorder/browsertrix):

* ``POST /api/auth/jwt/login`` (form ``username``, ``password``) → ``{"access_token", "token_type",
  "user_info"}``, or 400 ``login_bad_credentials``;
* ``PUT /api/orgs/{oid}/files/seedFile?filename=NAME.txt`` (the body is the file) →
  ``{"added": true, "id": FILE}``; 400 ``invalid_extension`` unless the name ends in ``.txt``,
  400 ``invalid_seed_file`` for an empty body;
* ``PATCH /api/orgs/{oid}/crawlconfigs/{cid}`` (JSON ``UpdateCrawlConfig``) →
  ``{"updated": true, "settings_changed", "metadata_changed", …}``; 404 ``file_not_found`` for a
  seed file it does not hold, 400 ``use_one_of_seeds_or_seedfile`` for both at once;
* ``POST /api/orgs/{oid}/crawlconfigs/{cid}/run`` → ``{"started": CRAWL}``; the crawl starts in
  the state ``starting``;
* ``GET /api/orgs/{oid}/crawls/{crawl_id}/replay.json`` → the crawl (``CrawlOutWithResources``):
  ``{"id", "type": "crawl", "cid", "state", "finished", "resources": [{"name", "path", "hash",
  "size", "crawlId", "numReplicas", "expireAt"}]}``, each ``path`` a signed address of the WACZ
  file on a storage host (:class:`StorageServer`, like S3 or MinIO, on a second loopback
  address) or, for a crawl told so, a ``/data/…`` path on this host; 404 ``crawl_not_found`` for
  a crawl it does not hold. Crawl states are Browsertrix's (``starting``, ``running``,
  ``generate-wacz``, ``uploading-wacz``, ``complete``, ``failed``, ``canceled``,
  ``stopped_by_user``, …), set by the test with ``crawl_set``.

Every ``/api/orgs/…`` request needs ``Authorization: Bearer TOKEN`` (401 ``invalid_credentials``
otherwise, 403 for the viewer's token); an unknown organisation is 404 ``org_not_found``, an
unknown workflow 404 ``crawl_config_not_found``; errors are FastAPI's ``{"detail": …}``. Every
request is recorded (method, path, query, headers, body). ``fail(step, status)`` makes the next
request of a step ("login", "upload", "patch", "run", "replay") answer that status as
Browsertrix would;
``stall(step)`` holds it unanswered until the server stops; ``redirect(step, location)`` answers
307 to another address; ``fail(step, status, body=b"…")`` answers that body as plain text, as a
service that is not Browsertrix would.
"""

from __future__ import annotations

import hashlib
import json
import threading
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

ORG_ID = "6f1c2b9e-8d4a-4c1e-9a57-3e2d1f0b7c55"
WORKFLOW_ID = "2b7e4c1a-5f3d-4e8b-a9c6-1d0f3e5a7b92"
TOKEN = "a-browsertrix-access-token"
VIEWER_TOKEN = "a-viewer-token"
DETAILS = {
    401: "invalid_credentials",
    403: "User does not have permission to modify crawls",
    404: "Not Found",
    429: "slow_down_too_many_crawls_queued",
    500: "Error starting crawl: the crawler could not be scheduled",
    503: "Service Unavailable",
}


@dataclass
class Recorded:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class Fault:
    status: int = 0
    detail: str = ""
    stall: bool = False
    location: str = ""
    body: bytes | None = None  # a plain-text answer instead of {"detail": …}


@dataclass
class Crawl:
    """A crawl Browsertrix runs: its state, its WACZ files by name, and where they are served
    (a storage host, or this host's ``/data/`` when ``storage`` is None)."""

    id: str
    state: str = "starting"
    files: dict[str, bytes] = field(default_factory=dict)
    storage: StorageServer | None = None
    hashes: bool = True  # give each file's SHA-256, as Browsertrix does
    sizes: dict[str, int] = field(default_factory=dict)  # sizes to claim instead of the true ones


@dataclass
class BrowsertrixState:
    org_id: str = ORG_ID
    workflows: dict[str, dict[str, Any]] = field(default_factory=dict)
    files: dict[str, tuple[str, bytes]] = field(default_factory=dict)
    crawls: list[str] = field(default_factory=list)
    runs: dict[str, Crawl] = field(default_factory=dict)


class BrowsertrixServer:
    """``with BrowsertrixServer() as server:``; ``server.url`` is the address to configure."""

    def __init__(
        self,
        *,
        token: str = TOKEN,
        username: str = "crawler@example.org",
        password: str = "crawler password",
    ) -> None:
        self.token, self.username, self.password = token, username, password
        self.state = BrowsertrixState()
        self.state.workflows[WORKFLOW_ID] = {
            "id": WORKFLOW_ID,
            "name": "Scholarly homepages",
            "config": {
                "seeds": [{"url": "https://old.example.edu/"}],
                "seedFileId": None,
                "scopeType": "page",
            },
        }
        self.requests: list[Recorded] = []
        self.faults: dict[str, Fault] = {}
        self.lock = threading.Lock()
        self.release = threading.Event()
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def __enter__(self) -> BrowsertrixServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release.set()
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=10)

    def fail(
        self, step: str, status: int, detail: str | None = None, *, body: bytes | None = None
    ) -> None:
        self.faults[step] = Fault(
            status=status, detail=detail or DETAILS.get(status, "error"), body=body
        )

    def stall(self, step: str) -> None:
        self.faults[step] = Fault(stall=True)

    def redirect(self, step: str, location: str) -> None:
        self.faults[step] = Fault(status=307, location=location)

    def crawl_set(
        self,
        crawl_id: str,
        state: str,
        files: dict[str, bytes] | None = None,
        *,
        storage: StorageServer | None = None,
        hashes: bool = True,
        sizes: dict[str, int] | None = None,
    ) -> Crawl:
        """Put the crawl in ``state``, with its WACZ files served by ``storage`` (or by this
        host under ``/data/`` without one)."""
        crawl = self.state.runs.setdefault(crawl_id, Crawl(crawl_id))
        crawl.state, crawl.hashes, crawl.storage = state, hashes, storage
        crawl.sizes = dict(sizes or {})
        if files is not None:
            crawl.files = dict(files)
        if storage is not None:
            storage.files.update(crawl.files)
        return crawl

    def steps(self) -> list[tuple[str, str]]:
        """``(method, path)`` of every request so far, in order."""
        return [(r.method, r.path) for r in self.requests]

    # --- the routes -----------------------------------------------------------------------------

    def answer(
        self, method: str, path: str, query: dict[str, str], headers: dict[str, str], body: bytes
    ) -> tuple[int, Any, dict[str, str]]:
        if method == "POST" and path == "/api/auth/jwt/login":
            return self._login(body)
        parts = path.strip("/").split("/")
        if method == "GET" and parts[:1] == ["data"] and len(parts) == 2:
            return self._data(parts[1], query)
        if parts[:2] != ["api", "orgs"] or len(parts) < 4:
            return 404, {"detail": "Not Found"}, {}
        auth = headers.get("authorization", "")
        if auth not in (f"Bearer {self.token}", f"Bearer {VIEWER_TOKEN}"):
            return 401, {"detail": "invalid_credentials"}, {"WWW-Authenticate": "Bearer"}
        if parts[2] != self.state.org_id:
            return 404, {"detail": "org_not_found"}, {}
        if auth == f"Bearer {VIEWER_TOKEN}":
            return 403, {"detail": DETAILS[403]}, {}
        rest = parts[3:]
        if method == "PUT" and rest == ["files", "seedFile"]:
            return self._fault("upload") or self._upload(query, body)
        if method == "GET" and rest[0] == "crawls" and rest[2:] == ["replay.json"]:
            return self._fault("replay") or self._replay(rest[1])
        if rest[0] == "crawlconfigs" and len(rest) in (2, 3):
            workflow = self.state.workflows.get(rest[1])
            if method == "PATCH" and len(rest) == 2:
                return self._fault("patch") or self._patch(workflow, body)
            if method == "POST" and rest[2:] == ["run"]:
                return self._fault("run") or self._run(workflow)
        return 404, {"detail": "Not Found"}, {}

    def _fault(self, step: str) -> tuple[int, Any, dict[str, str]] | None:
        fault = self.faults.pop(step, None)
        if fault is None:
            return None
        if fault.stall:
            self.release.wait()
            return 503, {"detail": "stalled"}, {}
        if fault.location:
            return fault.status, {"detail": "Temporary Redirect"}, {"Location": fault.location}
        if fault.body is not None:
            return fault.status, fault.body, {}
        return fault.status, {"detail": fault.detail}, {}

    def _login(self, body: bytes) -> tuple[int, dict[str, Any], dict[str, str]]:
        fault = self._fault("login")
        if fault:
            return fault
        form = {k: v[0] for k, v in parse_qs(body.decode()).items()}
        if form.get("username") != self.username or form.get("password") != self.password:
            return 400, {"detail": "login_bad_credentials"}, {}
        user = {"id": str(uuid.uuid4()), "email": self.username, "name": "Crawler"}
        return 200, {"access_token": self.token, "token_type": "bearer", "user_info": user}, {}

    def _upload(self, query: dict[str, str], body: bytes) -> tuple[int, dict[str, Any], dict]:
        name = query.get("filename")
        if name is None:
            detail = [{"type": "missing", "loc": ["query", "filename"], "msg": "Field required"}]
            return 422, {"detail": detail}, {}
        if not name.endswith(".txt"):
            return 400, {"detail": "invalid_extension"}, {}
        if not body.strip():
            return 400, {"detail": "invalid_seed_file"}, {}
        file_id = str(uuid.uuid4())
        self.state.files[file_id] = (name, body)
        return 200, {"added": True, "id": file_id}, {}

    def _patch(self, workflow: dict[str, Any] | None, body: bytes) -> tuple[int, dict, dict]:
        if workflow is None:
            return 404, {"detail": "crawl_config_not_found"}, {}
        update = json.loads(body or b"{}")
        config = update.get("config") or {}
        if config.get("seedFileId"):
            if config["seedFileId"] not in self.state.files:
                return 404, {"detail": "file_not_found"}, {}
            if config.get("seeds"):
                return 400, {"detail": "use_one_of_seeds_or_seedfile"}, {}
            config = {**config, "scopeType": "page"}
        workflow["config"] = {**workflow["config"], **config}
        return (
            200,
            {
                "updated": True,
                "settings_changed": bool(config),
                "metadata_changed": False,
                "updatedRunning": False,
                "storageQuotaReached": False,
                "execMinutesQuotaReached": False,
                "started": None,
            },
            {},
        )

    def _run(self, workflow: dict[str, Any] | None) -> tuple[int, dict[str, Any], dict]:
        if workflow is None:
            return 404, {"detail": f"Crawl Config '{WORKFLOW_ID}' not found"}, {}
        crawl_id = f"manual-20261124050000-{uuid.uuid4().hex[:12]}"
        self.state.crawls.append(crawl_id)
        self.state.runs[crawl_id] = Crawl(crawl_id)
        return 200, {"started": crawl_id}, {}

    def _replay(self, crawl_id: str) -> tuple[int, Any, dict[str, str]]:
        crawl = self.state.runs.get(crawl_id)
        if crawl is None:
            return 404, {"detail": "crawl_not_found"}, {}
        ended = crawl.state in ("complete", "failed", "canceled") or crawl.state.startswith(
            ("stopped_", "skipped_")
        )
        resources = [
            {
                "name": name,
                "path": self._file_address(crawl, name),
                "hash": hashlib.sha256(data).hexdigest() if crawl.hashes else "",
                "size": crawl.sizes.get(name, len(data)),
                "crawlId": crawl_id,
                "numReplicas": 0,
                "expireAt": "2030-01-01T00:00:00Z",
            }
            for name, data in crawl.files.items()
        ]
        return (
            200,
            {
                "id": crawl_id,
                "type": "crawl",
                "cid": WORKFLOW_ID,
                "oid": self.state.org_id,
                "state": crawl.state,
                "finished": "2026-11-24T06:00:00Z" if ended else None,
                "resources": resources,
                "initialPages": [],
                "pagesQueryUrl": "",
            },
            {},
        )

    def _file_address(self, crawl: Crawl, name: str) -> str:
        if crawl.storage is not None:
            return crawl.storage.address(name)
        return f"/data/{name}?{SIGNED_QUERY.format(signature=signature(name))}"

    def _data(self, name: str, query: dict[str, str]) -> tuple[int, Any, dict[str, str]]:
        for crawl in self.state.runs.values():
            if name in crawl.files and crawl.storage is None:
                if query.get("X-Amz-Signature") != signature(name):
                    return 403, b"<Error><Code>SignatureDoesNotMatch</Code></Error>", {}
                return 200, crawl.files[name], {}
        return 404, {"detail": "Not Found"}, {}

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _serve(self) -> None:
                parts = urlsplit(self.path)
                query = {k: v[0] for k, v in parse_qs(parts.query).items()}
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                headers = {k.lower(): v for k, v in self.headers.items()}
                with server.lock:
                    server.requests.append(Recorded(self.command, parts.path, query, headers, body))
                status, answer, extra = server.answer(
                    self.command, parts.path, query, headers, body
                )
                raw = isinstance(answer, bytes)
                data = answer if raw else json.dumps(answer).encode()
                self.send_response(status)
                self.send_header(
                    "Content-Type", "application/octet-stream" if raw else "application/json"
                )
                self.send_header("Content-Length", str(len(data)))
                for name, value in extra.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_PUT = do_PATCH = do_POST = do_DELETE = _serve

        return Handler


SIGNED_QUERY = (
    "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=minio%2F20261124%2Fus-east-1%2Fs3%2F"
    "aws4_request&X-Amz-Date=20261124T060000Z&X-Amz-Expires=86400&X-Amz-SignedHeaders=host&"
    "X-Amz-Signature={signature}"
)


def signature(name: str) -> str:
    """The signature of a file's address (an S3 signed address carries one, and a credential)."""
    return hashlib.sha256(f"secret/{name}".encode()).hexdigest()


class StorageServer:
    """A storage host serving a crawl's WACZ files at signed addresses, as S3 or MinIO serve
    Browsertrix's: ``GET /btrix-data/NAME?X-Amz-…&X-Amz-Signature=…`` answers the file, 403
    ``SignatureDoesNotMatch`` for a wrong signature (or every signature once ``expire()`` was
    called), 404 for an unknown file. It listens on its own loopback address (127.0.0.2 by
    default), another host than Browsertrix's; every request is recorded."""

    def __init__(self, host: str = "127.0.0.2", *, scheme: str = "http") -> None:
        self.host, self.scheme = host, scheme
        self.files: dict[str, bytes] = {}
        self.requests: list[Recorded] = []
        self.expired = False
        self.lock = threading.Lock()
        self.httpd = ThreadingHTTPServer((host, 0), self._handler())
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def where(self) -> str:
        return f"{self.host}:{self.httpd.server_address[1]}"

    def address(self, name: str) -> str:
        query = SIGNED_QUERY.format(signature=signature(name))
        return f"{self.scheme}://{self.where}/btrix-data/{name}?{query}"

    def expire(self) -> None:
        self.expired = True

    def __enter__(self) -> StorageServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=10)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                parts = urlsplit(self.path)
                query = {k: v[0] for k, v in parse_qs(parts.query).items()}
                headers = {k.lower(): v for k, v in self.headers.items()}
                with server.lock:
                    server.requests.append(Recorded("GET", parts.path, query, headers, b""))
                name = parts.path.removeprefix("/btrix-data/")
                if name not in server.files:
                    status, data = 404, b"<Error><Code>NoSuchKey</Code></Error>"
                elif server.expired or query.get("X-Amz-Signature") != signature(name):
                    status, data = 403, b"<Error><Code>SignatureDoesNotMatch</Code></Error>"
                else:
                    status, data = 200, server.files[name]
                self.send_response(status)
                self.send_header(
                    "Content-Type", "application/wacz" if status == 200 else "application/xml"
                )
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        return Handler
