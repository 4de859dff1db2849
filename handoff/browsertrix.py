"""The list as Browsertrix takes it, through its API (``backend/btrixcloud`` in
webrecorder/browsertrix), in three steps:

1. ``PUT /api/orgs/{oid}/files/seedFile?filename=NAME.txt`` with the URL list as the body (one
   URL a line; Browsertrix accepts only ``.txt`` names) answers ``{"added": true, "id": FILE}``;
2. ``PATCH /api/orgs/{oid}/crawlconfigs/{cid}`` with ``{"config": {"seeds": null,
   "seedFileId": FILE}}`` makes the uploaded file the workflow's seed list (as Browsertrix's own
   workflow editor does: a workflow has either a seed list or a seed file);
3. ``POST /api/orgs/{oid}/crawlconfigs/{cid}/run`` starts it and answers ``{"started": CRAWL}``.

Every request carries ``Authorization: Bearer TOKEN``, the token read from the environment
variable the hand-off names; failing that, from a login (``POST /api/auth/jwt/login``, form
fields ``username`` and ``password``) with the user name and password variables it names.
Browsertrix answers errors as ``{"detail": ...}``: 401 for a token it does not accept, 403 for a
user without crawler rights in the organisation, 404 ``org_not_found`` or "Crawl Config '…' not
found". HACS follows no redirect and contacts no host but the configured one; nothing is retried
(a second upload would leave a second file), so a failed hand-off is simply run again.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from datetime import date
from typing import Any

import requests
from django.conf import settings
from django.utils.text import slugify

from handoff.delivery import Delivery, HandOffFailed
from handoff.models import HandOff


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
        session.credentials()  # a missing token is worth knowing before the morning
        plan = (
            f"upload {len(urls)} seeds as {name} to organisation {hand_off.org_id} at "
            f"{hand_off.host}, make it the seed file of workflow {hand_off.workflow_id} and "
            "start the workflow"
        )
        return Delivery(f'Hand-off "{hand_off.name}" would {plan}.', [f"would {plan}"])
    body = ("\n".join(urls) + "\n").encode("utf-8")
    org = f"/api/orgs/{hand_off.org_id}"
    workflow = f"{org}/crawlconfigs/{hand_off.workflow_id}"
    added = session.call(
        "PUT", f"{org}/files/seedFile", step="uploading the seed file", params={"filename": name},
        data=body, headers={"Content-Type": "text/plain; charset=utf-8"},
    )  # fmt: skip
    file_id = _field(hand_off, added, "id", "uploading the seed file", session.steps)
    session.steps.append(f"uploaded {len(urls)} seeds as {name} (file {file_id})")
    session.call(
        "PATCH", workflow, step=f"setting the seed file of workflow {hand_off.workflow_id}",
        json={"config": {"seeds": None, "seedFileId": file_id}},
    )  # fmt: skip
    session.steps.append(f"made file {file_id} the seed file of workflow {hand_off.workflow_id}")
    started = session.call(
        "POST", f"{workflow}/run", step=f"starting workflow {hand_off.workflow_id}"
    )
    crawl_id = _field(
        hand_off, started, "started", f"starting workflow {hand_off.workflow_id}", session.steps
    )
    session.steps.append(f"started workflow {hand_off.workflow_id} (crawl {crawl_id})")
    return Delivery(
        f'Hand-off "{hand_off.name}" sent {len(urls)} seeds to Browsertrix at {hand_off.host} '
        f"and started workflow {hand_off.workflow_id} (crawl {crawl_id}).",
        session.steps,
    )


class BrowsertrixSession:
    """Requests to one Browsertrix host with the hand-off's credentials, and the steps done."""

    def __init__(self, hand_off: HandOff) -> None:
        self.hand_off = hand_off
        self.steps: list[str] = []
        self.token = ""
        self.source = ""  # what the messages call the credentials: "the token in $X", …
        self.http = requests.Session()
        self.http.headers["User-Agent"] = settings.HACS_USER_AGENT
        self.http.trust_env = False  # no proxy or .netrc: only the configured host is contacted

    def credentials(self) -> tuple[str, str] | None:
        """``(token, source)`` from the token variable, or None when the login variables are to
        be used; raises ``HandOffFailed`` when neither is set."""
        hand_off = self.hand_off
        token = os.environ.get(hand_off.token_env, "").strip()
        if token:
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
        found = self.credentials()
        if found is not None:
            self.token, self.source = found
            return
        hand_off = self.hand_off
        self.source = f"the login in ${hand_off.username_env} and ${hand_off.password_env}"
        answer = self._send(
            "POST", "/api/auth/jwt/login", step="logging in",
            data={"username": os.environ[hand_off.username_env],
                  "password": os.environ[hand_off.password_env], "grant_type": "password"},
        )  # fmt: skip
        self.token = str(_field(hand_off, answer, "access_token", "logging in", self.steps))

    def call(self, method: str, path: str, *, step: str, **kwargs: Any) -> dict[str, Any]:
        self._authorise()
        headers = {**kwargs.pop("headers", {}), "Authorization": f"Bearer {self.token}"}
        return self._send(method, path, step=step, headers=headers, **kwargs)

    def _send(self, method: str, path: str, *, step: str, **kwargs: Any) -> dict[str, Any]:
        hand_off = self.hand_off
        url = hand_off.api_url.rstrip("/") + path
        timeout = settings.HACS_HTTP_TIMEOUT
        try:
            response = self.http.request(
                method, url, timeout=timeout, allow_redirects=False, **kwargs
            )
        except requests.Timeout as error:
            raise self._failed(
                f"Browsertrix at {hand_off.host} did not answer within {timeout:g} s while "
                f"{step}; try again later."
            ) from error
        except requests.ConnectionError as error:
            raise self._failed(
                f"Browsertrix at {hand_off.host} could not be reached while {step} "
                f"({_reason(error)}); check the address and that Browsertrix is running."
            ) from error
        except requests.RequestException as error:
            raise self._failed(
                f"The request to Browsertrix at {hand_off.host} failed while {step} ({error})."
            ) from error
        if response.status_code >= 300:
            raise self._failed(self._refusal(response, step))
        try:
            answer = response.json()
        except ValueError:
            answer = None
        if not isinstance(answer, dict):
            raise self._failed(
                f"Browsertrix at {hand_off.host} answered {step} with something that is not a "
                "JSON object; check that the address is Browsertrix's."
            )
        return answer

    def _refusal(self, response: requests.Response, step: str) -> str:
        hand_off, status = self.hand_off, response.status_code
        detail = _detail(response)
        said = f": {detail}" if detail else ""
        if status in (401, 403) or (status == 400 and step == "logging in"):
            rights = (
                "" if status == 401 else
                f"; the user needs crawler rights in organisation {hand_off.org_id}"
            )  # fmt: skip
            source = self.source or "the login"
            return f"Browsertrix refused {source} ({status}{said}) while {step}{rights}."
        if status == 404 and "org_not_found" in detail:
            return (
                f"Browsertrix at {hand_off.host} has no organisation {hand_off.org_id} that this "
                f"user can see (404) while {step}; check the organisation id."
            )
        if status == 404 and ("crawl config" in detail.lower() or "crawl_config" in detail):
            return (
                f"Browsertrix at {hand_off.host} has no workflow {hand_off.workflow_id} in "
                f"organisation {hand_off.org_id} (404) while {step}; check the workflow id."
            )
        if status == 404:
            return (
                f"Browsertrix at {hand_off.host} answered 404{said} for {response.request.path_url}"
                f" while {step}; check the address, organisation id and workflow id."
            )
        if 300 <= status < 400:
            return (
                f"Browsertrix at {hand_off.host} answered {status} (a redirect to "
                f"{response.headers.get('Location', '?')}) while {step}; HACS follows no "
                "redirect, so set the address to the one Browsertrix answers at."
            )
        if status >= 500:
            return (
                f"Browsertrix at {hand_off.host} failed with {status}{said} while {step}; "
                "try again later."
            )
        return f"Browsertrix at {hand_off.host} refused {step} ({status}{said})."

    def _failed(self, sentence: str) -> HandOffFailed:
        return _failure(self.hand_off, sentence, self.steps)


