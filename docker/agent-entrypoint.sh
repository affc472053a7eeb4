#!/bin/bash
# The agent container's two processes: OpenClaw's gateway (the agent) and `sanctum-guard node`
# (its exec host, asking the guard over the shared socket). Either ending ends the container.
# The node's command surface is approved here for the node's own device id only: no other
# device can become the exec host.
set -euo pipefail
: "${OPENCLAW_STATE_DIR:=/home/node/.openclaw}"
: "${SANCTUM_GATEWAY_PORT:=18789}"
: "${SANCTUM_NODE_STATE:=/home/node/.sanctum-node}"
: "${SANCTUM_SOCKET:=/run/sanctum/exec-approvals.sock}"
: "${SANCTUM_WORKSPACE:=/workspace}"
gw_token_file=/run/secrets/gateway-token
socket_token_file=/run/secrets/socket-token

log() { echo "agent-entrypoint: $*" >&2; }

# `init-secrets`: the compose `init` service (root with CHOWN, FOWNER, DAC_OVERRIDE and FSETID
# (keeps the setgid bit it sets on a directory of another group) only, no
# network, run once before anything else starts). Makes the
# `secrets` volume 0750 node:10001 (the agent's user, the guard's group) and creates each
# shared secret once (32 random bytes, hex), mode 0440; never overwrites one. Then provisions
# the guard's approver device in the guard's own volume (0700, uid 10001, key 0600; the agent
# never sees it) and publishes its public device id as `guard-device-id`: the one operator
# device the gateway below approves; and records this image's PATH directories for the guard
# (`agent_filesystem` in guard.toml). Last, gives the workspace volume to the agent's user and
# sets the approvals socket directory's owner and mode.
if [ "${1:-}" = init-secrets ]; then
  umask 0277
  d=/run/secrets
  chmod 0750 "$d" && chown 1000:10001 "$d"
  for name in gateway-token socket-token; do
    f=$d/$name
    [ -s "$f" ] && continue
    tmp=$(mktemp "$d/.$name.XXXXXX")
    od -An -tx1 -N32 /dev/urandom | tr -d ' \n' > "$tmp"
    chmod 0440 "$tmp" && chown 1000:10001 "$tmp" && mv "$tmp" "$f"
    log "created $f"
  done
  # The egress proxy's own copy of the socket token, in its own volume: it is given nothing
  # else of `secrets` (which also holds the gateway token). Replaced at every start.
  e=/run/egress-state
  if [ -d "$e" ]; then
    chown 10001:10001 "$e" && chmod 0700 "$e"
    tmp=$(mktemp "$e/.socket-token.XXXXXX")
    cat "$d/socket-token" > "$tmp" && chown 10001:10001 "$tmp" && chmod 0400 "$tmp" \
      && mv -f "$tmp" "$e/socket-token"
    log "socket token copied for the egress proxy"
  fi
  # The model key is the egress service's alone (its provider route adds it); a copy an
  # earlier version of this script left here is removed.
  rm -f "$d/model-api-key"
  g=/var/lib/sanctum
  key=$g/gateway/device-identity.json
  if [ ! -s "$key" ]; then
    # The guard refuses a state dir another uid owns: create as root, then hand it over.
    chown 0:0 "$g" && chmod 0700 "$g"
    (umask 077 && sanctum-guard approver-id --state-dir "$g" >/dev/null)
  fi
  # What the guard judges the node's commands with: this image's PATH directories (its root
  # is read-only at run time, so they stay as recorded). Retaken at every start, so an
  # upgraded image is never judged by an old snapshot.
  sanctum-guard fs-snapshot --out "$g/agent-fs.json" /usr/local/bin /usr/bin /bin >&2
  chown -R 10001:10001 "$g" && chmod 0700 "$g"
  id=$(node -e 'console.log(JSON.parse(require("fs").readFileSync(process.argv[1])).deviceId)' "$key")
  printf '%s\n' "$id" > "$d/.guard-device-id" && chmod 0440 "$d/.guard-device-id" \
    && chown 1000:10001 "$d/.guard-device-id" && mv "$d/.guard-device-id" "$d/guard-device-id"
  log "guard approver device $id"
  # The workspace volume belongs to the agent (the guard mounts it read-only; whichever
  # container mounts a new volume first would otherwise decide its owner).
  chown 1000:1000 /workspace && chmod 0755 /workspace
  # The approvals socket's directory: the guard's, group sanctum-socket (10002, which only the
  # agent container is given), setgid so the socket the guard creates there gets that group.
  # (A volume's first mount does not keep the image directory's mode.)
  chown 10001:10002 /run/sanctum && chmod 2750 /run/sanctum
  exit 0
