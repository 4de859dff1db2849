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
* ``POST /api/orgs/{oid}/crawlconfigs/{cid}/run`` → ``{"started": CRAWL}``.

Every ``/api/orgs/…`` request needs ``Authorization: Bearer TOKEN`` (401 ``invalid_credentials``
otherwise, 403 for the viewer's token); an unknown organisation is 404 ``org_not_found``, an
unknown workflow 404 ``crawl_config_not_found``; errors are FastAPI's ``{"detail": …}``. Every
request is recorded (method, path, query, headers, body). ``fail(step, status)`` makes the next
request of a step ("login", "upload", "patch", "run") answer that status as Browsertrix would;
``stall(step)`` holds it unanswered until the server stops; ``redirect(step, location)`` answers
307 to another address; ``fail(step, status, body=b"…")`` answers that body as plain text, as a
service that is not Browsertrix would.
"""

from __future__ import annotations

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
class BrowsertrixState:
    org_id: str = ORG_ID
    workflows: dict[str, dict[str, Any]] = field(default_factory=dict)
    files: dict[str, tuple[str, bytes]] = field(default_factory=dict)
    crawls: list[str] = field(default_factory=list)


class BrowsertrixServer:
    """``with BrowsertrixServer() as server:``; ``server.url`` is the address to configure."""

    def __init__(
        self, *, token: str = TOKEN, username: str = "crawler@example.org",
        password: str = "crawler password",
    ) -> None:  # fmt: skip
        self.token, self.username, self.password = token, username, password
        self.state = BrowsertrixState()
        self.state.workflows[WORKFLOW_ID] = {
            "id": WORKFLOW_ID, "name": "Scholarly homepages",
            "config": {"seeds": [{"url": "https://old.example.edu/"}], "seedFileId": None,
                       "scopeType": "page"},
        }  # fmt: skip
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

    def steps(self) -> list[tuple[str, str]]:
        """``(method, path)`` of every request so far, in order."""
        return [(r.method, r.path) for r in self.requests]

    # --- the routes -----------------------------------------------------------------------------

    def answer(self, method: str, path: str, query: dict[str, str], headers: dict[str, str],
               body: bytes) -> tuple[int, Any, dict[str, str]]:  # fmt: skip
        if method == "POST" and path == "/api/auth/jwt/login":
            return self._login(body)
        parts = path.strip("/").split("/")
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
        return 200, {
            "updated": True, "settings_changed": bool(config), "metadata_changed": False,
            "updatedRunning": False, "storageQuotaReached": False,
            "execMinutesQuotaReached": False, "started": None,
        }, {}  # fmt: skip

    def _run(self, workflow: dict[str, Any] | None) -> tuple[int, dict[str, Any], dict]:
        if workflow is None:
            return 404, {"detail": f"Crawl Config '{WORKFLOW_ID}' not found"}, {}
        crawl_id = f"manual-20261124050000-{uuid.uuid4().hex[:12]}"
        self.state.crawls.append(crawl_id)
        return 200, {"started": crawl_id}, {}

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
                self.send_header("Content-Type", "text/plain" if raw else "application/json")
                self.send_header("Content-Length", str(len(data)))
                for name, value in extra.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_PUT = do_PATCH = do_POST = do_DELETE = _serve

        return Handler
