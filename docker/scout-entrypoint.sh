#!/bin/sh
# Chromium headless with DevTools on loopback 9223, relayed by socat on
# $SCOUT_DEVTOOLS_ADDR:9222 (the execution-net address only, not the Scout's way out);
# either process ending ends the container (compose restarts it).
set -eu
chromium --headless=new --no-sandbox --disable-gpu --disable-dev-shm-usage \
  --no-first-run --no-default-browser-check --user-data-dir=/tmp/scout-profile \
  --remote-debugging-address=127.0.0.1 --remote-debugging-port=9223 about:blank &
chrome=$!
socat "TCP-LISTEN:9222,bind=${SCOUT_DEVTOOLS_ADDR:?the execution-net address DevTools listens on},fork,reuseaddr" TCP:127.0.0.1:9223 &
relay=$!
trap 'kill $chrome $relay 2>/dev/null' TERM INT
while kill -0 $chrome 2>/dev/null && kill -0 $relay 2>/dev/null; do sleep 1; done
kill $chrome $relay 2>/dev/null || true
exit 1
