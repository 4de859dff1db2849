"""The list as Browsertrix takes it, through its API (``backend/btrixcloud`` in
webrecorder/browsertrix), in three steps:

1. ``PUT /api/orgs/{oid}/files/seedFile?filename=NAME.txt`` with the URL list as the body (one
   URL a line; Browsertrix accepts only ``.txt`` names) answers ``{"added": true, "id": FILE}``;
2. ``PATCH /api/orgs/{oid}/crawlconfigs/{cid}`` with ``{"config": {"seeds": null,
   "seedFileId": FILE}}`` makes the uploaded file the workflow's seed list (as Browsertrix's own
   workflow editor does: a workflow has either a seed list or a seed file);
3. ``POST /api/orgs/{oid}/crawlconfigs/{cid}/run`` starts it and answers ``{"started": CRAWL}``.

Every request carries ``Authorization: Bearer TOKEN``, the token read from the
``HACS_BROWSERTRIX_TOKEN_…`` variable the hand-off names; failing that, from a login (``POST
/api/auth/jwt/login``, form fields ``username`` and ``password``) with the
``HACS_BROWSERTRIX_LOGIN_…`` variables it names. Browsertrix answers errors as ``{"detail":
CODE}``: 401 for a token it does not accept, 403 for a user without crawler rights in the
organisation, 404 ``org_not_found`` or "Crawl Config '…' not found".

The address may lead anywhere (``handoff.trust``, ``handoff.transport``): HACS contacts only the
configured host, at checked addresses, within one deadline for the whole hand-off, follows no
redirect, and repeats nothing the server says but Browsertrix's own error codes; the rest of an
answer goes to the log (``WARNING``, cut at ``LOGGED_BODY_CHARS``), never to a page. Nothing is
retried (a second upload would leave a second file), so a failed hand-off is simply run again.
"""

from __future__ import annotations

import json
import logging
import os
import re
import time
import uuid
from collections.abc import Callable, Sequence
from datetime import date
from typing import Any
from urllib.parse import urlsplit

import requests
from django.conf import settings
from django.utils.text import slugify

from handoff.delivery import Delivery, HandOffFailed
from handoff.models import HandOff
from handoff.transport import (
    MAX_ANSWER_BYTES,
    AddressRefused,
    Answer,
    AnswerTooLarge,
    DeadlinePassed,
    GuardedClient,
    checked_addresses,
)
from handoff.trust import (
    DEFAULT_PORTS,
    LOGIN_PREFIX,
    TOKEN_PREFIX,
    browsertrix_address_problem,
    credential_variable_problem,
    host_is_listed,
)
from scheduling.crawl_lists import seed_list_lines

logger = logging.getLogger(__name__)

LOGGED_BODY_CHARS = 500
# Browsertrix's own error codes (``{"detail": CODE}``), which a message may repeat because HACS
# knows them; any other text a server sends stays in the log, since the address need not be
# Browsertrix's at all.
KNOWN_CODES = frozenset(
    {
        "invalid_credentials",
        "login_bad_credentials",
        "org_not_found",
        "crawl_config_not_found",
        "crawl_already_running",
        "file_not_found",
        "invalid_extension",
        "invalid_seed_file",
        "use_one_of_seeds_or_seedfile",
        "proxy_not_found",
        "storage_quota_reached",
        "exec_minutes_quota_reached",
    }
)
_WORKFLOW_NOT_FOUND = re.compile(r"Crawl Config '[0-9a-fA-F-]{36}' not found")
# What an answer's ids may look like before a message repeats them: a file id is a UUID, a
# crawl id a short slug such as manual-20261124050000-1a2b3c4d5e6f.
_CRAWL_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,99}")
_TOKEN = re.compile(r"[\x20-\x7e]{1,8192}")  # one line of printable ASCII, as a header takes


def seed_file_name(hand_off: HandOff, day: date) -> str:
    slug = slugify(hand_off.name) or f"hand-off-{hand_off.pk}"
    return f"hacs-{day.isoformat()}-{slug}.txt"


