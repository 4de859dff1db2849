"""What a deployment expects: throttled logins, HTTPS from the environment, private files."""

from __future__ import annotations

import io
import json
import os
import stat
import subprocess
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.db.models import F

from tests.factories import PASSWORD, make_user

ROOT = Path(__file__).resolve().parent.parent
LOGIN = "/accounts/login/"
ADMIN_LOGIN = "/admin/login/"
OFFICE = "192.0.2.10"  # one address shared by a library's office (documentation range)


def attempt(client: Any, username: str, password: str, *, path: str = LOGIN, **extra: str) -> Any:
    return client.post(path, {"username": username, "password": password}, **extra)


def fail(client: Any, username: str, times: int, *, path: str = LOGIN, **extra: str) -> Any:
    response = None
    for _ in range(times):
        response = attempt(client, username, "not the password", path=path, **extra)
    return response


def logged_in_as(client: Any) -> str | None:
    """The username the client's session is logged in as, or None."""
    from django.contrib.auth import SESSION_KEY, get_user_model

    pk = client.session.get(SESSION_KEY)
    return None if pk is None else get_user_model().objects.get(pk=pk).get_username()


# --- Login throttling -------------------------------------------------------------------------


@pytest.mark.django_db
def test_the_limit_and_cool_off_have_their_documented_defaults(settings: Any) -> None:
    assert settings.AXES_FAILURE_LIMIT == 5
    assert settings.AXES_COOLOFF_TIME == timedelta(minutes=15)
    assert settings.AXES_LOCKOUT_PARAMETERS == [["username", "ip_address"]]


@pytest.mark.django_db
def test_after_too_many_failures_even_the_right_password_is_refused_with_a_page(
    client: Any, settings: Any
) -> None:
    from axes.models import AccessAttempt

    make_user("curator")
    limit = settings.AXES_FAILURE_LIMIT
    before_limit = fail(client, "curator", limit - 1, REMOTE_ADDR=OFFICE)
    assert before_limit.status_code == 200
    assert b"didn't match" in before_limit.content

    assert fail(client, "curator", 1, REMOTE_ADDR=OFFICE).status_code == 429
    refused = attempt(client, "curator", PASSWORD, REMOTE_ADDR=OFFICE)

    assert refused.status_code == 429
    assert logged_in_as(client) is None
    assert "registration/locked.html" in [t.name for t in refused.templates]
    page = refused.content.decode()
    assert "Too many failed logins" in page
    assert f"After {limit} failed attempts to log in as <strong>curator</strong>" in page
    assert "manage.py axes_reset_username curator" in page
    # The wait runs from the last attempt, the refused one included.
    until = AccessAttempt.objects.get(username="curator").attempt_time + timedelta(minutes=15)
    assert f'Try again after <strong><time datetime="{until.isoformat()}">' in page
    assert f"{until:%H:%M} UTC on {until.day} {until:%B %Y}</time></strong>, in 15" in page


@pytest.mark.django_db
def test_another_user_behind_the_same_address_still_logs_in(client: Any, settings: Any) -> None:
    make_user("curator")
    make_user("reader", role="viewer")
    fail(client, "curator", settings.AXES_FAILURE_LIMIT, REMOTE_ADDR=OFFICE)

    response = attempt(client, "reader", PASSWORD, REMOTE_ADDR=OFFICE)

    assert response.status_code == 302
    assert logged_in_as(client) == "reader"


@pytest.mark.django_db
def test_the_locked_user_still_logs_in_from_another_address(client: Any, settings: Any) -> None:
    make_user("curator")
    fail(client, "curator", settings.AXES_FAILURE_LIMIT, REMOTE_ADDR=OFFICE)

    assert attempt(client, "curator", PASSWORD, REMOTE_ADDR="198.51.100.7").status_code == 302
    assert logged_in_as(client) == "curator"


@pytest.mark.django_db
def test_the_admin_login_is_throttled_too(client: Any, settings: Any) -> None:
    make_user("keeper", role="admin")
    before_limit = fail(client, "keeper", settings.AXES_FAILURE_LIMIT - 1, path=ADMIN_LOGIN)
    assert before_limit.status_code == 200

    fail(client, "keeper", 1, path=ADMIN_LOGIN)
    refused = attempt(client, "keeper", PASSWORD, path=ADMIN_LOGIN)

    assert refused.status_code == 429
    assert b"Too many failed logins" in refused.content
    assert logged_in_as(client) is None
    assert client.get("/admin/").status_code == 302


