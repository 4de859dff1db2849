"""What a hand-off may reach, checked when an admin saves it and again right before it sends.

A hand-off is configured in the admin, triggered by librarians and answered by whatever its
address leads to, so HACS trusts none of them beyond these rules (docs/security.md):

* **Browsertrix** is contacted over https at a public address. A host an operator lists in
  ``HACS_BROWSERTRIX_ALLOWED_HOSTS`` (a Browsertrix on this machine or the library's network) may
  be reached over http and at loopback or private addresses; no other may. At save time the
  address is judged as written (an IP literal, ``localhost``); at send time every address the
  name resolves to is judged again (``hacs_site.transport``), so neither a row saved before the
  rules nor a name that resolves elsewhere since gets through.
* **Credentials** come only from environment variables set aside for them, named
  ``HACS_BROWSERTRIX_TOKEN_…`` (a token) and ``HACS_BROWSERTRIX_LOGIN_…`` (a login's e-mail and
  password): a hand-off that could name any variable could send ``SECRET_KEY`` or
  ``DATABASE_URL`` to the address it names.
* **Heritrix** job directories resolve, symlinks and ``..`` included, inside
  ``HACS_HERITRIX_ROOT``; with no root set, no Heritrix hand-off writes anything.

Each check returns an empty string when all is well, else one sentence naming what is wrong and
the setting or rule that would allow it, so that the admin form and the hand-off's outcome say
the same thing.
"""

from __future__ import annotations

import ipaddress
import os
import re
from pathlib import PurePosixPath
from urllib.parse import SplitResult, urlsplit

from django.conf import settings

from hacs_site.transport import address_problem

TOKEN_PREFIX = "HACS_BROWSERTRIX_TOKEN_"
LOGIN_PREFIX = "HACS_BROWSERTRIX_LOGIN_"
_VARIABLE_RULES = {
    TOKEN_PREFIX: re.compile(rf"{TOKEN_PREFIX}[A-Z0-9_]+"),
    LOGIN_PREFIX: re.compile(rf"{LOGIN_PREFIX}[A-Z0-9_]+"),
}
DEFAULT_PORTS = {"http": 80, "https": 443}
# Names that are loopback by definition (RFC 6761), whatever a resolver answers for them.
_LOOPBACK_NAMES = ("localhost", ".localhost")


# --- Browsertrix's address ---------------------------------------------------------------------


def host_port(parts: SplitResult) -> str:
    """``host:port`` as ``HACS_BROWSERTRIX_ALLOWED_HOSTS`` lists it (IPv6 in brackets)."""
    host = (parts.hostname or "").lower()
    if ":" in host:
        host = f"[{host}]"
    port = parts.port or DEFAULT_PORTS.get(parts.scheme, 0)
    return f"{host}:{port}"


def host_is_listed(url: str) -> bool:
    """Whether the operator listed this address's host (any port) or host:port as trusted."""
    parts = urlsplit(url)
    try:
        exact = host_port(parts)
    except ValueError:  # a port that is not a number
        return False
    listed = {entry.lower() for entry in settings.HACS_BROWSERTRIX_ALLOWED_HOSTS}
    return exact in listed or exact.rsplit(":", 1)[0] in listed


def browsertrix_address_problem(url: str) -> str:
    """Empty when HACS may send a hand-off to ``url`` as written; else the sentence saying why
    not and which setting would allow it. The addresses a name resolves to are judged when the
    hand-off is sent (``handoff.transport``)."""
    parts = urlsplit(url)
    if parts.scheme not in DEFAULT_PORTS or not parts.hostname:
        return f"{url!r} is not an http:// or https:// address, e.g. https://app.browsertrix.com."
    try:
        where = host_port(parts)
    except ValueError:
        return f"The Browsertrix address {url!r} has a port that is not a number."
    if parts.username is not None or parts.password is not None:
        return (
            "The Browsertrix address takes no user name or password (…@); HACS reads "
            f"credentials only from {TOKEN_PREFIX}… and {LOGIN_PREFIX}… variables."
        )
    allow = (
        f"or, for a Browsertrix on this machine or the library's network, list {where} in "
        "HACS_BROWSERTRIX_ALLOWED_HOSTS."
    )
    rule, detail = _unlisted_rule(url)
    sentences = {
        "http": f"HACS sends a Browsertrix token only over https, and {url} is {detail}; "
        f"use the https:// address, {allow}",
        "loopback": f"The Browsertrix address {url} is this machine (loopback); {allow}",
        "address": f"The Browsertrix address {url} is {detail}; {allow}",
    }
    return sentences.get(rule, "")


