#!/usr/bin/env bash
# A throwaway PostgreSQL cluster for the tests of the PostgreSQL ledger backend (issue 8).
#
#   scripts/postgres.sh start     install PostgreSQL (Debian package) if initdb is missing,
#                                 create the cluster under .cache/pg/ on first use, start it on
#                                 a free loopback port (unix socket under .cache/pg/run), create
#                                 the database `bernstein`; prints the connection URL
#   scripts/postgres.sh url       prints the URL of the running cluster
#   scripts/postgres.sh restart [immediate]
#                                 stops (mode fast, or immediate = crash-like) and starts again
#                                 on the same port
#   scripts/postgres.sh stop      stops the cluster (its files stay for the next run)
#   scripts/postgres.sh destroy   stops it and removes .cache/pg/
#
# Environment: BERNSTEIN_PG_DIR (default <repo>/.cache/pg), BERNSTEIN_PG_PORT (default: the
# first free port from 54329). The cluster trusts loopback connections: it is for tests only,
# bound to 127.0.0.1, never for data anyone keeps. As root (CI) the server runs as the
# `postgres` user the Debian package creates, since initdb refuses to run as root.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DB=bernstein

# set_paths: PGDIR and the paths in it. As root the server runs as `postgres`, which must be able
# to reach PGDIR; when a parent of the checkout is closed to other users, a directory under /tmp
# named after the checkout is used instead.
set_paths() {
  PGDIR="${BERNSTEIN_PG_DIR:-$ROOT/.cache/pg}"
  if [ -z "${BERNSTEIN_PG_DIR:-}" ] && [ "$(id -u)" -eq 0 ] && id postgres >/dev/null 2>&1; then
    mkdir -p "$PGDIR"
    if ! runuser -u postgres -- test -x "$PGDIR" 2>/dev/null; then
      PGDIR="/tmp/bernstein-pg-$(printf '%s' "$ROOT" | md5sum | cut -c1-12)"
    fi
  fi
  DATA="$PGDIR/data"
  RUN="$PGDIR/run"
  LOG="$PGDIR/server.log"
  URL_FILE="$PGDIR/url"
}

find_bin() {
  local d
  for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
    if [ -x "$d/initdb" ]; then echo "$d"; return 0; fi
  done
  if command -v initdb >/dev/null 2>&1; then dirname "$(command -v initdb)"; return 0; fi
  return 1
}

ensure_installed() {
  if find_bin >/dev/null; then return 0; fi
  if [ "$(id -u)" -ne 0 ]; then
    echo "postgres.sh: PostgreSQL is not installed and we are not root: apt-get install postgresql" >&2
    exit 1
  fi
  echo "postgres.sh: installing PostgreSQL from Debian's packages" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2
  apt-get install -y -qq postgresql >&2
  find_bin >/dev/null || { echo "postgres.sh: no initdb after installing postgresql" >&2; exit 1; }
}

# as_owner CMD...: runs CMD as the cluster's owner (the postgres user when we are root).
as_owner() {
  if [ "$(id -u)" -eq 0 ]; then
    (cd / && runuser -u postgres -- "$@")
  else
    "$@"
  fi
}

port_free() {
  ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

pick_port() {
  if [ -n "${BERNSTEIN_PG_PORT:-}" ]; then echo "$BERNSTEIN_PG_PORT"; return; fi
  local p
  for p in $(seq 54329 54429); do
    if port_free "$p"; then echo "$p"; return; fi
  done
  echo "postgres.sh: no free port in 54329-54429" >&2
  exit 1
}

running() {
  [ -f "$DATA/postmaster.pid" ] && as_owner "$BIN/pg_ctl" -D "$DATA" status >/dev/null 2>&1
}

start_server() {
  local port=$1
  as_owner "$BIN/pg_ctl" -D "$DATA" -l "$LOG" -w -t 60 -o \
    "-p $port -k $RUN -c listen_addresses=127.0.0.1 -c max_connections=200 -c fsync=on -c recovery_init_sync_method=syncfs" \
    start >&2
  echo "$port" >"$PGDIR/port"
}

cmd_start() {
  ensure_installed
  set_paths
  BIN=$(find_bin)
  mkdir -p "$PGDIR"
  if [ "$(id -u)" -eq 0 ]; then chown postgres: "$PGDIR"; fi
  if [ ! -f "$DATA/PG_VERSION" ]; then
    rm -rf "$DATA"
    as_owner mkdir -p "$DATA" "$RUN"
    as_owner "$BIN/initdb" -D "$DATA" -U postgres -A trust -E UTF8 --locale=C.UTF-8 >"$PGDIR/initdb.log" 2>&1 \
      || { cat "$PGDIR/initdb.log" >&2; exit 1; }
  fi
  as_owner mkdir -p "$RUN"
  if ! running; then
    start_server "$(pick_port)"
  fi
  local port url
  port=$(cat "$PGDIR/port")
  if ! as_owner "$BIN/psql" -h 127.0.0.1 -p "$port" -U postgres -Atqc \
    "SELECT 1 FROM pg_database WHERE datname = '$DB'" postgres | grep -q 1; then
    as_owner "$BIN/createdb" -h 127.0.0.1 -p "$port" -U postgres "$DB" >&2
  fi
  url="postgres://postgres@127.0.0.1:$port/$DB"
  echo "$url" >"$URL_FILE"
  echo "$url"
}

cmd_stop() {
  BIN=$(find_bin) || return 0
  if [ -f "$DATA/PG_VERSION" ] && running; then
    as_owner "$BIN/pg_ctl" -D "$DATA" -m "${1:-fast}" -w stop >&2
  fi
}

cmd_restart() {
  BIN=$(find_bin)
  local port
  port=$(cat "$PGDIR/port")
  cmd_stop "${1:-fast}"
  start_server "$port"
}

[ "${1:-}" = start ] || set_paths
case "${1:-}" in
  start) cmd_start ;;
  url) cat "$URL_FILE" ;;
  stop) cmd_stop fast ;;
  restart) cmd_restart "${2:-fast}" ;;
  destroy)
    cmd_stop immediate || true
    rm -rf "$PGDIR"
    ;;
  *)
    echo "usage: $0 start|url|stop|restart [fast|immediate]|destroy" >&2
    exit 2
    ;;
esac
