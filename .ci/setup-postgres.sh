#!/usr/bin/env bash
# Install and start PostgreSQL from the distribution's packages, then create a test role and
# database. Idempotent; runs as root on a fresh Debian/Ubuntu machine without stdin.
# The last line of stdout is the export line for the tests, e.g.
#   export INFERACT_TEST_PG_DSN='postgresql://inferact:inferact@127.0.0.1:5432/inferact_test'
# Usage in .ci/run:  eval "$(.ci/setup-postgres.sh | tail -n 1)"
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
PG_USER="${INFERACT_PG_USER:-inferact}"
PG_PASSWORD="${INFERACT_PG_PASSWORD:-inferact}"
PG_DB="${INFERACT_PG_DB:-inferact_test}"
PG_PORT="${INFERACT_PG_PORT:-5432}"

log() { echo "setup-postgres: $*" >&2; }

if ! command -v pg_lsclusters >/dev/null 2>&1; then
  log "installing postgresql"
  apt-get update -qq >&2
  apt-get install -y -qq postgresql >&2
fi

# The Debian package creates a cluster "main" for the default major version; make sure one exists.
if [ -z "$(pg_lsclusters -h 2>/dev/null)" ]; then
  ver=$(ls /usr/lib/postgresql | sort -V | tail -n 1)
  log "creating cluster $ver/main"
  pg_createcluster "$ver" main --port "$PG_PORT" >&2
fi
read -r ver cluster port status _ < <(pg_lsclusters -h | head -n 1)
if [ "$status" != "online" ]; then
  log "starting cluster $ver/$cluster on port $port"
  pg_ctlcluster "$ver" "$cluster" start >&2 || service postgresql start >&2
fi
for _ in $(seq 1 30); do
  if su postgres -c "pg_isready -q -p $port"; then break; fi
  sleep 1
done
su postgres -c "pg_isready -p $port" >&2

psql_super() { su postgres -c "psql -p $port -v ON_ERROR_STOP=1 -qtA -c \"$1\""; }
if [ "$(psql_super "SELECT 1 FROM pg_roles WHERE rolname='$PG_USER'")" != "1" ]; then
  log "creating role $PG_USER"
  psql_super "CREATE ROLE $PG_USER LOGIN PASSWORD '$PG_PASSWORD'" >&2
fi
if [ "$(psql_super "SELECT 1 FROM pg_database WHERE datname='$PG_DB'")" != "1" ]; then
  log "creating database $PG_DB"
  psql_super "CREATE DATABASE $PG_DB OWNER $PG_USER" >&2
fi

echo "export INFERACT_TEST_PG_DSN='postgresql://$PG_USER:$PG_PASSWORD@127.0.0.1:$port/$PG_DB'"