def _failure(hand_off: HandOff, sentence: str, steps: list[str]) -> HandOffFailed:
    done = f" Done before: {'; '.join(steps)}." if steps else " Nothing was changed."
    return HandOffFailed(f'Hand-off "{hand_off.name}": {sentence}{done}', steps)


def _field(
    hand_off: HandOff, answer: dict[str, Any], name: str, step: str, steps: list[str]
) -> str:
    value = answer.get(name)
    if value in (None, ""):
        raise _failure(
            hand_off,
            f"Browsertrix at {hand_off.host} answered {step} without {name!r}; is the address "
            "Browsertrix's API?",
            steps,
        )
    return str(value)


def _detail(response: requests.Response) -> str:
    try:
        detail = response.json().get("detail", "")
    except (ValueError, AttributeError):
        detail = response.text.strip()[:200]
    if isinstance(detail, list):  # FastAPI's validation errors: a list of {"msg": …}
        detail = "; ".join(str(item.get("msg", item)) for item in detail if item)
    return str(detail)[:300]


def _reason(error: requests.ConnectionError) -> str:
    """The cause as a person reads it ("connection refused", "name or service not known")."""
    text = str(error)
    for known in ("Connection refused", "Name or service not known", "No route to host",
                  "Temporary failure in name resolution", "Connection reset"):  # fmt: skip
        if known in text:
            return known.lower()
    return "no connection"
