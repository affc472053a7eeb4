//! The Kubernetes manifests in `deploy/k8s` as the tests read them: every document of every
//! file the kustomization lists (PyYAML, installed by tests/setup.sh with the validator, turns
//! them into JSON), the offline schema check (PyPI `kubernetes-validate`, which ships the
//! Kubernetes API schemas), and the security policy every container is held to.

use super::process::output_text;
use super::tools::cache;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The Kubernetes releases whose API schemas the manifests are checked against: the oldest
/// the README names and the newest the validator ships.
pub const KUBERNETES: [&str; 2] = ["1.30.0", "1.37.0"];

/// Capabilities a root init container may add: exactly what chown and chmod of volumes need.
pub const INIT_CAPS: [&str; 4] = ["CHOWN", "FOWNER", "DAC_OVERRIDE", "FSETID"];

/// Kinds that hold a Pod template (or are one).
const WORKLOADS: [&str; 6] = [
    "Pod",
    "Deployment",
    "StatefulSet",
    "DaemonSet",
    "Job",
    "CronJob",
];

pub fn k8s_dir() -> PathBuf {
    super::process::repo_root().join("deploy/k8s")
}

/// Where tests/setup.sh installed kubernetes-validate and its PyYAML.
fn validator_dir() -> PathBuf {
    let d = cache().join("kubernetes-validate");
    assert!(
        d.join("bin/kubernetes-validate").is_file(),
        "{} missing: run tests/setup.sh",
        d.display()
    );
    d
}

fn python() -> Command {
    let mut c = Command::new("python3");
    c.env("PYTHONPATH", validator_dir());
    c
}

/// Every YAML document of `path` (empty documents dropped), as JSON.
pub fn yaml_docs(path: &Path) -> Vec<Value> {
    let out = python()
        .args([
            "-c",
            "import json,sys,yaml\n\
             print(json.dumps([d for d in yaml.safe_load_all(open(sys.argv[1])) if d is not None]))",
        ])
        .arg(path)
        .output()
        .expect("python3");
    assert!(
        out.status.success(),
        "{}: {}",
        path.display(),
        output_text(&out)
    );
    serde_json::from_slice(&out.stdout).expect("JSON from PyYAML")
}

/// The files `deploy/k8s/kustomization.yaml` lists, in its order.
pub fn resources() -> Vec<PathBuf> {
    let k = yaml_docs(&k8s_dir().join("kustomization.yaml"));
    k[0]["resources"]
        .as_array()
        .expect("kustomization resources")
        .iter()
        .map(|r| k8s_dir().join(r.as_str().expect("a file name")))
        .collect()
}

/// Every shipped document, with the file it came from.
pub fn shipped() -> Vec<(PathBuf, Value)> {
    resources()
        .into_iter()
        .flat_map(|f| yaml_docs(&f).into_iter().map(move |d| (f.clone(), d)))
        .collect()
}

/// Writes `docs` as a multi-document file (JSON is YAML).
pub fn write_docs(path: &Path, docs: &[Value]) {
    let text: Vec<String> = docs.iter().map(Value::to_string).collect();
    std::fs::write(path, text.join("\n---\n") + "\n").unwrap();
}

/// The schema check of `paths` against release `version`, strict (an unknown field is an
/// error): one run for all, since each run loads the schemas anew.
pub fn validate(paths: &[PathBuf], version: &str) -> Output {
    let dir = validator_dir();
    Command::new(dir.join("bin/kubernetes-validate"))
        .env("PYTHONPATH", &dir)
        .args(["--strict", "--no-warn", "-k", version])
        .args(paths)
        .output()
        .expect("kubernetes-validate")
}

/// The Pod spec a workload document runs (None for other kinds).
pub fn pod_spec(doc: &Value) -> Option<&Value> {
    match doc["kind"].as_str()? {
        "Pod" => Some(&doc["spec"]),
        "CronJob" => Some(&doc["spec"]["jobTemplate"]["spec"]["template"]["spec"]),
        k if WORKLOADS.contains(&k) => Some(&doc["spec"]["template"]["spec"]),
        _ => None,
    }
}