def browsertrix_deliver(
    *, hand_off: HandOff, day: date, urls: Sequence[str], dry_run: bool
) -> Delivery:
    """Upload, point the workflow at the file, start it; raises ``HandOffFailed`` naming the
    step that failed and listing those done."""
    name = seed_file_name(hand_off, day)
    session = BrowsertrixSession(hand_off)
    if dry_run:
        # A refused address or a missing token is worth knowing before the morning.
        session.check_address()
        session.check_resolved()
        session.credentials()
        plan = (
            f"upload {len(urls)} seeds as {name} to organisation {hand_off.org_id} at "
            f"{hand_off.host}, make it the seed file of workflow {hand_off.workflow_id} and "
            "start the workflow"
        )
        return Delivery(f'Hand-off "{hand_off.name}" would {plan}.', [f"would {plan}"])
    body = "".join(seed_list_lines(urls)).encode("utf-8")
    org = f"/api/orgs/{hand_off.org_id}"
    workflow = f"{org}/crawlconfigs/{hand_off.workflow_id}"
    step = "uploading the seed file"
    added = session.call(
        "PUT",
        f"{org}/files/seedFile",
        step=step,
        params={"filename": name},
        data=body,
        headers={"Content-Type": "text/plain; charset=utf-8"},
    )
    file_id = session.field(added, "id", step, _is_uuid)
    session.steps.append(f"uploaded {len(urls)} seeds as {name} (file {file_id})")
    session.call(
        "PATCH",
        workflow,
        step=f"setting the seed file of workflow {hand_off.workflow_id}",
        json={"config": {"seeds": None, "seedFileId": file_id}},
    )
    session.steps.append(f"made file {file_id} the seed file of workflow {hand_off.workflow_id}")
    step = f"starting workflow {hand_off.workflow_id}"
    started = session.call("POST", f"{workflow}/run", step=step)
    crawl_id = session.field(started, "started", step, _CRAWL_ID.fullmatch)
    session.steps.append(f"started workflow {hand_off.workflow_id} (crawl {crawl_id})")
    return Delivery(
        f'Hand-off "{hand_off.name}" sent {len(urls)} seeds to Browsertrix at {hand_off.host} '
        f"and started workflow {hand_off.workflow_id} (crawl {crawl_id}).",
        session.steps,
        crawl_id=crawl_id,
    )


