#!/bin/sh
# Installs what the end-to-end tests need, once: Debian packages (Chromium, ripgrep and the
# headers code-server's native modules build against) and code-server 4.100.3 (VS Code 1.100.3,
# the last release on Node 20) from npm, into vscode-client/.e2e/code-server (git-ignored).
# See /work/shared/TESTING-EDITORS.md for why each workaround is there.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
dest="$here/.e2e/code-server"
version=4.100.3
stamp="$dest/.installed-$version"

sudo=""
[ "$(id -u)" = 0 ] || sudo=sudo
missing=""
for pkg in build-essential python3 pkg-config libkrb5-dev ripgrep chromium; do
  dpkg -s "$pkg" >/dev/null 2>&1 || missing="$missing $pkg"
done
if [ -n "$missing" ]; then
  echo "e2e: apt-get install$missing"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq $missing >/dev/null
fi

[ -f "$stamp" ] && exit 0
echo "e2e: installing code-server $version into $dest (once; about a minute)"
rm -rf "$dest"
mkdir -p "$dest"
# @vscode/ripgrep's postinstall downloads rg from GitHub unless this tarball is in its cache.
tmp=${TMPDIR:-/tmp}
rgcache="$tmp/vscode-ripgrep-cache-1.15.11"
rgtar="$rgcache/ripgrep-v13.0.0-10-x86_64-unknown-linux-musl.tar.gz"
# It unpacks the tarball into its bin/ and expects bin/rg: rg goes at the tarball's top.
if ! tar -tzf "$rgtar" 2>/dev/null | grep -qx rg; then
  mkdir -p "$rgcache" "$dest/rg"
  cp /usr/bin/rg "$dest/rg/rg"
  tar -C "$dest/rg" -czf "$rgtar" rg
  rm -rf "$dest/rg"
fi
export npm_config_unsafe_perm=true npm_config_yes=true npm_config_nodedir=/usr
export npm_config_fund=false npm_config_audit=false npm_config_update_notifier=false
echo '{"name":"baton-e2e-code-server","private":true}' >"$dest/package.json"
(cd "$dest" && npm install --no-save --loglevel=error "code-server@$version" >/dev/null)
# npm 11 may skip dependencies' install scripts (it depends on how npm was started): then
# run code-server's by hand. It installs VS Code's own dependencies with npm and reads the
# user agent below; it ends by linking lib/vscode/node_modules.asar.
if [ ! -e "$dest/node_modules/code-server/lib/vscode/node_modules.asar" ]; then
  echo "e2e: running code-server's postinstall.sh"
  node_version=$(node -p 'process.versions.node')
  (cd "$dest/node_modules/code-server" &&
    npm_config_user_agent="npm/$(npm --version) node/v$node_version linux x64" sh ./postinstall.sh >"$dest/postinstall.log" 2>&1) || {
    cat "$dest/postinstall.log"
    exit 1
  }
fi
[ -x "$dest/node_modules/.bin/code-server" ]
touch "$stamp"
