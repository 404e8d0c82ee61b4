#!/usr/bin/env bash
# Installs the official MCP TypeScript SDK client for the tests that drive it from Node (tests/console/test_ts_client.py,
# tests/events/test_ts_subscribe.py) into a cache folder outside the repository,
# ${SOCIALPUB_NODE_CACHE:-$HOME/.cache/socialpub-node}/ts_client, from tests/console/ts_client/package.json +
# package-lock.json (npm ci). Reused when present (a stamp records the files it was built from); the client scripts
# (*.mjs) are copied on every run. Needs node >= 20 (the SDK's `engines`; Debian's node 20 will do) and npm.
set -euo pipefail
src="$(cd "$(dirname "$0")/../../tests/console/ts_client" && pwd)"
dir="${SOCIALPUB_NODE_CACHE:-$HOME/.cache/socialpub-node}/ts_client"

command -v node >/dev/null && command -v npm >/dev/null || { echo "install.sh: node and npm are required" >&2; exit 3; }

mkdir -p "$dir"
cp "$src"/*.mjs "$dir/"  # cheap, so always current; imports resolve from $dir/node_modules
stamp="$(cat "$src/package.json" "$src/package-lock.json" | sha256sum | cut -d' ' -f1)"
if [ -f "$dir/.installed" ] && [ "$(cat "$dir/.installed")" = "$stamp" ] && [ -d "$dir/node_modules" ]; then
  echo "MCP TypeScript SDK: reusing $dir"
  exit 0
fi
rm -f "$dir/.installed"
cp "$src/package.json" "$src/package-lock.json" "$dir/"
(cd "$dir" && npm ci --no-audit --no-fund --loglevel=error)
echo "$stamp" > "$dir/.installed"
echo "MCP TypeScript SDK: installed in $dir"
