#!/usr/bin/env bash
# A throwaway PgBouncer in transaction mode in front of a PostgreSQL server, for the test that the Store works
# behind one (store/postgres, TestStoreBehindPgBouncer; issue 41).
#
#   scripts/pgbouncer.sh start DSN [FILE]   start PgBouncer on a free loopback port, pooling for the server and
#                                           database of DSN (postgres://user@host:port/db, as scripts/postgres.sh
#                                           prints it); print (or write to FILE) the lines
#                                           export TOOL_TEST_PGBOUNCER_DSN=... and export TOOL_TEST_PGBOUNCER_DIR=...
#   scripts/pgbouncer.sh stop [DIR]         stop the PgBouncer started in DIR (default $TOOL_TEST_PGBOUNCER_DIR),
#                                           remove DIR
#
# PgBouncer comes from the machine's Debian package `pgbouncer`: when it is missing, the script installs it (as
# root). It runs in pool_mode=transaction, with no authentication of its own (auth_type=any: every client is the
# DSN's user), listening on 127.0.0.1 only. It refuses to run as root, so as root it runs as the `postgres` user
# (created by the postgresql package). The DSN it prints asks pgx for unnamed statements
# (default_query_exec_mode=exec): a transaction-mode pooler hands each transaction to any server connection,
# where a statement prepared on another does not exist.
set -euo pipefail

log() { echo "pgbouncer.sh: $*" >&2; }
die() { log "$*"; exit 1; }

install_pgbouncer() {
  [ "$(id -u)" -eq 0 ] || die "pgbouncer not found; install it (apt-get install pgbouncer) or run as root"
  log "installing PgBouncer from the Debian packages"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2
  apt-get install -y -qq pgbouncer >&2
  # The package starts a system-wide instance on port 6432; this script runs its own.
  if command -v systemctl >/dev/null 2>&1; then systemctl stop pgbouncer >/dev/null 2>&1 || true; fi
  if command -v service >/dev/null 2>&1; then service pgbouncer stop >/dev/null 2>&1 || true; fi
}

port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

run_as() {
  if [ -z "$owner" ]; then "$@"; return; fi
  if command -v runuser >/dev/null; then runuser -u "$owner" -- "$@"; return; fi
  su -s /bin/sh "$owner" -c "$(printf '%q ' "$@")"
}

start() {
  local dsn=${1:-} out=${2:-} rest user hostport host port db dir bport tries
  [ -n "$dsn" ] || die "usage: $0 start DSN [FILE]"
  command -v pgbouncer >/dev/null || [ -x /usr/sbin/pgbouncer ] || install_pgbouncer
  local bin
  bin=$(command -v pgbouncer || echo /usr/sbin/pgbouncer)
  rest=${dsn#*://}
  rest=${rest%%\?*}
  user=${rest%%@*}
  user=${user%%:*}
  hostport=${rest#*@}
  hostport=${hostport%%/*}
  db=${rest#*/}
  host=${hostport%%:*}
  port=${hostport##*:}
  [ -n "$user" ] && [ -n "$host" ] && [ -n "$port" ] && [ -n "$db" ] || die "cannot read user, host, port and database from $dsn"

  owner=""
  if [ "$(id -u)" -eq 0 ]; then
    owner=postgres
    id "$owner" >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin "$owner"
  fi
  dir=$(mktemp -d /tmp/tool-pgbouncer.XXXXXX)
  touch "$dir/.tool-pgbouncer"
  for tries in $(seq 1 20); do
    bport=$((20000 + RANDOM % 40000))
    if port_busy "$bport"; then bport=""; continue; fi
    cat >"$dir/pgbouncer.ini" <<EOF
[databases]
$db = host=$host port=$port dbname=$db user=$user

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $bport
unix_socket_dir =
auth_type = any
pool_mode = transaction
default_pool_size = 20
max_client_conn = 500
logfile = $dir/pgbouncer.log
pidfile = $dir/pgbouncer.pid
ignore_startup_parameters = extra_float_digits,search_path
EOF
    [ -z "$owner" ] || chown -R "$owner" "$dir"
    if run_as "$bin" -d "$dir/pgbouncer.ini" >>"$dir/start.log" 2>&1; then
      local i
      for i in $(seq 1 100); do
        if port_busy "$bport"; then break; fi
        sleep 0.1
      done
      if port_busy "$bport"; then break; fi
    fi
    log "start on port $bport failed (attempt $tries), retrying"
    [ ! -f "$dir/pgbouncer.pid" ] || kill "$(cat "$dir/pgbouncer.pid")" 2>/dev/null || true
    bport=""
  done
  [ -n "$bport" ] || { cat "$dir/start.log" "$dir/pgbouncer.log" >&2 2>/dev/null; rm -rf "$dir"; die "could not start PgBouncer"; }

  local lines
  lines="export TOOL_TEST_PGBOUNCER_DSN='postgres://$user@127.0.0.1:$bport/$db?sslmode=disable&default_query_exec_mode=exec'
export TOOL_TEST_PGBOUNCER_DIR='$dir'"
  if [ -n "$out" ]; then echo "$lines" >"$out"; else echo "$lines"; fi
  log "PgBouncer (transaction mode) on 127.0.0.1:$bport for $host:$port/$db, files in $dir"
}

stop() {
  local dir=${1:-${TOOL_TEST_PGBOUNCER_DIR:-}}
  [ -n "$dir" ] || die "stop: no directory given and TOOL_TEST_PGBOUNCER_DIR is unset"
  [ -f "$dir/.tool-pgbouncer" ] || die "stop: $dir was not made by this script"
  if [ -f "$dir/pgbouncer.pid" ]; then
    local pid i
    pid=$(cat "$dir/pgbouncer.pid")
    kill "$pid" 2>/dev/null || true
    for i in $(seq 1 50); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
  fi
  rm -rf "$dir"
}

owner=""
case "${1:-}" in
  start) start "${2:-}" "${3:-}" ;;
  stop) stop "${2:-}" ;;
  *) die "usage: $0 start DSN [FILE] | stop [DIR]" ;;
esac