@pytest.mark.django_db
def test_a_lock_lifts_once_the_cool_off_has_passed(client: Any, settings: Any) -> None:
    from axes.models import AccessAttempt

    make_user("curator")
    fail(client, "curator", settings.AXES_FAILURE_LIMIT)
    assert attempt(client, "curator", PASSWORD).status_code == 429

    # The cool-off passes: django-axes keeps the time of the last failure in its AccessAttempt
    # row and counts only failures younger than AXES_COOLOFF_TIME.
    AccessAttempt.objects.update(
        attempt_time=F("attempt_time") - settings.AXES_COOLOFF_TIME - timedelta(seconds=1)
    )

    assert attempt(client, "curator", PASSWORD).status_code == 302
    assert logged_in_as(client) == "curator"
    # A successful login forgets the earlier failures: one more slip does not lock again.
    client.logout()
    assert fail(client, "curator", 1).status_code == 200
    assert attempt(client, "curator", PASSWORD).status_code == 302


@pytest.mark.django_db
def test_an_admin_lifts_a_lock_with_axes_reset_username(client: Any, settings: Any) -> None:
    make_user("curator")
    fail(client, "curator", settings.AXES_FAILURE_LIMIT)
    assert attempt(client, "curator", PASSWORD).status_code == 429

    out = io.StringIO()
    call_command("axes_reset_username", "curator", stdout=out)
    assert "attempts removed" in out.getvalue()

    assert attempt(client, "curator", PASSWORD).status_code == 302


@pytest.mark.django_db
def test_behind_a_proxy_each_client_address_is_counted_apart(client: Any, settings: Any) -> None:
    from hacs_site.settings import client_address_behind_proxy

    settings.AXES_CLIENT_IP_CALLABLE = client_address_behind_proxy
    make_user("curator")
    # The proxy appends the address it saw; whatever the client sent before it is ignored.
    via = {"REMOTE_ADDR": "127.0.0.1", "HTTP_X_FORWARDED_FOR": "203.0.113.9, " + OFFICE}
    fail(client, "curator", settings.AXES_FAILURE_LIMIT, **via)
    assert attempt(client, "curator", PASSWORD, **via).status_code == 429

    elsewhere = {"REMOTE_ADDR": "127.0.0.1", "HTTP_X_FORWARDED_FOR": OFFICE + ", 198.51.100.7"}
    assert attempt(client, "curator", PASSWORD, **elsewhere).status_code == 302


# --- HTTPS from the environment -----------------------------------------------------------------

# Variables a developer's shell may hold that would change what the subprocesses below see.
HTTPS_VARIABLES = (
    "DEBUG",
    "SECRET_KEY",
    "ALLOWED_HOSTS",
    "HACS_HTTPS",
    "HACS_BEHIND_PROXY",
    "HACS_HSTS_SECONDS",
    "HACS_HSTS_INCLUDE_SUBDOMAINS",
    "HACS_HSTS_PRELOAD",
    "REDIS_URL",
    "PYTEST_CURRENT_TEST",
)


