#!/usr/bin/env bash
# A throwaway PostgreSQL server for the tests of store/postgres.
#
#   scripts/postgres.sh start [FILE]   start a server on a free loopback port; print (or write to FILE) the lines
#                                      export TOOL_TEST_POSTGRES_DSN=... and export TOOL_TEST_POSTGRES_DIR=...
#   scripts/postgres.sh stop [DIR]     stop the server started in DIR (default $TOOL_TEST_POSTGRES_DIR), remove DIR
#   scripts/postgres.sh crash DIR      stop the server in DIR at once (pg_ctl stop -m immediate), keeping its data:
#                                      an outage, for tests that start their own server
#   scripts/postgres.sh restart DIR    start the server in DIR again, on its port
#
# Typical use:  eval "$(scripts/postgres.sh start)"; go test ./store/postgres; scripts/postgres.sh stop
#
# PostgreSQL comes from the machine's Debian packages: when initdb and pg_ctl are missing, the script installs the
# `postgresql` package (as root). Data, log and unix socket all live in one temporary directory; the server listens
# on 127.0.0.1 only, with trust authentication and fsync off: it is for tests, never for data that matters.
# Commits are asynchronous unless TOOL_POSTGRES_SYNCHRONOUS_COMMIT=on: a `crash` (an immediate stop) then loses the
# last commits, so a server that a test crashes on purpose is started with it on. TOOL_POSTGRES_FSYNC=on makes a
# commit wait for the disk too (what a durable server pays; scripts/bench-webhooks.sh measures with both on).
# TOOL_POSTGRES_OPTIONS adds server options (such as -c shared_preload_libraries=pg_stat_statements).
# initdb refuses to run as root, so as root the server runs as the `postgres` user (created by the package).
set -euo pipefail

log() { echo "postgres.sh: $*" >&2; }
die() { log "$*"; exit 1; }

# bindir prints the directory holding initdb and pg_ctl, newest version first; empty when there is none.
bindir() {
  local d
  for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
    if [ -x "$d/initdb" ] && [ -x "$d/pg_ctl" ]; then echo "$d"; return; fi
  done
  if command -v initdb >/dev/null && command -v pg_ctl >/dev/null; then
    dirname "$(readlink -f "$(command -v initdb)")"
  fi
}

install_postgres() {
  [ "$(id -u)" -eq 0 ] || die "initdb/pg_ctl not found; install PostgreSQL (apt-get install postgresql) or run as root"
  log "installing PostgreSQL from the Debian packages"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2
  apt-get install -y -qq postgresql >&2
}

# as_owner runs a command as the user that owns the cluster.
as_owner() {
  if [ -z "$owner" ]; then "$@"; return; fi
  if command -v runuser >/dev/null; then runuser -u "$owner" -- "$@"; return; fi
  su -s /bin/sh "$owner" -c "$(printf '%q ' "$@")"
}

# port_busy reports whether something accepts connections on 127.0.0.1:$1.
port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

start() {
  local out=${1:-} bin dir port tries
  bin=$(bindir)
  if [ -z "$bin" ]; then install_postgres; bin=$(bindir); fi
  [ -n "$bin" ] || die "PostgreSQL installed but initdb/pg_ctl not found under /usr/lib/postgresql/*/bin"

  owner=""
  if [ "$(id -u)" -eq 0 ]; then
    owner=postgres
    id "$owner" >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin "$owner"
  fi
  dir=$(mktemp -d /tmp/tool-postgres.XXXXXX)
  touch "$dir/.tool-postgres"
  mkdir "$dir/sock"
  [ -z "$owner" ] || chown -R "$owner" "$dir"

  as_owner "$bin/initdb" -D "$dir/data" -U tool --auth=trust --encoding=UTF8 --locale=C >"$dir/initdb.log" 2>&1 ||
    { cat "$dir/initdb.log" >&2; rm -rf "$dir"; die "initdb failed"; }

  for tries in $(seq 1 20); do
    port=$((20000 + RANDOM % 40000))
    if port_busy "$port"; then port=""; continue; fi
    echo "-c listen_addresses=127.0.0.1 -p $port -k $dir/sock -c max_connections=300 -c fsync=${TOOL_POSTGRES_FSYNC:-off} -c synchronous_commit=${TOOL_POSTGRES_SYNCHRONOUS_COMMIT:-off} -c full_page_writes=${TOOL_POSTGRES_FSYNC:-off} ${TOOL_POSTGRES_OPTIONS:-}" >"$dir/options"
    if as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 start -o "$(cat "$dir/options")" >&2; then
      break
    fi
    log "start on port $port failed (attempt $tries), retrying"
    port=""
  done
  [ -n "$port" ] || { cat "$dir/server.log" >&2; rm -rf "$dir"; die "could not start the server"; }
  echo "$bin" >"$dir/bindir"

  as_owner "$bin/createdb" -h "$dir/sock" -p "$port" -U tool tool_test ||
    { stop "$dir"; die "createdb failed"; }

  local lines
  lines="export TOOL_TEST_POSTGRES_DSN='postgres://tool@127.0.0.1:$port/tool_test?sslmode=disable'
export TOOL_TEST_POSTGRES_DIR='$dir'"
  if [ -n "$out" ]; then echo "$lines" >"$out"; else echo "$lines"; fi
  log "server running on 127.0.0.1:$port, data in $dir"
}

stop() {
  local dir=${1:-${TOOL_TEST_POSTGRES_DIR:-}}
  [ -n "$dir" ] || die "stop: no directory given and TOOL_TEST_POSTGRES_DIR is unset"
  [ -f "$dir/.tool-postgres" ] || die "stop: $dir was not made by this script"
  owner=""
  # As root, act as whoever owns the cluster (pg_ctl refuses root), whoever started it.
  if [ "$(id -u)" -eq 0 ] && [ -d "$dir/data" ]; then
    owner=$(stat -c %U "$dir/data")
    [ "$owner" != root ] || owner=""
  fi
  if [ -f "$dir/data/postmaster.pid" ]; then
    as_owner "$(cat "$dir/bindir")/pg_ctl" -D "$dir/data" -m fast -w stop >&2 || log "pg_ctl stop failed"
  fi
  rm -rf "$dir"
}

# crash stops the server in DIR at once, as a crash would; restart starts it again with its options.
crash() {
  local dir=${1:-}
  [ -f "$dir/.tool-postgres" ] || die "crash: $dir was not made by this script"
  owner_of "$dir"
  as_owner "$(cat "$dir/bindir")/pg_ctl" -D "$dir/data" -m immediate -w stop >&2
}

restart() {
  local dir=${1:-}
  [ -f "$dir/.tool-postgres" ] && [ -f "$dir/options" ] || die "restart: $dir was not made by this script"
  owner_of "$dir"
  as_owner "$(cat "$dir/bindir")/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 start -o "$(cat "$dir/options")" >&2
}

# owner_of sets owner to the user owning DIR's cluster when running as root (pg_ctl refuses root).
owner_of() {
  owner=""
  if [ "$(id -u)" -eq 0 ] && [ -d "$1/data" ]; then
    owner=$(stat -c %U "$1/data")
    [ "$owner" != root ] || owner=""
  fi
}

owner=""
case "${1:-}" in
  start) start "${2:-}" ;;
  stop) stop "${2:-}" ;;
  crash) crash "${2:-}" ;;
  restart) restart "${2:-}" ;;
  *) die "usage: $0 start [FILE] | stop [DIR] | crash DIR | restart DIR" ;;
esac
