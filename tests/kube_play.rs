//! The shipped Kubernetes manifests (`deploy/k8s`) brought up for real with `podman kube
//! play`: images built as the compose test builds them, every Pod played from the shipped files
//! (rendered for podman only where it lacks a Kubernetes feature: tests/support/kube_play.rs
//! says which), then checked from inside: each container's uid, no capabilities,
//! no_new_privs, a seccomp filter and a read-only root; the guard's posture check of the real
//! gateway passes and the guard is its paired approver; the Scout's DevTools answer the agent
//! at the address its config names; an agent turn with the scripted model
//! (behind the egress proxy's provider route, the key the proxy's alone) runs by itself; a
//! shell write waits as a card and runs once approved through the web API; and everything is
//! torn down (`podman kube down`, the volumes, the network). It holds /tmp/compose.lock (the
//! compose tests share images and addresses). `SANCTUM_SKIP_COMPOSE=1` skips it, saying so.
// Test code: a panic is the failure report, and tests may read their environment.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use sanctum_test_support as support;
use serde_json::{json, Value};
use std::time::{Duration, Instant};
use support::compose::{base_image, build_images, model_certificates, stage_context, MODEL_KEY};
use support::compose_turns::new_task;
use support::kube_play::*;
use support::process::{output_text, podman_lock, wait_until, wait_until_or};
use support::web::{Login, WebClient};

const MARKER: &str = "sanctum-kube-read-6e3a";
/// The agent's route to the scripted model: the egress proxy's Service name and route `fake`.
const MODEL_ROUTE: &str = "http://sanctum-egress:3128/providers/fake/v1";

fn skipped() -> bool {
    if std::env::var_os("SANCTUM_SKIP_COMPOSE").is_some() {
        eprintln!("kube_play: SKIPPED (SANCTUM_SKIP_COMPOSE is set)");
        return true;
    }
    false
}

/// The shipped ConfigMap with the test's model: OpenClaw's provider `fake` at the egress
/// route, the route in the policy, and the test CA the route trusts.
fn config_with_model(play: &Play) -> Value {
    let mut cm = shipped_docs("config.yaml", &["ConfigMap"]).remove(0);
    let mut oc: Value =
        serde_json::from_str(cm["data"]["openclaw.json"].as_str().unwrap()).unwrap();
    oc["agents"] = json!({"defaults":{"workspace":"/workspace","model":{"primary":"fake/fake-1"}}});
    oc["models"] = json!({"mode":"merge","providers":{"fake":{
        "baseUrl": MODEL_ROUTE, "api":"openai-completions",
        "apiKey": "held-by-the-egress-proxy",
        "models":[{"id":"fake-1","name":"Fake","reasoning":false,"input":["text"],
                   "contextWindow":128000,"maxTokens":4096}]}}});
    cm["data"]["openclaw.json"] = json!(oc.to_string());
    let model_dir = play.dir.path().join("model");
    let policy = format!(
        "{}\n[[egress.routes]]\nname = \"fake\"\nupstream = \"https://{MODEL_IP}:8080\"\n\
         key_file = \"/run/provider-keys/model-api-key\"\nca_file = \"/etc/sanctum/model-ca.pem\"\n\
         allow = [\"POST /v1/chat/completions\", \"GET /v1/models\"]\n",
        cm["data"]["policy.toml"].as_str().unwrap()
    );
    cm["data"]["policy.toml"] = json!(policy);
    cm["data"]["model-ca.pem"] =
        json!(std::fs::read_to_string(model_dir.join("model-ca.pem")).unwrap());
    cm
}

