#!/usr/bin/env bash
# Builds the go-sdk's conformance everything-server (conformance/everything-server of the go-sdk module this module
# requires, from the module cache: no download) into a cache directory, and prints the binary's path. It is the
# upstream cmd/tool's gateway conformance test puts serve-mcp in front of. A build is reused while the go-sdk
# version matches. Sampling and elicitation need its stateful mode:
#
#   bin=$(bash scripts/mcp-everything-server.sh)
#   "$bin" -http 127.0.0.1:8080 -stateless=false
set -euo pipefail
cd "$(dirname "$0")/.."
pkg=github.com/modelcontextprotocol/go-sdk/conformance/everything-server
version=$(go list -m -f '{{.Version}}' github.com/modelcontextprotocol/go-sdk)
dir=${MCP_EVERYTHING_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/commonagents-tool/go-sdk-everything-server-$version}
bin=$dir/everything-server
if [[ ! -x $bin ]]; then
	mkdir -p "$dir"
	go build -o "$bin.$$" "$pkg" >&2
	mv "$bin.$$" "$bin"
fi
echo "$bin"
