#!/usr/bin/env bash
# A throwaway Temporal dev server for the tests of the temporal module (issue 40).
#
#   scripts/temporal.sh build          build the Temporal CLI (it holds the dev server) into the cache directory,
#                                      once, from the Go module proxy; print the binary's path
#   scripts/temporal.sh start [FILE]   build if needed, start a dev server (in memory) on free loopback ports;
#                                      print (or write to FILE) the lines
#                                      export TOOL_TEST_TEMPORAL_ADDR=... and export TOOL_TEST_TEMPORAL_DIR=...
#   scripts/temporal.sh stop [DIR]     stop the server started in DIR (default $TOOL_TEST_TEMPORAL_DIR), remove DIR
#
# Typical use:  eval "$(scripts/temporal.sh start)"; (cd temporal && go test ./...); scripts/temporal.sh stop
#
# The build (`go install github.com/temporalio/cli/cmd/temporal@v1.5.1`) takes 6-7 minutes on 2 idle cores and
# ~250 MB; it lands in ${XDG_CACHE_HOME:-~/.cache}/commonagents-tool/temporal-cli-v1.5.1 (TOOL_TEMPORAL_CLI_DIR
# overrides), written under a temporary name and renamed when complete, so an interrupted build is never taken
# for a finished one. The server starts in well under a second and uses ~105 MiB.
set -euo pipefail

VERSION=v1.5.1
log() { echo "temporal.sh: $*" >&2; }
die() { log "$*"; exit 1; }

cli_dir=${TOOL_TEMPORAL_CLI_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/commonagents-tool/temporal-cli-$VERSION}

build() {
  if [ -x "$cli_dir/temporal" ]; then echo "$cli_dir/temporal"; return; fi
  command -v go >/dev/null || die "go not found: the CLI is built from the Go module proxy"
  mkdir -p "$(dirname "$cli_dir")"
  local tmp
  tmp=$(mktemp -d "$cli_dir.partial.XXXXXX")
  log "building the Temporal CLI $VERSION into $cli_dir (several minutes, once)"
  local start=$SECONDS
  if ! GOBIN="$tmp" GOFLAGS=-mod=mod go install "github.com/temporalio/cli/cmd/temporal@$VERSION" >&2; then
    rm -rf "$tmp"; die "go install github.com/temporalio/cli/cmd/temporal@$VERSION failed"
  fi
  rm -rf "$cli_dir"
  mv "$tmp" "$cli_dir"
  log "built in $((SECONDS - start)) s"
  echo "$cli_dir/temporal"
}

# port_busy reports whether something accepts connections on 127.0.0.1:$1.
port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

start() {
  local out=${1:-} bin dir port tries pid
  bin=$(build)
  dir=$(mktemp -d /tmp/tool-temporal.XXXXXX)
  touch "$dir/.tool-temporal"
  for tries in $(seq 1 20); do
    port=$((20000 + RANDOM % 40000))
    if port_busy "$port" || port_busy $((port + 1)) || port_busy $((port + 2)); then port=""; continue; fi
    "$bin" server start-dev --headless --ip 127.0.0.1 --port "$port" --http-port $((port + 1)) \
      --metrics-port $((port + 2)) --log-level warn >"$dir/server.log" 2>&1 &
    pid=$!
    echo "$pid" >"$dir/pid"
    local i
    for i in $(seq 1 300); do # 30 s: the server is ready in under a second on an idle machine
      if "$bin" operator cluster health --address "127.0.0.1:$port" >/dev/null 2>&1; then break 2; fi
      if ! kill -0 "$pid" 2>/dev/null; then break; fi
      sleep 0.1
    done
    log "start on port $port failed (attempt $tries), retrying"
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    port=""
  done
  [ -n "$port" ] || { cat "$dir/server.log" >&2; rm -rf "$dir"; die "could not start the dev server"; }
  local lines
  lines="export TOOL_TEST_TEMPORAL_ADDR='127.0.0.1:$port'
export TOOL_TEST_TEMPORAL_DIR='$dir'
export TOOL_TEST_TEMPORAL_CLI='$bin'"
  if [ -n "$out" ]; then echo "$lines" >"$out"; else echo "$lines"; fi
  log "dev server running on 127.0.0.1:$port (pid $pid), log in $dir/server.log"
}

stop() {
  local dir=${1:-${TOOL_TEST_TEMPORAL_DIR:-}}
  [ -n "$dir" ] || die "stop: no directory given and TOOL_TEST_TEMPORAL_DIR is unset"
  [ -f "$dir/.tool-temporal" ] || die "stop: $dir was not made by this script"
  if [ -f "$dir/pid" ]; then
    local pid
    pid=$(cat "$dir/pid")
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
  fi
  rm -rf "$dir"
}

case "${1:-}" in
  build) build ;;
  start) start "${2:-}" ;;
  stop) stop "${2:-}" ;;
  *) die "usage: $0 build | start [FILE] | stop [DIR]" ;;
esac