/// The scripted model as a Pod of the test's own (the provider the egress proxy reaches).
fn model_pod(play: &Play) -> Value {
    let dir = play.dir.path().join("model");
    json!({"apiVersion":"v1","kind":"Pod","metadata":{"name": format!("model-{}", play.id)},
      "spec":{"automountServiceAccountToken":false,"containers":[{"name":"model",
        "image":"sanctum/agent:local",
        "command":["node","/opt/model/scripted_model.mjs","8080","/tmp/model.jsonl"],
        "env":[{"name":"SCRIPTED_MODEL_HOST","value":"0.0.0.0"},
               {"name":"SCRIPTED_MODEL_KEY","value":MODEL_KEY},
               {"name":"SCRIPTED_MODEL_TLS_CERT","value":"/opt/model/model-cert.pem"},
               {"name":"SCRIPTED_MODEL_TLS_KEY","value":"/opt/model/model-cert-key.pem"}],
        "securityContext":{"runAsUser":1000,"runAsNonRoot":true,"readOnlyRootFilesystem":true,
          "allowPrivilegeEscalation":false,"capabilities":{"drop":["ALL"]}},
        "volumeMounts":[{"name":"model","mountPath":"/opt/model","readOnly":true},
                        {"name":"tmp","mountPath":"/tmp"}]}],
        "volumes":[{"name":"model","hostPath":{"path":dir,"type":"Directory"}},
                   {"name":"tmp","emptyDir":{}}]}})
}

/// Every tool result the scripted model was shown so far.
fn tool_results(play: &Play) -> String {
    let c = format!("model-{}-model", play.id);
    output_text(
        &std::process::Command::new("podman")
            .args(["exec", &c, "cat", "/tmp/model.jsonl"])
            .output()
            .unwrap(),
    )
}

/// `/proc/<pid>/status` of a container's first process, read on the host.
fn status_of(container: &str) -> String {
    let pid = std::process::Command::new("podman")
        .args(["inspect", "--format", "{{.State.Pid}}", container])
        .output()
        .unwrap();
    let pid = String::from_utf8_lossy(&pid.stdout).trim().to_owned();
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_else(|e| panic!("{container} ({pid}): {e}"))
}

fn field(status: &str, key: &str) -> String {
    status
        .lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix(':'))
        .unwrap_or_else(|| panic!("{key} missing:\n{status}"))
        .split_whitespace()
        .next()
        .unwrap_or_default()
        .to_owned()
}

/// Runs `f`; when it panics, prints every container's log and the egress audit first.
fn with_logs<T>(play: &Play, f: impl FnOnce() -> T) -> T {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_or_else(|e| {
        let egress = play
            .volume_path("sanctum-egress-state")
            .join("egress/egress-audit.jsonl");
        eprintln!(
            "egress audit:\n{}\n{}",
            std::fs::read_to_string(egress).unwrap_or_default(),
            play.logs()
        );
        std::panic::resume_unwind(e)
    })
}

