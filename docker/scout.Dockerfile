# The Scout: Debian's headless Chromium, reachable only on the execution network (compose).
# Chromium binds its DevTools port to loopback; socat (the only other program started) exposes
# it on the container's execution-network address, where only the agent is.
ARG BASE_IMAGE=debian:bookworm-slim
FROM ${BASE_IMAGE}
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium socat fonts-dejavu-core \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --uid 1001 --create-home --shell /usr/sbin/nologin scout \
 && find / -xdev -perm /6000 -type f -exec chmod a-s {} + 2>/dev/null || true
COPY docker/scout-entrypoint.sh /usr/local/bin/scout-entrypoint
USER 1001:1001
EXPOSE 9222
ENTRYPOINT ["/usr/local/bin/scout-entrypoint"]