def hacs(args: list[str], var_dir: Path, **variables: str) -> subprocess.CompletedProcess[str]:
    """Run ``manage.py`` in a fresh process on its own var/ and SQLite database."""
    env = {k: v for k, v in os.environ.items() if k not in HTTPS_VARIABLES}
    env.update(
        HACS_VAR_DIR=str(var_dir),
        DATABASE_URL=f"sqlite:///{var_dir}/hacs.sqlite3",
        DJANGO_SETTINGS_MODULE="hacs_site.settings",
        **variables,
    )
    return subprocess.run(
        [sys.executable, str(ROOT / "manage.py"), *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


DEPLOYED = {
    "DEBUG": "false",
    "SECRET_KEY": "k3y-" + "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMN",
    "ALLOWED_HOSTS": "hacs.library.example",
    "HACS_HTTPS": "true",
    "HACS_BEHIND_PROXY": "true",
    "HACS_HSTS_INCLUDE_SUBDOMAINS": "true",
    "HACS_HSTS_PRELOAD": "true",
}

SHOW_SETTINGS = """
import io
import json
from django.conf import settings as s
names = ["SECURE_SSL_REDIRECT", "SESSION_COOKIE_SECURE", "CSRF_COOKIE_SECURE",
         "SECURE_HSTS_SECONDS", "SECURE_HSTS_INCLUDE_SUBDOMAINS", "SECURE_HSTS_PRELOAD",
         "SECURE_PROXY_SSL_HEADER", "AXES_FAILURE_LIMIT"]
print(json.dumps({name: getattr(s, name) for name in names}))
"""


def settings_under(tmp_path: Path, **variables: str) -> dict[str, Any]:
    result = hacs(["shell", "-c", SHOW_SETTINGS], tmp_path / "var", **variables)
    assert result.returncode == 0, result.stderr
    return dict(json.loads(result.stdout.strip().splitlines()[-1]))


def test_check_deploy_is_clean_with_the_documented_https_variables(tmp_path: Path) -> None:
    result = hacs(["check", "--deploy", "--fail-level", "WARNING"], tmp_path / "var", **DEPLOYED)

    assert result.returncode == 0, result.stdout + result.stderr
    assert "System check identified no issues (0 silenced)." in result.stdout
    assert "WARNINGS" not in result.stdout + result.stderr


def test_check_deploy_names_what_is_missing_without_https(tmp_path: Path) -> None:
    without = {k: v for k, v in DEPLOYED.items() if not k.startswith("HACS_")}
    result = hacs(["check", "--deploy"], tmp_path / "var", **without)

    for warning in ("security.W004", "security.W008", "security.W012", "security.W016"):
        assert warning in result.stderr


def test_hacs_https_turns_on_redirect_secure_cookies_and_a_year_of_hsts(tmp_path: Path) -> None:
    assert settings_under(tmp_path, HACS_HTTPS="true") == {
        "SECURE_SSL_REDIRECT": True,
        "SESSION_COOKIE_SECURE": True,
        "CSRF_COOKIE_SECURE": True,
        "SECURE_HSTS_SECONDS": 31_536_000,
        "SECURE_HSTS_INCLUDE_SUBDOMAINS": False,
        "SECURE_HSTS_PRELOAD": False,
        "SECURE_PROXY_SSL_HEADER": None,  # the header is trusted only behind a proxy
        "AXES_FAILURE_LIMIT": 5,
    }
    chosen = settings_under(
        tmp_path,
        HACS_HTTPS="1",
        HACS_BEHIND_PROXY="1",
        HACS_HSTS_SECONDS="600",
        HACS_HSTS_INCLUDE_SUBDOMAINS="yes",
        HACS_HSTS_PRELOAD="on",
        HACS_LOGIN_FAILURE_LIMIT="3",
    )
    assert chosen["SECURE_HSTS_SECONDS"] == 600
    assert chosen["SECURE_HSTS_INCLUDE_SUBDOMAINS"] is chosen["SECURE_HSTS_PRELOAD"] is True
    assert chosen["SECURE_PROXY_SSL_HEADER"] == ["HTTP_X_FORWARDED_PROTO", "https"]
    assert chosen["AXES_FAILURE_LIMIT"] == 3


def test_without_hacs_https_nothing_is_forced_to_https(tmp_path: Path) -> None:
    assert settings_under(tmp_path) == {
        "SECURE_SSL_REDIRECT": False,
        "SESSION_COOKIE_SECURE": False,
        "CSRF_COOKIE_SECURE": False,
        "SECURE_HSTS_SECONDS": 0,
        "SECURE_HSTS_INCLUDE_SUBDOMAINS": False,
        "SECURE_HSTS_PRELOAD": False,
        "SECURE_PROXY_SSL_HEADER": None,
        "AXES_FAILURE_LIMIT": 5,
    }


@pytest.mark.django_db
def test_the_local_run_answers_over_plain_http(client: Any, settings: Any) -> None:
    assert settings.SECURE_SSL_REDIRECT is False
    response = client.get(LOGIN)
    assert response.status_code == 200
    assert "Strict-Transport-Security" not in response.headers
    make_user("curator")
    assert attempt(client, "curator", PASSWORD).status_code == 302
    assert client.get("/").status_code == 200


@pytest.mark.django_db
def test_behind_the_proxy_https_requests_pass_and_http_ones_are_redirected(
    client: Any, settings: Any
) -> None:
    # What HACS_HTTPS=true and HACS_BEHIND_PROXY=true set (checked above in a fresh process).
    settings.SECURE_SSL_REDIRECT = True
    settings.SECURE_HSTS_SECONDS = 31_536_000
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")

    plain = client.get(LOGIN, HTTP_X_FORWARDED_PROTO="http")
    assert plain.status_code == 301
    assert plain["Location"] == "https://testserver/accounts/login/"
    secure = client.get(LOGIN, HTTP_X_FORWARDED_PROTO="https")
    assert secure.status_code == 200
    assert secure["Strict-Transport-Security"] == "max-age=31536000"


# --- Private files -------------------------------------------------------------------------------


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def modes_under(directory: Path) -> dict[str, int]:
    """Every file and directory under ``directory`` (itself included) with its mode."""
    found = {".": mode(directory)}
    for path in directory.rglob("*"):
        found[str(path.relative_to(directory))] = mode(path)
    return found


def private(found: dict[str, int], *, base: Path) -> dict[str, int]:
    """Those of ``found`` that are not owner-only (0700 directories, 0600 files)."""
    loose = {}
    for name, bits in found.items():
        wanted = 0o700 if (base / name).is_dir() else 0o600
        if bits != wanted:
            loose[name] = bits
    return loose


def test_a_new_installation_creates_var_and_its_database_owner_only(tmp_path: Path) -> None:
    var = tmp_path / "var"
    result = hacs(["migrate", "--no-input", "--verbosity", "0"], var)
    assert result.returncode == 0, result.stderr

    found = modes_under(var)
    assert {"hacs.sqlite3", "secret_key"} <= set(found)
    assert private(found, base=var) == {}, {k: oct(v) for k, v in found.items()}


def test_an_existing_var_is_made_owner_only_at_the_next_start(tmp_path: Path) -> None:
    var = tmp_path / "var"
    appendonly = var / "redis" / "appendonlydir"
    appendonly.mkdir(parents=True)
    for name in (
        "secret_key",
        "run.env",
        "hacs.sqlite3",
        "hacs.sqlite3-wal",
        "redis/redis.log",
        "redis/appendonlydir/appendonly.aof.1.incr.aof",
    ):
        (var / name).write_text("x" * 60 if name == "secret_key" else "")
        (var / name).chmod(0o644)
    (var / "run.env").write_text("REDIS_URL=redis://127.0.0.1:1/0\n")
    for directory in (var, var / "redis", appendonly):
        directory.chmod(0o755)

    assert hacs(["check"], var).returncode == 0

    found = modes_under(var)
    assert private(found, base=var) == {}, {k: oct(v) for k, v in found.items()}


def test_a_shared_directory_such_as_tmp_is_left_as_it_is(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)

    assert hacs(["check"], shared).returncode == 0

    assert mode(shared) == 0o1777
    assert mode(shared / "hacs.sqlite3") == 0o600  # HACS's own files are still private


def test_the_run_commands_redis_keeps_its_data_owner_only(tmp_path: Path) -> None:
    from scripts.localservers import start_redis

    directory = tmp_path / "var" / "redis"
    with start_redis(directory, persistent=True):
        found = modes_under(directory)

    assert "redis.log" in found and len(found) > 2
    assert private(found, base=directory) == {}, {k: oct(v) for k, v in found.items()}


def test_an_upload_stored_on_disk_is_owner_only(tmp_path: Path) -> None:
    from django.core.files.base import ContentFile
    from django.core.files.storage import FileSystemStorage

    storage = FileSystemStorage(location=tmp_path / "uploads")
    name = storage.save("seeds/list.csv", ContentFile(b"url\nhttp://www.cs.example.edu/~a/\n"))

    assert mode(Path(storage.path(name))) == 0o600
    assert mode(tmp_path / "uploads" / "seeds") == 0o700