def storage_address_problem(url: str, *, api_url: str) -> str:
    """Empty when HACS may download a crawl's file from ``url``; else the sentence saying why
    not and which setting would allow it. The file may lie on the Browsertrix host itself
    (``api_url``) or on a storage host listed in ``HACS_BROWSERTRIX_STORAGE_HOSTS`` (often S3 or
    MinIO); either is then reached as Browsertrix is: over https at public addresses, unless
    ``HACS_BROWSERTRIX_ALLOWED_HOSTS`` lists it. Messages name the host, never the address's
    path or query (a signed address carries a credential)."""
    parts = urlsplit(url)
    if parts.scheme not in DEFAULT_PORTS or not parts.hostname:
        return "Browsertrix gave a file address that is not http:// or https://."
    try:
        where = host_port(parts)
    except ValueError:
        return "Browsertrix gave a file address whose port is not a number."
    if parts.username is not None or parts.password is not None:
        return f"Browsertrix gave a file address at {where} with a user name or password (…@)."
    storage = {entry.lower() for entry in settings.HACS_BROWSERTRIX_STORAGE_HOSTS}
    own = where == host_port(urlsplit(api_url))
    if not own and where not in storage and where.rsplit(":", 1)[0] not in storage:
        return (
            f"Browsertrix stores the crawl's files at {where}, which "
            f"HACS_BROWSERTRIX_STORAGE_HOSTS does not list; list {where} there to let HACS "
            "download them (a storage host such as S3 or MinIO is another host than "
            "Browsertrix's)."
        )
    allow = (
        f"for storage on this machine or the library's network, list {where} in "
        "HACS_BROWSERTRIX_ALLOWED_HOSTS too."
    )
    rule, detail = _unlisted_rule(url)
    sentences = {
        "http": f"HACS downloads crawl files only over https, and {where} is reached over "
        f"{detail}; {allow}",
        "loopback": f"The crawl's files at {where} are on this machine (loopback); {allow}",
        "address": f"The crawl's files at {where} are at {detail}; {allow}",
    }
    return sentences.get(rule, "")


def _unlisted_rule(url: str) -> tuple[str, str]:
    """The rule ``url``, as written, breaks, unless ``HACS_BROWSERTRIX_ALLOWED_HOSTS`` lists its
    host: ``("http", scheme)`` for anything but https, ``("loopback", "")`` for a loopback name,
    ``("address", what it is)`` for an IP address that is not public; ``("", "")`` for none. A
    name's addresses are checked when it is resolved, before connecting
    (``hacs_site.transport``)."""
    if host_is_listed(url):
        return "", ""
    parts = urlsplit(url)
    if parts.scheme != "https":
        return "http", parts.scheme
    host = (parts.hostname or "").lower().rstrip(".")
    if host == _LOOPBACK_NAMES[0] or host.endswith(_LOOPBACK_NAMES[1]):
        return "loopback", ""
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return "", ""
    problem = address_problem(host)
    return ("address", problem) if problem else ("", "")


# --- Credentials -------------------------------------------------------------------------------


def credential_variable_problem(name: str, prefix: str) -> str:
    """Empty when ``name`` is a variable HACS may read credentials from (``prefix``…)."""
    if _VARIABLE_RULES[prefix].fullmatch(name):
        return ""
    return (
        f"{name!r} is not a variable HACS reads Browsertrix credentials from: its name must "
        f"start with {prefix} and go on in capitals, digits and _, e.g. {prefix}SCHOLARS. "
        "Give the variable's name, not its value."
    )


# --- Heritrix's job directory ------------------------------------------------------------------


def heritrix_root() -> str:
    """``HACS_HERITRIX_ROOT`` with its symlinks resolved, or empty when it is not set."""
    root = settings.HACS_HERITRIX_ROOT
    return os.path.realpath(root) if root else ""


def job_dir_problem(job_dir: str) -> str:
    """Empty when ``job_dir``, resolved (symlinks and ``..``), lies inside ``HACS_HERITRIX_ROOT``
    (or is it); else the sentence saying why HACS will not write there."""
    root = heritrix_root()
    if not root:
        return (
            "HACS writes Heritrix seeds only inside HACS_HERITRIX_ROOT, which is not set; set it "
            "to the directory holding the Heritrix jobs HACS may write to, e.g. "
            "/opt/heritrix/jobs."
        )
    path = PurePosixPath(job_dir)
    if not path.is_absolute():
        return f"The job directory must be an absolute path; {job_dir!r} is not."
    if ".." in path.parts:
        return f"Give the job directory without '..'; {job_dir!r} is not."
    real = os.path.realpath(job_dir)
    if os.path.commonpath([real, root]) != root:
        resolved = "" if real == os.path.normpath(job_dir) else f" (it resolves to {real})"
        return (
            f"The job directory {job_dir}{resolved} is outside HACS_HERITRIX_ROOT "
            f"({settings.HACS_HERITRIX_ROOT}); give a job directory inside it, or set "
            "HACS_HERITRIX_ROOT to the directory holding the Heritrix jobs."
        )
    return ""