#[test]
fn the_shipped_manifests_play_under_podman_and_run_an_approved_agent_turn() {
    if skipped() {
        return;
    }
    let waited = Instant::now();
    let _lock = podman_lock();
    eprintln!(
        "kube_play: podman lock taken after {:.0} s",
        waited.elapsed().as_secs_f64()
    );
    base_image();
    let mut play = Play::new();
    let t = Instant::now();
    build_images(&stage_context(play.dir.path()));
    eprintln!(
        "kube_play: images built in {:.0} s",
        t.elapsed().as_secs_f64()
    );

    // The Secrets the operator creates (README), as files of the test's own.
    let token = |n: u8| {
        format!(
            "{:064x}",
            u128::from(n) << 64 | u128::from(std::process::id())
        )
    };
    play.secret(
        "sanctum-tokens",
        &[("socket-token", &token(1)), ("gateway-token", &token(2))],
        0,
    );
    play.secret(
        "sanctum-model-key",
        &[("model-api-key", &format!("{MODEL_KEY}\n"))],
        10001,
    );
    let model_dir = play.dir.path().join("model");
    std::fs::create_dir_all(&model_dir).unwrap();
    std::fs::copy(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/js/scripted_model.mjs"),
        model_dir.join("scripted_model.mjs"),
    )
    .unwrap();
    model_certificates(&model_dir);
    let config = config_with_model(&play);
    let claims = |names: &[&str]| -> Vec<Value> {
        shipped_docs("storage.yaml", &["PersistentVolumeClaim"])
            .into_iter()
            .filter(|d| names.iter().any(|n| d["metadata"]["name"] == *n))
            .collect()
    };

    let up = Instant::now();
    let model = model_pod(&play);
    play.play("model", vec![model], MODEL_IP);
    let mut egress = vec![config.clone()];
    egress.extend(claims(&["sanctum-egress-state"]));
    for mut d in shipped_docs("egress.yaml", &["Deployment"]) {
        // The route's extra trust: the test CA, from the ConfigMap beside the policy.
        let spec = support::kube::pod_spec_mut(&mut d).unwrap();
        for v in spec["volumes"].as_array_mut().unwrap() {
            if v["name"] == "policy" {
                v["configMap"]["items"]
                    .as_array_mut()
                    .unwrap()
                    .push(json!({"key":"model-ca.pem","path":"model-ca.pem"}));
            }
        }
        egress.push(d);
    }
    play.play("egress", egress, EGRESS_IP);
    play.play(
        "scout",
        shipped_docs("scout.yaml", &["Deployment"]),
        SCOUT_IP,
    );
    let mut agent = vec![config];
    agent.extend(claims(&[
        "sanctum-guard-state",
        "sanctum-agent-home",
        "sanctum-workspace",
    ]));
    agent.extend(shipped_docs("agent.yaml", &["Deployment"]));
    play.play("agent", agent, AGENT_IP);
    let web = WebClient { port: 8484 };
    wait_until(
        "the guard's /readyz on 127.0.0.1:8484",
        Duration::from_secs(180),
        || {
            let ok = sanctum_guard::app::health::probe(
                "http://127.0.0.1:8484/readyz",
                Duration::from_secs(3),
            );
            (ok.ok() == Some(200)).then_some(())
        },
    );
    eprintln!(
        "kube_play: play -> guard ready in {:.1} s",
        up.elapsed().as_secs_f64()
    );

    // Each container as its securityContext says, read from its running process.
    for (deploy, container, uid) in [
        ("sanctum-agent", "guard", "10001"),
        ("sanctum-agent", "agent", "1000"),
        ("sanctum-egress", "egress", "10001"),
        ("sanctum-scout", "scout", "1001"),
    ] {
        let name = play.container(deploy, container);
        let status = wait_until(&format!("{name} running"), Duration::from_secs(120), || {
            let s = status_of(&name);
            (!s.is_empty()).then_some(s)
        });
        assert_eq!(field(&status, "Uid"), uid, "{name}");
        assert_eq!(field(&status, "CapEff"), "0000000000000000", "{name}");
        assert_eq!(field(&status, "NoNewPrivs"), "1", "{name}");
        assert_eq!(field(&status, "Seccomp"), "2", "{name}");
        let ro = std::process::Command::new("podman")
            .args([
                "inspect",
                "--format",
                "{{.HostConfig.ReadonlyRootfs}}",
                &name,
            ])
            .output()
            .unwrap();
        assert_eq!(String::from_utf8_lossy(&ro.stdout).trim(), "true", "{name}");
    }
    // The Scout's DevTools answer the agent at the address its OpenClaw config names.
    let devtools = output_text(&play.exec(
        "sanctum-agent",
        "agent",
        "node -e 'fetch(`http://${process.env.SANCTUM_SCOUT_SERVICE_HOST}:9222/json/version`).then(async r => console.log(r.status, await r.text())).catch(e => console.log(String(e)))'",
    ));
    assert!(
        devtools.starts_with("200") && devtools.contains("\"Browser\""),
        "{devtools}"
    );
    let root = output_text(&play.exec("sanctum-agent", "agent", "touch /etc/x 2>&1; echo rc=$?"));
    assert!(
        root.contains("Read-only file system") && root.contains("rc=1"),
        "{root}"
    );

    // The posture check of the real gateway in this layout passes; the guard is its approver.
    let state = play.volume_path("sanctum-guard-state");
    let read_json = |name: &str| -> Option<Value> {
        serde_json::from_str(&std::fs::read_to_string(state.join(name)).ok()?).ok()
    };
    let checked = wait_until(
        "the guard's posture check",
        Duration::from_secs(300),
        || read_json("gateway-posture.json").filter(|v| v["posture"]["state"] != "unchecked"),
    );
    assert_eq!(
        checked["posture"]["state"],
        "safe",
        "{checked}\n{}",
        play.logs()
    );
    assert_eq!(checked["enforced"], true, "{checked}");
    let approver = wait_until(
        "the guard paired as approver",
        Duration::from_secs(120),
        || read_json("gateway-approver.json").filter(|a| a["state"] == "paired"),
    );
    eprintln!(
        "kube_play: play -> posture safe, approver paired in {:.1} s",
        up.elapsed().as_secs_f64()
    );
    assert!(approver["deviceId"].is_string(), "{approver}");

    let link = std::fs::read_to_string(state.join("web-login-link")).expect("login link");
    let token = link.trim().rsplit_once("#t=").expect("token").1.to_owned();
    let login = Login::from_answer(&web.login_with(&token));
    let workspace = play.volume_path("sanctum-workspace");
    std::fs::write(workspace.join("readme.txt"), MARKER).unwrap();
    std::os::unix::fs::chown(workspace.join("readme.txt"), Some(1000), Some(1000)).unwrap();

    // An autonomous read runs by itself: its content reaches the model through the egress route.
    let t = Instant::now();
    new_task(&web, &login, "read", json!({"path":"readme.txt"}));
    with_logs(&play, || {
        wait_until(
            "the autonomous read at the model",
            Duration::from_secs(240),
            || tool_results(&play).contains(MARKER).then_some(()),
        )
    });
    eprintln!(
        "kube_play: New Task -> autonomous read at the model in {:.1} s",
        t.elapsed().as_secs_f64()
    );

    // A shell write waits as a card; approved through the web API, it runs.
    let t = Instant::now();
    new_task(
        &web,
        &login,
        "exec",
        json!({"command":"echo kube-wrote > from-shell.txt"}),
    );
    let card = wait_until_or(
        "the shell write's card",
        Duration::from_secs(240),
        || {
            web.pending(&login).into_iter().find(|e: &Value| {
                e["action"]["kind"] == "exec"
                    && e["action"]["argv"].to_string().contains("from-shell.txt")
            })
        },
        || {
            // What the guard decided meanwhile, what the model was sent back, and the pod.
            let audit = std::fs::read_to_string(state.join("audit.jsonl")).unwrap_or_default();
            let tail: Vec<&str> = audit.lines().rev().take(25).collect();
            let model: Vec<char> = tool_results(&play).chars().collect();
            let model: String = model[model.len().saturating_sub(4000)..].iter().collect();
            format!(
                "{}\n--- model requests (last 4000 bytes):\n{}\n--- guard audit (newest first):\n{}",
                play.logs(),
                model,
                tail.join("\n")
            )
        },
    );
    assert!(
        !workspace.join("from-shell.txt").exists(),
        "the write ran before approval"
    );
    let r = web.decide(
        &login,
        card["id"].as_str().unwrap(),
        json!({"decision":"allow-once","hash":card["requestHash"]}),
    );
    assert_eq!(r.status, 200, "{r:?}");
    wait_until("the approved shell write", Duration::from_secs(120), || {
        (std::fs::read_to_string(workspace.join("from-shell.txt")).ok()? == "kube-wrote\n")
            .then_some(())
    });
    eprintln!(
        "kube_play: New Task -> card -> approved write in {:.1} s",
        t.elapsed().as_secs_f64()
    );

    // The key is the egress proxy's alone: every model call went through its route with it,
    // and no environment of the agent's container holds it.
    assert!(
        !tool_results(&play).contains("unauthorized"),
        "a model call went without the key"
    );
    let egress_log = play
        .volume_path("sanctum-egress-state")
        .join("egress/egress-audit.jsonl");
    let log = std::fs::read_to_string(&egress_log).unwrap();
    assert!(log.contains("allowed by route fake"), "{log}");
    assert!(!log.contains(MODEL_KEY), "the key is in the egress log");
    let environ = output_text(&play.exec(
        "sanctum-agent",
        "agent",
        "cat /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n'",
    ));
    assert!(
        environ.contains("SANCTUM_READ_PROXY_UPSTREAM") && !environ.contains(MODEL_KEY),
        "{environ}"
    );

    // Torn down: no pod, volume or network of this run is left.
    let id = play.id.clone();
    drop(play);
    for kind in ["pod", "volume", "network"] {
        let out = std::process::Command::new("podman")
            .args([kind, "ls", "--format", "{{.Name}}"])
            .output()
            .unwrap();
        let left: Vec<String> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter(|n| n.contains(&id))
            .map(str::to_owned)
            .collect();
        assert!(left.is_empty(), "{kind}s left after kube down: {left:?}");
    }
}
