#!/usr/bin/env bash
# The Debian roots of the tests' container images: debootstrap (minbase) imported into
# podman, each only when missing. The one recipe for them: the suites call it when run alone,
# and tests/run starts it while cargo compiles (it needs nothing from the build), so the
# minutes of downloads and unpacking overlap the compile instead of adding to the run.
#   tests/images.sh base        localhost/debian:bookworm (BASE_IMAGE of tests/compose_stack.rs)
#   tests/images.sh agent-test  localhost/sanctum-agent-test (tests/sandbox_agent_profile.rs):
#                               the base plus git, with Node 24 at /opt/node
#   tests/images.sh stack       what compose_stack's images hold that needs no guard binary:
#                               the scout image whole, and the agent image's `runtime` stage
#                               (git, Node and OpenClaw), with the build arguments the suite
#                               uses, so its own build finds these layers made
#   tests/images.sh all         all three (agent-test beside base then stack)
set -euo pipefail
cd "$(dirname "$0")/.."
CACHE=${SANCTUM_TEST_CACHE:-$PWD/.cache}
NODE_DIR=${SANCTUM_NODE_DIR:-$CACHE/node}

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

# stack: the layers of the compose images that do not depend on the guard binary.
stack() {
  local ctx version
  "$0" base
  version=$(sed -n 's/^ARG OPENCLAW_VERSION=//p' docker/agent.Dockerfile)
  ctx=$(mktemp -d /tmp/sanctum-images-ctx.XXXXXX)
  root=$ctx
  trap 'rm -rf "$root"' EXIT
  mkdir -p "$ctx/.cache"
  cp .dockerignore "$ctx/"
  cp -a docker "$ctx/"
  for d in node "openclaw-$version"; do
    [ -d "$CACHE/$d" ] || { echo "$CACHE/$d missing: run tests/setup.sh" >&2; exit 1; }
    cp -al "$CACHE/$d" "$ctx/.cache/" 2>/dev/null || cp -a "$CACHE/$d" "$ctx/.cache/"
  done
  local args=(--build-arg BASE_IMAGE=localhost/debian:bookworm
    --build-arg GUARD_BIN=context --build-arg OPENCLAW_FROM=context)
  podman build -q "${args[@]}" -f docker/scout.Dockerfile -t sanctum/scout:local "$ctx" >/dev/null
  podman build -q "${args[@]}" -f docker/agent.Dockerfile --target runtime "$ctx" >/dev/null
}

case ${1:-} in
  base) import localhost/debian:bookworm ;;
  agent-test) import localhost/sanctum-agent-test --include=git ;;
  stack) stack ;;
  all)
    "$0" stack & b=$!
    "$0" agent-test & a=$!
    rc=0
    wait $b || rc=1
    wait $a || rc=1
    exit $rc
    ;;
  *) echo "usage: tests/images.sh base|agent-test|stack|all" >&2; exit 2 ;;
esac
