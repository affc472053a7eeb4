//! The compose deployment brought up for real (podman + the `docker-compose` Debian package)
//! and checked from inside: the agent container's confinement (capabilities, no_new_privs,
//! seccomp, read-only root, noexec tmp, no route out), who can reach whom on the three
//! networks, and the guard's web prompt published on 127.0.0.1 only; then real agent turns
//! (the scripted model as the provider, behind the egress proxy), each started from the web
//! API's New Task: an autonomous read runs, a `write` tool call and a shell write each wait as
//! a card and run once approved through the web API, a secret read never runs; the model key
//! is the egress proxy's alone: the model sees it on every call through the proxy's provider
//! route, and no environment or readable file of the agent's container holds it. Images are
//! built from a locally imported Debian base. `SANCTUM_SKIP_COMPOSE=1` skips it for quick local runs (it says
//! so); `tests/run` runs it.
// Test code: a panic is the failure report, and tests may read their environment.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use sanctum_test_support as support;
use serde_json::{json, Value};
use std::time::{Duration, Instant};
use support::compose::*;
use support::compose_turns::{autonomous_turn, fan_out_then_a_turn, new_task, tool_results};
use support::gateway::{open, WsClient};
use support::guard::audit_file_with;
use support::process::{output_text, wait_until, wait_until_or};
use support::web::{Login, WebClient};

const MARKER: &str = "sanctum-e2e-readme-4f1c";
const SECRET: &str = "sanctum-e2e-secret-9d2a";
/// A name only `ls` of the workspace can tell the model.
const LS_MARKER: &str = "ls-listed-7b2e.txt";

/// Defence in depth: the deployment's OpenClaw config takes away every tool the guard's
/// default policy blocks, so such a call is refused by OpenClaw before the plugin is asked.
#[test]
fn the_deployment_denies_every_tool_the_policy_blocks() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("compose/openclaw.json");
    let cfg: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let deny: Vec<&str> = cfg["tools"]["deny"]
        .as_array()
        .expect("tools.deny")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let missing: Vec<&str> = sanctum_guard::policy::tools::BLOCKED_TOOLS
        .iter()
        .map(|(name, _)| *name)
        .filter(|name| !deny.contains(name))
        .collect();
    assert_eq!(
        missing,
        Vec::<&str>::new(),
        "compose/openclaw.json tools.deny lacks these"
    );
}

/// The pending card `pick` accepts, approved allow-once through the web API.
fn approve(web: &WebClient, login: &Login, what: &str, pick: impl Fn(&Value) -> bool) {
    let e = wait_until(what, Duration::from_secs(240), || {
        web.pending(login).into_iter().find(|e| pick(e))
    });
    let r = web.decide(
        login,
        e["id"].as_str().expect("id"),
        json!({"decision":"allow-once","hash":e["requestHash"]}),
    );
    assert_eq!(r.status, 200, "{r:?}");
}

fn skipped() -> bool {
    if std::env::var_os("SANCTUM_SKIP_COMPOSE").is_some() {
        eprintln!("compose_stack: SKIPPED (SANCTUM_SKIP_COMPOSE is set)");
        return true;
    }
    false
}

/// `/proc/self/status` field of a process in the agent container.
fn status_field(status: &str, key: &str) -> String {
    status
        .lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix(':'))
        .unwrap_or_else(|| panic!("{key} missing from /proc/self/status:\n{status}"))
        .trim()
        .to_owned()
}

/// `service`'s address on the project's network `net` (empty when it has none).
fn address_on(stack: &Stack, service: &str, net: &str) -> String {
    let field = format!(
        "{{{{(index .NetworkSettings.Networks \"{}_{net}\").IPAddress}}}}",
        stack.project
    );
    stack.inspect(service, &field)
}

/// A TCP connect from `service`'s container, by bash's /dev/tcp (3 s at most).
fn connects(stack: &Stack, service: &str, host: &str, port: u16) -> bool {
    let script = format!("timeout 3 bash -c '</dev/tcp/{host}/{port}' 2>/dev/null && echo OPEN");
    output_text(&stack.exec(service, &script)).contains("OPEN")
}

