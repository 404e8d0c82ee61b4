#!/usr/bin/env bash
# Installs a local Bluesky PDS (+ PLC directory) for the tests into a cache folder outside the repository:
#   ${SOCIALPUB_PDS_DIR:-$HOME/.cache/socialpub-pds}
# Reused when present (a stamp records the package.json/package-lock.json it was built from). Needs node and npm
# of any version: the PDS needs Node 22, so Node 22 itself comes from npm's `node` package, whose headers let
# better-sqlite3 compile from source without downloading anything but npm packages.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
dir="${SOCIALPUB_PDS_DIR:-$HOME/.cache/socialpub-pds}"

command -v node >/dev/null && command -v npm >/dev/null || { echo "install.sh: node and npm are required" >&2; exit 3; }

stamp="$(cat "$here/package.json" "$here/package-lock.json" | sha256sum | cut -d' ' -f1)"
mkdir -p "$dir"
cp "$here/start.mjs" "$dir/start.mjs"  # cheap, so always current
if [ -f "$dir/.installed" ] && [ "$(cat "$dir/.installed")" = "$stamp" ] && [ -x "$dir/bin/node" ]; then
  echo "PDS: reusing $dir"
  exit 0
fi
rm -f "$dir/.installed"
started=$SECONDS

node_version="$(node -p "require('$here/package.json').config.node")"
case "$(uname -m)" in
  x86_64) arch=x64 ;;
  aarch64|arm64) arch=arm64 ;;
  *) echo "install.sh: unsupported machine $(uname -m)" >&2; exit 3 ;;
esac
echo "PDS: installing Node $node_version into $dir/node"
# A clean folder each time: a second `npm install` there prunes the platform package that node's own
# postinstall added, which leaves no binary.
rm -rf "$dir/node" && mkdir -p "$dir/node" "$dir/bin"
echo '{"private": true}' > "$dir/node/package.json"
(cd "$dir/node" && npm install --no-audit --no-fund --loglevel=error "node@$node_version")
node_home="$dir/node/node_modules/node/node_modules/node-linux-$arch"
[ -x "$node_home/bin/node" ] || { echo "install.sh: Node $node_version did not install at $node_home" >&2; exit 1; }
ln -sfn "$node_home/bin/node" "$dir/bin/node"

echo "PDS: installing @atproto/pds with Node $("$dir/bin/node" --version) (compiles SQLite; a few minutes)"
mkdir -p "$dir/pds"
cp "$here/package.json" "$here/package-lock.json" "$dir/pds/"
# npm and node-gyp run under Node 22 and build against its headers (nodedir), so nothing is downloaded from nodejs.org.
(cd "$dir/pds" && PATH="$node_home/bin:$PATH" npm_config_nodedir="$node_home" \
  npm ci --no-audit --no-fund --loglevel=error)
ln -sfn "$dir/pds/node_modules" "$dir/node_modules"  # start.mjs resolves its imports from $dir
echo "$stamp" > "$dir/.installed"
echo "PDS: installed in $((SECONDS - started)) s, $(du -sh "$dir" | cut -f1) in $dir"