class BrowsertrixSession:
    """Requests to one Browsertrix host with the hand-off's credentials, the steps done, and
    one deadline (``HACS_HTTP_DEADLINE``) for all of them, counted from the session's start."""

    def __init__(self, hand_off: HandOff) -> None:
        self.hand_off = hand_off
        self.steps: list[str] = []
        self.token = ""
        self.source = ""  # what the messages call the credentials: "the token in $X", …
        self.deadline_seconds = settings.HACS_HTTP_DEADLINE
        self.http = GuardedClient(
            hand_off.api_url,
            listed=host_is_listed(hand_off.api_url),
            user_agent=settings.HACS_USER_AGENT,
            timeout=settings.HACS_HTTP_TIMEOUT,
            deadline=time.monotonic() + self.deadline_seconds,
        )

    def check_address(self) -> None:
        """Refuse, before any credential is read, an address HACS may not send to, judged as
        written (``handoff.trust``); its resolved addresses are checked by each request, or by
        ``check_resolved`` for a dry run."""
        problem = browsertrix_address_problem(self.hand_off.api_url)
        if problem:
            raise self._failed(f"{problem} Nothing was sent.", done=False)

    def check_resolved(self) -> None:
        """For a dry run: resolve the host and check its addresses, without connecting."""
        parts = urlsplit(self.hand_off.api_url)
        port = parts.port or DEFAULT_PORTS.get(parts.scheme, 443)
        try:
            checked_addresses(
                parts.hostname or "",
                port,
                listed=self.http.listed,
                timeout=settings.HACS_HTTP_TIMEOUT,
            )
        except AddressRefused as refused:
            raise self._failed(self._address_refused(refused), done=False) from None
        except OSError as error:  # the name does not resolve, or not in time
            raise self._failed(
                f"The name of Browsertrix at {self.hand_off.host} does not resolve now "
                f"({type(error).__name__}); check the address.",
                done=False,
            ) from None

    def credentials(self) -> tuple[str, str] | None:
        """``(token, source)`` from the token variable, or None when the login variables are to
        be used; raises ``HandOffFailed`` when neither is set, or when the hand-off names
        variables HACS does not read credentials from (a row saved before that rule)."""
        hand_off = self.hand_off
        for variable, prefix in (
            (hand_off.token_env, TOKEN_PREFIX),
            (hand_off.username_env, LOGIN_PREFIX),
            (hand_off.password_env, LOGIN_PREFIX),
        ):
            problem = variable and credential_variable_problem(variable, prefix)
            if problem:
                raise self._failed(
                    f"{problem} Rename it in Admin → Hand-offs and in the environment.", done=False
                )
        token = os.environ.get(hand_off.token_env, "").strip() if hand_off.token_env else ""
        if token:
            if not _TOKEN.fullmatch(token):
                raise self._failed(
                    f"the token in ${hand_off.token_env} is not one line of printable "
                    "characters; set it to a Browsertrix access token.",
                    done=False,
                )
            return token, f"the token in ${hand_off.token_env}"
        if hand_off.username_env and hand_off.password_env:
            if os.environ.get(hand_off.username_env) and os.environ.get(hand_off.password_env):
                return None
            raise HandOffFailed(
                f'Hand-off "{hand_off.name}": neither ${hand_off.token_env} nor both '
                f"${hand_off.username_env} and ${hand_off.password_env} are set in the "
                "environment of HACS's workers and commands; set the token variable to a "
                "Browsertrix access token."
            )
        raise HandOffFailed(
            f'Hand-off "{hand_off.name}": the environment variable ${hand_off.token_env} is not '
            "set in the environment of HACS's workers and commands; set it to a Browsertrix "
            "access token."
        )

    def _authorise(self) -> None:
        if self.token:
            return
        self.check_address()  # before any credential is read: a token goes nowhere unchecked
        found = self.credentials()
        if found is not None:
            self.token, self.source = found
            return
        hand_off = self.hand_off
        self.source = f"the login in ${hand_off.username_env} and ${hand_off.password_env}"
        step = "logging in"
        answer = self._send(
            "POST",
            "/api/auth/jwt/login",
            step=step,
            data={
                "username": os.environ[hand_off.username_env],
                "password": os.environ[hand_off.password_env],
                "grant_type": "password",
            },
        )
        self.token = self.field(answer, "access_token", step, _TOKEN.fullmatch, shown=False)

    def call(self, method: str, path: str, *, step: str, **kwargs: Any) -> dict[str, Any]:
        self._authorise()
        headers = {**kwargs.pop("headers", {}), "Authorization": f"Bearer {self.token}"}
        return self._send(method, path, step=step, headers=headers, **kwargs)

    def _send(self, method: str, path: str, *, step: str, **kwargs: Any) -> dict[str, Any]:
        host = self.hand_off.host
        try:
            answer = self.http.send(method, path, **kwargs)
        except (AddressRefused, DeadlinePassed, AnswerTooLarge, requests.RequestException) as error:
            raise self._failed(self._not_answered(error, step)) from None
        if answer.status >= 300:
            self._log_answer(method, path, answer)
            raise self._failed(self._refusal(answer.status, _code(answer.body), path, step))
        try:
            parsed = json.loads(answer.body)
        except ValueError:
            parsed = None
        if not isinstance(parsed, dict):
            self._log_answer(method, path, answer)
            raise self._failed(
                f"Browsertrix at {host} answered {step} with something that is not a JSON "
                "object; check that the address is Browsertrix's."
            )
        return parsed

    def _not_answered(self, error: Exception, step: str) -> str:
        """The sentence for a request that got no whole answer while ``step``."""
        host = self.hand_off.host
        if isinstance(error, AddressRefused):
            return self._address_refused(error)
        if isinstance(error, DeadlinePassed):
            return (
                f"Browsertrix at {host} did not finish answering within {self.deadline_seconds:g}"
                f" s (HACS_HTTP_DEADLINE, for the whole hand-off) while {step}; try again later."
            )
        if isinstance(error, AnswerTooLarge):
            return (
                f"Browsertrix at {host} answered {step} with more than {MAX_ANSWER_BYTES:,} "
                "bytes; check that the address is Browsertrix's."
            )
        if isinstance(error, requests.Timeout):
            return (
                f"Browsertrix at {host} did not answer within {settings.HACS_HTTP_TIMEOUT:g} s "
                f"while {step}; try again later."
            )
        if isinstance(error, requests.exceptions.SSLError):
            logger.warning("Hand-off %r: TLS with %s failed: %r", self.hand_off.name, host, error)
            return (
                f"Browsertrix at {host} could not be reached safely while {step}: its TLS "
                "certificate was not accepted (the log says why); check the address."
            )
        if isinstance(error, requests.ConnectionError):
            return (
                f"Browsertrix at {host} could not be reached while {step} "
                f"({_reason(error)}); check the address and that Browsertrix is running."
            )
        logger.warning("Hand-off %r: request to %s failed: %r", self.hand_off.name, host, error)
        return (
            f"The request to Browsertrix at {host} failed while {step} "
            f"({type(error).__name__}; the log has the details)."
        )

    def field(
        self,
        answer: dict[str, Any],
        name: str,
        step: str,
        valid: Callable[[str], object],
        *,
        shown: bool = True,
    ) -> str:
        """``answer[name]`` when ``valid`` accepts it (messages repeat it, so it must look like
        what Browsertrix sends); else the hand-off fails saying so."""
        value = answer.get(name)
        if isinstance(value, str) and valid(value):
            return value
        logger.warning(
            "Hand-off %r: Browsertrix at %s answered %s with %s %r",
            self.hand_off.name,
            self.hand_off.host,
            step,
            name,
            "(hidden)" if not shown else str(value)[:LOGGED_BODY_CHARS],
        )
        raise self._failed(
            f"Browsertrix at {self.hand_off.host} answered {step} without a usable {name!r}; "
            "is the address Browsertrix's API?"
        )

    def _log_answer(self, method: str, path: str, answer: Answer) -> None:
        """The server's own words, for whoever runs HACS: in the log only, and cut short."""
        text = answer.body.decode("utf-8", errors="replace")
        logger.warning(
            "Hand-off %r: Browsertrix at %s answered %s %s with HTTP %s%s: %r",
            self.hand_off.name,
            self.hand_off.host,
            method,
            path,
            answer.status,
            f" (Location: {answer.headers.get('Location', '')!r})" if answer.status < 400 else "",
            text[:LOGGED_BODY_CHARS] + ("…" if len(text) > LOGGED_BODY_CHARS else ""),
        )

    def _address_refused(self, refused: AddressRefused) -> str:
        hand_off = self.hand_off
        parts = urlsplit(hand_off.api_url)
        where = f"{(parts.hostname or '').lower()}:{parts.port or DEFAULT_PORTS[parts.scheme]}"
        return (
            f"HACS did not contact Browsertrix at {hand_off.host}: the name resolves to "
            f"{refused.problem}. For a Browsertrix on this machine or the library's network, "
            f"list {where} in HACS_BROWSERTRIX_ALLOWED_HOSTS."
        )

    def _refusal(self, status: int, code: str, path: str, step: str) -> str:
        """HACS's sentence for an error status, with the status code and, when it is one of
        Browsertrix's own, the error code."""
        hand_off = self.hand_off
        said = f": {code}" if code in KNOWN_CODES else ""
        if status in (401, 403) or (status == 400 and step == "logging in"):
            rights = (
                ""
                if status == 401
                else f"; the user needs crawler rights in organisation {hand_off.org_id}"
            )
            source = self.source or "the login"
            return f"Browsertrix refused {source} ({status}{said}) while {step}{rights}."
        if status == 404 and code == "org_not_found":
            return (
                f"Browsertrix at {hand_off.host} has no organisation {hand_off.org_id} that this "
                f"user can see (404) while {step}; check the organisation id."
            )
        if status == 404 and code == "crawl_config_not_found":
            return (
                f"Browsertrix at {hand_off.host} has no workflow {hand_off.workflow_id} in "
                f"organisation {hand_off.org_id} (404) while {step}; check the workflow id."
            )
        if status == 404:
            return (
                f"Browsertrix at {hand_off.host} answered 404{said} for {path} while {step}; "
                "check the address, organisation id and workflow id."
            )
        if 300 <= status < 400:
            return (
                f"Browsertrix at {hand_off.host} answered {status} (a redirect) while {step}; "
                "HACS follows no redirect, so set the address to the one Browsertrix answers "
                "at (the log names where it pointed)."
            )
        if status >= 500:
            return (
                f"Browsertrix at {hand_off.host} failed with {status}{said} while {step}; "
                "try again later."
            )
        return f"Browsertrix at {hand_off.host} refused {step} ({status}{said})."

    def _failed(self, sentence: str, *, done: bool = True) -> HandOffFailed:
        """The hand-off's failure: its name, the sentence, and the steps done before it
        (``done=False`` for a sentence that already says nothing was sent)."""
        if not done:
            return HandOffFailed(f'Hand-off "{self.hand_off.name}": {sentence}', self.steps)
        before = (
            f" Done before: {'; '.join(self.steps)}." if self.steps else " Nothing was changed."
        )
        return HandOffFailed(f'Hand-off "{self.hand_off.name}": {sentence}{before}', self.steps)


def _code(body: bytes) -> str:
    """Browsertrix's error code in an answer (``{"detail": "org_not_found"}``), lower-cased, or
    empty; "Crawl Config '…' not found" counts as ``crawl_config_not_found``."""
    try:
        detail = json.loads(body).get("detail", "")
    except (ValueError, AttributeError):
        return ""
    if not isinstance(detail, str):
        return ""
    if _WORKFLOW_NOT_FOUND.fullmatch(detail):
        return "crawl_config_not_found"
    return detail.strip().lower()


def _is_uuid(value: str) -> bool:
    try:
        return str(uuid.UUID(value)) == value.lower()
    except ValueError:
        return False


def _reason(error: requests.ConnectionError) -> str:
    """The cause as a person reads it ("connection refused", "name or service not known")."""
    text = str(error)
    for known in (
        "Connection refused",
        "Name or service not known",
        "No route to host",
        "Temporary failure in name resolution",
        "Connection reset",
    ):
        if known in text:
            return known.lower()
    return "no connection"
