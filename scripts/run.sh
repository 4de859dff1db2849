#!/usr/bin/env bash
# Set up and run HACS on this machine: virtualenv, dependencies, Redis, database, demo data,
# background workers and the web server on 127.0.0.1. Ctrl-C stops everything it started.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh
# What HACS writes while it runs (var/: database, Redis data, run.env, demo archive) is owner-only.
umask 077
exec .venv/bin/python scripts/run.py "$@"