fi

mkdir -p "$OPENCLAW_STATE_DIR" "$SANCTUM_NODE_STATE"
chmod 0700 "$OPENCLAW_STATE_DIR" "$SANCTUM_NODE_STATE"
# The deployment's OpenClaw config (read-only mount) is the config; OpenClaw keeps its own
# state next to it.
install -m 0600 /etc/sanctum/openclaw.json "$OPENCLAW_STATE_DIR/openclaw.json"
# The Sanctum plugin (every tool call but exec asks the guard), from the image.
openclaw plugins install --link --force --accept-capabilities /opt/sanctum-plugin >&2

OPENCLAW_GATEWAY_TOKEN=$(cat "$gw_token_file")
export OPENCLAW_GATEWAY_TOKEN
# Bound as the config says (custom: the control-net address, plus loopback); no --bind flag,
# which would override the config where the guard's posture check cannot see it.
openclaw gateway run --auth token --port "$SANCTUM_GATEWAY_PORT" &
gateway=$!
unset OPENCLAW_GATEWAY_TOKEN

for _ in $(seq 1 600); do
  if (exec 3<>"/dev/tcp/127.0.0.1/$SANCTUM_GATEWAY_PORT") 2>/dev/null; then break; fi
  kill -0 "$gateway" 2>/dev/null || { log "gateway exited during start"; exit 1; }
  sleep 0.5
done

# Autonomous HTTP reads go through the node's read proxy and on through egress (its
# allow-list applies too): the container has no other way out.
sanctum-guard node --gateway-url "ws://127.0.0.1:$SANCTUM_GATEWAY_PORT" \
  --token-file "$gw_token_file" --decider "$SANCTUM_SOCKET" \
  --decider-token-file "$socket_token_file" --state-dir "$SANCTUM_NODE_STATE" \
  --workspace "$SANCTUM_WORKSPACE" --deny-read /run/secrets --name sanctum-node \
  --read-proxy-upstream "${SANCTUM_READ_PROXY_UPSTREAM:-172.30.75.3:3128}" &
node=$!

# approve_pending KIND ID: approves, once, the pending pairing request of exactly the device
# ID (KIND `nodes`: a node's command surface; `devices`: an operator device) and nothing else.
approve_pending() {
  local kind=$1 id=$2 listing=pending
  [ "$kind" = devices ] && listing=list
  export OPENCLAW_GATEWAY_TOKEN; OPENCLAW_GATEWAY_TOKEN=$(cat "$gw_token_file")
  for _ in $(seq 1 600); do
    req=$(openclaw "$kind" "$listing" --json 2>/dev/null | node -e '
      let d="";process.stdin.on("data",c=>d+=c).on("end",()=>{
        const at=d.search(/[\[{]/); if(at<0) return;
        let v; try { v=JSON.parse(d.slice(at)); } catch { return; }
        const list=Array.isArray(v)?v:(v.pending||[]);
        const p=list.find(p=>(p.nodeId??p.deviceId)===process.argv[1]); if(p) console.log(p.requestId);
      })' "$id" || true)
    if [ -n "$req" ]; then
      openclaw "$kind" approve "$req" >/dev/null && { log "$kind: $id approved"; return 0; }
    fi
    sleep 1
  done
  log "$kind: $id was never seen pending; it stays unapproved"
}

# The node's command surface, for its own device id only.
(
  id_file="$SANCTUM_NODE_STATE/node/device-identity.json"
  for _ in $(seq 1 600); do [ -s "$id_file" ] && break; sleep 0.5; done
  approve_pending nodes "$(node -e 'console.log(JSON.parse(require("fs").readFileSync(process.argv[1])).deviceId)' "$id_file")"
) &
# The guard's approver device, the one the deployment provisioned.
approve_pending devices "$(cat /run/secrets/guard-device-id)" &

trap 'kill "$gateway" "$node" 2>/dev/null' TERM INT
wait -n "$gateway" "$node" || true
log "a process ended; stopping the container"
kill "$gateway" "$node" 2>/dev/null || true
wait || true
exit 1
