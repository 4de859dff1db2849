#!/usr/bin/env bash
# Run HACS's whole test suite: lint, migration check, then pytest on SQLite and on PostgreSQL.
# It installs what the tests need, starts its own Redis and PostgreSQL on free ports and stops
# them afterwards. Extra arguments go to pytest (e.g. scripts/test.sh -k estimators);
# HACS_TEST_DATABASES=sqlite limits the run to one database.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh --test
exec .venv/bin/python scripts/run_tests.py "$@"
