#!/usr/bin/env bash
# The Debian roots of the tests' container images: debootstrap (minbase) imported into
# podman, each only when missing. The one recipe for them: the suites call it when run alone,
# and tests/run starts it while cargo compiles (it needs nothing from the build), so the
# minutes of downloads and unpacking overlap the compile instead of adding to the run.
#   tests/images.sh base        localhost/debian:bookworm (BASE_IMAGE of tests/compose_stack.rs)
#   tests/images.sh agent-test  localhost/sanctum-agent-test (tests/sandbox_agent_profile.rs):
#                               the base plus git, with Node 24 at /opt/node
#   tests/images.sh all         both, side by side
set -euo pipefail
cd "$(dirname "$0")/.."
NODE_DIR=${SANCTUM_NODE_DIR:-${SANCTUM_TEST_CACHE:-$PWD/.cache}/node}

# import TAG [debootstrap options...]: a fresh root, debootstrapped and imported as TAG.
import() {
  local tag=$1
  shift
  if podman image exists "$tag"; then
    return 0
  fi
  root=$(mktemp -d /tmp/sanctum-rootfs.XXXXXX)
  trap 'rm -rf "$root"' EXIT
  debootstrap --variant=minbase "$@" bookworm "$root" >/dev/null
  if [ "$tag" = localhost/sanctum-agent-test ]; then
    [ -x "$NODE_DIR/bin/node" ] || { echo "Node 24 missing at $NODE_DIR: run tests/setup.sh" >&2; exit 1; }
    cp -a "$NODE_DIR" "$root/opt/node"
  fi
  tar -C "$root" -c . | podman import - "$tag" >/dev/null
}

case ${1:-} in
  base) import localhost/debian:bookworm ;;
  agent-test) import localhost/sanctum-agent-test --include=git ;;
  all)
    "$0" base & b=$!
    "$0" agent-test & a=$!
    rc=0
    wait $b || rc=1
    wait $a || rc=1
    exit $rc
    ;;
  *) echo "usage: tests/images.sh base|agent-test|all" >&2; exit 2 ;;
esac