/// Mutable access to a workload's Pod spec (for the tests' broken copies and renders).
pub fn pod_spec_mut(doc: &mut Value) -> Option<&mut Value> {
    match doc["kind"].as_str()? {
        "Pod" => Some(&mut doc["spec"]),
        k if WORKLOADS.contains(&k) && k != "CronJob" => Some(&mut doc["spec"]["template"]["spec"]),
        _ => None,
    }
}

/// Each container of a Pod spec: (is an init container, the container).
pub fn containers(spec: &Value) -> Vec<(bool, &Value)> {
    let list = |key: &str| spec[key].as_array().cloned().unwrap_or_default().len();
    let mut out = Vec::new();
    for (key, init) in [("initContainers", true), ("containers", false)] {
        for i in 0..list(key) {
            out.push((init, &spec[key][i]));
        }
    }
    out
}

/// Every breach of the deployment's security policy in `docs`, one line each ("" when none):
/// each container non-root with its own uid (root only in an init container, with no more than
/// [`INIT_CAPS`]), read-only root, no privilege escalation, every capability dropped, a
/// seccomp profile, resource requests and limits; no API token, host namespace or host path in
/// any Pod; the guard's probes on `/healthz` and `/readyz`.
pub fn violations(docs: &[Value]) -> Vec<String> {
    let mut out = Vec::new();
    for doc in docs {
        let Some(spec) = pod_spec(doc) else { continue };
        let name = doc["metadata"]["name"].as_str().unwrap_or("?");
        let mut bad = |what: String| out.push(format!("{name}: {what}"));
        if spec["automountServiceAccountToken"] != false {
            bad("automountServiceAccountToken is not false".into());
        }
        for key in ["hostNetwork", "hostPID", "hostIPC"] {
            if spec[key] == true {
                bad(format!("{key} is true"));
            }
        }
        for v in spec["volumes"].as_array().into_iter().flatten() {
            if v.get("hostPath").is_some() {
                bad(format!("volume {} is a hostPath", v["name"]));
            }
        }
        let pod_seccomp = &spec["securityContext"]["seccompProfile"]["type"];
        for (init, c) in containers(spec) {
            let cname = c["name"].as_str().unwrap_or("?");
            let sc = &c["securityContext"];
            let mut bad = |what: &str| bad(format!("container {cname}: {what}"));
            if sc["readOnlyRootFilesystem"] != true {
                bad("readOnlyRootFilesystem is not true");
            }
            if sc["allowPrivilegeEscalation"] != false {
                bad("allowPrivilegeEscalation is not false");
            }
            if sc["privileged"] == true {
                bad("privileged");
            }
            let drops = sc["capabilities"]["drop"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            if !drops.iter().any(|d| d == "ALL") {
                bad("capabilities.drop lacks ALL");
            }
            let seccomp = match &sc["seccompProfile"]["type"] {
                Value::Null => pod_seccomp,
                t => t,
            };
            if seccomp != "RuntimeDefault" && seccomp != "Localhost" {
                bad("no RuntimeDefault or Localhost seccomp profile");
            }
            let Some(uid) = sc["runAsUser"].as_u64() else {
                bad("no runAsUser");
                continue;
            };
            let adds: Vec<&str> = sc["capabilities"]["add"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            if uid == 0 || sc["runAsNonRoot"] != true {
                if !init {
                    bad("runs as root (runAsNonRoot must be true, runAsUser not 0)");
                }
                if adds.iter().any(|a| !INIT_CAPS.contains(a)) {
                    bad("a root init container adds more than chown and chmod need");
                }
            } else if !adds.is_empty() {
                bad("a non-root container adds capabilities");
            }
            for (kind, res) in [
                ("requests", "cpu"),
                ("requests", "memory"),
                ("limits", "cpu"),
                ("limits", "memory"),
            ] {
                if c["resources"][kind][res].is_null() {
                    bad(&format!("no resources.{kind}.{res}"));
                }
            }
            if c["args"][0] == "serve" {
                for (probe, path) in [("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")]
                {
                    if c[probe]["httpGet"]["path"] != path {
                        bad(&format!("the guard's {probe} is not an httpGet of {path}"));
                    }
                }
            }
        }
    }
    out
}