fn get(url: &str) -> Option<u16> {
    sanctum_guard::app::health::probe(url, Duration::from_secs(3)).ok()
}

#[test]
fn the_stack_comes_up_confined_and_only_the_guard_is_published() {
    if skipped() {
        return;
    }
    let stack = Stack::new("sanctumtest").with_model(&openclaw_with_model());
    // Under the stack's lock: the tag is shared with the other podman suites.
    base_image();
    let t = Instant::now();
    build_images(&stack.context());
    eprintln!(
        "compose_stack: images built in {:.0} s",
        t.elapsed().as_secs_f64()
    );
    for (tag, _) in IMAGES {
        eprintln!(
            "compose_stack: image {tag} {:.1} MiB",
            image_size(tag) as f64 / 1048576.0
        );
    }

    let up = Instant::now();
    stack.up();
    wait_until(
        "the guard's /readyz on 127.0.0.1:8484",
        Duration::from_secs(180),
        || (get("http://127.0.0.1:8484/readyz") == Some(200)).then_some(()),
    );
    eprintln!(
        "compose_stack: up -> guard ready in {:.1} s",
        up.elapsed().as_secs_f64()
    );
    wait_until_or(
        "the agent container",
        Duration::from_secs(180),
        || (stack.inspect("agent", "{{.State.Running}}") == "true").then_some(()),
        || stack.why_not_running("agent"),
    );

    // The agent's own confinement, read from inside (never from the file alone).
    let status = output_text(&stack.exec("agent", "cat /proc/self/status"));
    assert_eq!(
        status_field(&status, "CapEff"),
        "0000000000000000",
        "{status}"
    );
    assert_eq!(status_field(&status, "NoNewPrivs"), "1");
    assert_eq!(status_field(&status, "Seccomp"), "2");
    assert_eq!(stack.exec("agent", "id -u").stdout, b"1000\n");
    let root = output_text(&stack.exec("agent", "touch /etc/x 2>&1; echo rc=$?"));
    assert!(
        root.contains("Read-only file system") && root.contains("rc=1"),
        "{root}"
    );
    let tmp = output_text(&stack.exec(
        "agent",
        "cp /usr/bin/true /tmp/t && /tmp/t 2>&1; echo rc=$?",
    ));
    assert!(
        tmp.contains("Permission denied") && tmp.contains("rc=126"),
        "{tmp}"
    );
    let setuid = output_text(&stack.exec(
        "agent",
        "find / -xdev -perm /6000 -type f 2>/dev/null | head -5",
    ));
    assert_eq!(setuid.trim(), "", "setuid/setgid files in the agent image");
    // No route out: no default route on any interface (read, not probed: nothing leaves).
    let routes = output_text(&stack.exec("agent", "cat /proc/net/route"));
    assert!(
        !routes
            .lines()
            .skip(1)
            .any(|l| l.split_whitespace().nth(1) == Some("00000000")),
        "the agent has a default route:\n{routes}"
    );
    assert!(
        !stack
            .exec(
                "agent",
                "test -e /var/run/docker.sock || test -e /run/podman/podman.sock"
            )
            .status
            .success(),
        "a container runtime socket is in the agent container"
    );

    // Who reaches whom: the Scout's DevTools from the agent; the guard's web prompt not from
    // the agent (it listens on the frontend address only).
    wait_until_or(
        "the Scout's DevTools from the agent",
        Duration::from_secs(120),
        || connects(&stack, "agent", "172.30.77.10", 9222).then_some(()),
        || {
            format!(
                "{}\n{}",
                stack.why_not_running("scout"),
                stack.why_not_running("agent")
            )
        },
    );
    assert!(
        !connects(&stack, "agent", "172.30.76.2", 8484),
        "the agent reached the guard's web prompt"
    );
    let guard_on_control = address_on(&stack, "guard", "control-net");
    assert_eq!(guard_on_control, "172.30.75.2");
    assert!(
        !connects(&stack, "agent", &guard_on_control, 8484),
        "the agent reached the guard's web port on control-net"
    );
    // The Scout browses through its own network (a default route there), which no other
    // service is on: from it, neither the guard (web prompt, front door) nor the gateway is
    // reachable, and its DevTools listen on the execution-net address only.
    let scout_routes = output_text(&stack.exec("scout", "cat /proc/net/route"));
    assert!(
        scout_routes
            .lines()
            .skip(1)
            .any(|l| l.split_whitespace().nth(1) == Some("00000000")),
        "the Scout has no way out:\n{scout_routes}"
    );
    for (addr, port) in [
        ("172.30.76.2", 8484),
        ("172.30.76.2", 18790),
        ("172.30.75.2", 8484),
        ("172.30.75.3", 3128),
    ] {
        assert!(
            !connects(&stack, "scout", addr, port),
            "the Scout reached {addr}:{port}"
        );
    }
    let scout_out = address_on(&stack, "scout", "scout-egress-net");
    assert!(
        !scout_out.is_empty(),
        "the Scout has no scout-egress-net address"
    );
    assert!(
        std::net::TcpStream::connect_timeout(
            &format!("{scout_out}:9222").parse().unwrap(),
            Duration::from_secs(3)
        )
        .is_err(),
        "DevTools answer on the Scout's way out ({scout_out})"
    );
    // The gateway listens on the agent's control-net address and loopback only: the Scout,
    // beside the agent on execution-net, reaches it on neither of the agent's addresses.
    let agent_on_execution = address_on(&stack, "agent", "execution-net");
    assert!(
        agent_on_execution.starts_with("172.30.77."),
        "{agent_on_execution}"
    );
    wait_until_or(
        "the gateway on its control-net address",
        Duration::from_secs(180),
        || connects(&stack, "agent", "172.30.75.4", 18789).then_some(()),
        || stack.why_not_running("agent"),
    );
    for addr in [agent_on_execution.as_str(), "172.30.75.4"] {
        assert!(
            !connects(&stack, "scout", addr, 18789),
            "the Scout reached the gateway on {addr}"
        );
    }
    for addr in ["172.30.76.2", guard_on_control.as_str()] {
        assert!(
            !connects(&stack, "agent", addr, 18790),
            "the agent reached the front door on {addr}"
        );
    }
    // The one way out: the egress proxy refuses a destination off its allow-list, and says
    // so in its own audit log. It refuses inside the tunnel (`--refuse-in-tunnel`): the
    // request sent through it is answered 403 with the reason.
    let refused = output_text(&stack.exec(
        "agent",
        "exec 3<>/dev/tcp/172.30.75.3/3128; printf 'CONNECT example.com:443 HTTP/1.1\\r\\n\\r\\nGET / HTTP/1.1\\r\\nHost: example.com\\r\\n\\r\\n' >&3; timeout 20 cat <&3",
    ));
    assert!(
        refused.starts_with("HTTP/1.1 200") && refused.contains("HTTP/1.1 403"),
        "{refused}"
    );
    assert!(refused.contains("example.com:443"), "{refused}");
    let egress_log = stack
        .volume_path("egress-state")
        .join("egress/egress-audit.jsonl");
    // In full, or counted: the gateway's own refused calls from the same address may have
    // opened this window already (the count is written when the window closes, 5 s on).
    let mut log = String::new();
    let until = Instant::now() + Duration::from_secs(20);
    while !log.lines().any(|l| {
        l.contains("example.com:443") && (l.contains("\"deny\"") || l.contains("\"aggregated\""))
    }) {
        assert!(
            Instant::now() < until,
            "no egress record of the refusal in {}:\n{log}",
            egress_log.display()
        );
        std::thread::sleep(Duration::from_millis(500));
        log = std::fs::read_to_string(&egress_log).unwrap_or_default();
    }
    // The guard is the gateway's approver, paired with no manual step (the device the
    // deployment provisioned), and its posture check on the real gateway in this layout finds
    // no way around it: exec host the guard's node, elevated off, the plugin active, chat
    // directives plain text, the gateway bound to its control-net address.
    let guard_state = stack.volume_path("guard-state");
    let read_json = |name: &str| -> Option<serde_json::Value> {
        serde_json::from_str(&std::fs::read_to_string(guard_state.join(name)).ok()?).ok()
    };
    let checked = wait_until_or(
        "the guard's posture check",
        Duration::from_secs(300),
        || read_json("gateway-posture.json").filter(|v| v["posture"]["state"] != "unchecked"),
        || {
            format!(
                "{}\n{}",
                stack.service_log("guard", 60),
                stack.why_not_running("agent")
            )
        },
    );
    assert_eq!(
        checked["posture"]["state"],
        "safe",
        "{checked}\n{}",
        stack.logs()
    );
    assert_eq!(checked["enforced"], true, "{checked}");
    let approver = read_json("gateway-approver.json").expect("approver status");
    assert_eq!(approver["state"], "paired", "{approver}");
    let provisioned = std::fs::read_to_string(stack.volume_path("secrets").join("guard-device-id"))
        .expect("provisioned guard device id");
    assert_eq!(approver["deviceId"], provisioned.trim(), "{approver}");
    let devices = output_text(&stack.exec(
        "agent",
        "OPENCLAW_GATEWAY_TOKEN=$(cat /run/secrets/gateway-token) openclaw devices list --json",
    ));
    // Paired: exactly the provisioned guard (operator) and the agent's own node host.
    let listed: serde_json::Value = serde_json::Deserializer::from_str(
        &devices[devices
            .find('{')
            .unwrap_or_else(|| panic!("no JSON: {devices}"))..],
    )
    .into_iter()
    .next()
    .and_then(Result::ok)
    .unwrap_or_else(|| panic!("no JSON: {devices}"));
    let node_id = output_text(&stack.exec(
        "agent",
        "node -e 'console.log(JSON.parse(require(\"fs\").readFileSync(\"/home/node/.sanctum-node/node/device-identity.json\")).deviceId)'",
    ));
    let mut paired: Vec<(String, String)> = listed["paired"]
        .as_array()
        .unwrap_or_else(|| panic!("{listed}"))
        .iter()
        .map(|d| {
            (
                d["role"].as_str().unwrap_or("?").to_owned(),
                d["deviceId"].as_str().unwrap_or("?").to_owned(),
            )
        })
        .collect();
    paired.sort();
    assert_eq!(
        paired,
        vec![
            ("node".to_owned(), node_id.trim().to_owned()),
            ("operator".to_owned(), provisioned.trim().to_owned()),
        ],
        "{listed}"
    );
    assert_eq!(listed["pending"], serde_json::json!([]), "{listed}");

    // Real agent turns, each a New Task on the web API (the guard's own gateway connection).
    let web = WebClient { port: 8484 };
    let link = std::fs::read_to_string(guard_state.join("web-login-link")).expect("login link");
    let token = link.trim().rsplit_once("#t=").expect("token").1.to_owned();
    let login = Login::from_answer(&web.login_with(&token));
    let workspace = stack.volume_path("workspace");
    std::fs::write(workspace.join("readme.txt"), MARKER).unwrap();
    let home = stack.volume_path("agent-state");
    std::fs::create_dir_all(home.join(".ssh")).unwrap();
    std::fs::write(home.join(".ssh/id_rsa"), SECRET).unwrap();
    let _ = std::process::Command::new("chown")
        .args(["-R", "1000:1000"])
        .arg(home.join(".ssh"))
        .arg(workspace.join("readme.txt"))
        .status();
    // The provider route answers from the agent's container, with no key sent: the proxy
    // adds it (the scripted model answers 401 without it) and speaks TLS to the model.
    let probe = output_text(&stack.exec(
        "agent",
        "exec 3<>/dev/tcp/172.30.75.3/3128; printf 'GET /providers/fake/v1/models HTTP/1.1\\r\\nHost: egress\\r\\nConnection: close\\r\\n\\r\\n' >&3; cat <&3",
    ));
    assert!(
        probe.starts_with("HTTP/1.1 200") && probe.contains("fake-1"),
        "the route from the agent: {probe}\n{}",
        stack.logs()
    );
    // An autonomous read (the `read` tool, asked by the plugin) runs by itself: its content
    // reaches the model.
    let secs = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        autonomous_turn(
            &stack,
            &web,
            &login,
            "the autonomous read's output at the model",
            ("read", json!({"path":"readme.txt"})),
            MARKER,
        )
    }))
    .unwrap_or_else(|e| {
        eprintln!(
            "egress log:\n{}\nmodel log:\n{}\n{}",
            std::fs::read_to_string(&egress_log).unwrap_or_default(),
            tool_results(&stack),
            stack.logs()
        );
        std::panic::resume_unwind(e)
    });
    eprintln!("compose_stack: New Task -> autonomous read at the model in {secs:.1} s");
    // A shell read through the node runs by itself too: the guard judges it with the agent
    // image's programs (the snapshot `init` took), not with its own container's, which has none.
    std::fs::write(workspace.join(LS_MARKER), "").unwrap();
    let secs = autonomous_turn(
        &stack,
        &web,
        &login,
        "the autonomous shell read's output at the model",
        ("exec", json!({"command":"ls"})),
        LS_MARKER,
    );
    eprintln!("compose_stack: New Task -> autonomous shell ls at the model in {secs:.1} s");
    // A `write` tool call (asked by the plugin) waits as a card; approved, its file appears.
    new_task(
        &web,
        &login,
        "write",
        json!({"path":"from-tool.txt","content":"tool-wrote\n"}),
    );
    approve(&web, &login, "the write tool call's card", |e| {
        e["action"]["kind"] == "tool" && e["action"]["name"] == "write"
    });
    wait_until("the approved tool write", Duration::from_secs(120), || {
        (std::fs::read_to_string(workspace.join("from-tool.txt")).ok()? == "tool-wrote\n")
            .then_some(())
    });
    // A shell write (the node host's system.run) waits as a card; approved, it runs.
    new_task(
        &web,
        &login,
        "exec",
        json!({"command":"echo shell-wrote > from-shell.txt"}),
    );
    approve(&web, &login, "the shell write's card", |e| {
        e["action"]["kind"] == "exec" && e["action"]["argv"].to_string().contains("from-shell.txt")
    });
    wait_until("the approved shell write", Duration::from_secs(120), || {
        (std::fs::read_to_string(workspace.join("from-shell.txt")).ok()? == "shell-wrote\n")
            .then_some(())
    });
    // A secret read never runs: denied at once, nothing of it reaches the model.
    new_task(&web, &login, "read", json!({"path":"~/.ssh/id_rsa"}));
    wait_until(
        "the secret read's deny at the model",
        Duration::from_secs(240),
        || {
            tool_results(&stack)
                .contains("blocked by sanctum-guard (sensitive-path)")
                .then_some(())
        },
    );
    assert!(
        !tool_results(&stack).contains(SECRET),
        "the secret reached the model"
    );
    // The model key is the egress proxy's alone: every turn above reached the model through
    // its route `fake` (the scripted model answers 401 without the key in its Authorization
    // header), and neither an environment nor any file of the agent's container holds it.
    assert!(
        !tool_results(&stack).contains("unauthorized"),
        "a model call went without the key"
    );
    let egress_log = std::fs::read_to_string(&egress_log).unwrap();
    assert!(
        egress_log.contains("allowed by route fake"),
        "no model call through the route:\n{egress_log}"
    );
    assert!(
        !egress_log.contains(MODEL_KEY),
        "the key is in the egress log"
    );
    // The egress service holds its own copy of the socket token, never the gateway token.
    let egress_mounts = stack.inspect("egress", "{{range .Mounts}}{{.Destination}} {{end}}");
    assert!(
        egress_mounts.contains("/var/lib/sanctum") && !egress_mounts.contains("/run/secrets "),
        "the egress service mounts the secrets volume: {egress_mounts}"
    );
    assert_no_model_key_in_agent(&stack);
    let audit = std::fs::read_to_string(guard_state.join("audit.jsonl")).unwrap();
    assert!(!audit.contains(SECRET), "the secret is in the audit log");
    assert!(
        !audit.contains(MODEL_KEY),
        "the model key is in the audit log"
    );
    assert!(
        web.pending(&login).is_empty(),
        "nothing left waiting: {:?}",
        web.pending(&login)
    );
    // A fan-out that takes every process the judge lets run by itself leaves room for the
    // agent: a turn made while it is live still runs.
    fan_out_then_a_turn(
        &stack,
        &web,
        &login,
        &workspace,
        &guard_state.join("audit.jsonl"),
    );

    // A person's client reaches the gateway through the front door only: a door link from the
    // guard's CLI, the gateway token, and a device of its own that a person pairs once (the
    // gateway sees the door's address: a remote device). An allowed method reaches the
    // gateway; a refused one gets the door's FORBIDDEN, audited with the link's name.
    let issued = std::process::Command::new("podman")
        .args([
            "exec",
            &stack.container("guard"),
            "sanctum-guard",
            "front",
            "link",
        ])
        .args(["--name", "e2e-ide", "--state-dir", "/var/lib/sanctum"])
        .output()
        .unwrap();
    let door_path = output_text(&issued)
        .lines()
        .find_map(|l| {
            l.trim()
                .strip_prefix("/door/")
                .map(|s| format!("/door/{s}"))
        })
        .unwrap_or_else(|| panic!("no door link: {}", output_text(&issued)));
    let door = format!("ws://127.0.0.1:18790{door_path}");
    let gw_token = std::fs::read_to_string(stack.volume_path("secrets").join("gateway-token"))
        .unwrap()
        .trim()
        .to_owned();
    let seed = [0x5a; 32];
    let (_first, hello) = WsClient::operator_as(&door, &[], &gw_token, seed);
    assert_eq!(hello["error"]["code"], "NOT_PAIRED", "{hello}");
    let request = hello["error"]["details"]["requestId"]
        .as_str()
        .unwrap_or_else(|| panic!("no pairing request: {hello}"))
        .to_owned();
    let approved = stack.exec(
        "agent",
        &format!(
            "OPENCLAW_GATEWAY_TOKEN=$(cat /run/secrets/gateway-token) openclaw devices approve {request}"
        ),
    );
    assert!(approved.status.success(), "{}", output_text(&approved));
    let (mut ide, hello) = WsClient::operator_as(&door, &[], &gw_token, seed);
    assert_eq!(hello["ok"], true, "{hello}");
    assert_eq!(ide.call("sessions.list", json!({}))["ok"], true);
    let refused = ide.call("config.get", json!({}));
    assert_eq!(refused["error"]["code"], "FORBIDDEN", "{refused}");
    audit_file_with(
        &guard_state.join("audit.jsonl"),
        &["front-refusal", "e2e-ide", "config.get"],
    );
    assert!(
        open("ws://127.0.0.1:18790/door/not-a-link").is_err(),
        "the door let a client in without a link"
    );

    // Published on loopback only.
    let ports = stack.inspect("guard", "{{json .HostConfig.PortBindings}}");
    assert!(ports.contains("\"HostIp\":\"127.0.0.1\""), "{ports}");
    assert!(!stack
        .inspect("agent", "{{json .HostConfig.PortBindings}}")
        .contains("HostPort"));

    // Idle resident memory of each container, for the record.
    let stats = std::process::Command::new("podman")
        .args([
            "stats",
            "--no-stream",
            "--format",
            "{{.Name}} {{.MemUsage}}",
        ])
        .output()
        .unwrap();
    for line in String::from_utf8_lossy(&stats.stdout).lines() {
        eprintln!("compose_stack: memory {line}");
    }
}
