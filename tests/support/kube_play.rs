//! The shipped Kubernetes manifests played by `podman kube play` (Podman 4.3, Debian's): each
//! Pod rendered for this machine from the files as shipped, on a podman network of its own,
//! with fixed addresses, and everything (pods, volumes, the network) removed on drop.
//!
//! What the render changes, and why (the shipped files stay as they are):
//! - Deployments and claims get a per-run suffix: podman names a Deployment's pod
//!   `<name>-pod-0` and makes a named volume per claim, both global on the machine.
//! - The Pod restart policy becomes `OnFailure`: podman applies a Pod's policy to its init
//!   containers too, and `Always` restarts a finished init container forever.
//! - Secret volumes become host directories the test fills: podman 4.3 reads a Secret volume
//!   from its own secret store (not from a Secret document) and crashes without `optional`.
//! - Services, NetworkPolicies, probes' timers and fsGroup do nothing under podman: Service
//!   names are given as `hostAliases` to the Pods' fixed addresses, the service-link variables
//!   (`SANCTUM_EGRESS_SERVICE_HOST`, `SANCTUM_SCOUT_SERVICE_HOST`) are set and written in, the guard's web port is published on
//!   127.0.0.1 (the Service's role), and files a Secret volume would give by group are the
//!   reader's own.

use super::kube::{pod_spec_mut, yaml_docs};
use super::process::output_text;
use serde_json::{json, Value};
use std::path::PathBuf;
use std::process::{Command, Output};

/// The test network's prefix: the model's address in it is compose's `MODEL_ADDR`, so the
/// model certificate the compose tests make serves here too.
pub const SUBNET: &str = "172.30.78";
/// Pod addresses: the egress proxy and the Scout stand in for their Services.
pub const EGRESS_IP: &str = "172.30.78.3";
pub const AGENT_IP: &str = "172.30.78.4";
pub const SCOUT_IP: &str = "172.30.78.5";
pub const MODEL_IP: &str = "172.30.78.10";
/// Names of everything a run makes start with this (a killed run's leftovers are found by it).
pub const PREFIX: &str = "skube";

fn podman(args: &[&str]) -> Output {
    Command::new("podman").args(args).output().expect("podman")
}

/// One played deployment: its rendered files (in play order), volumes and network.
pub struct Play {
    pub dir: tempfile::TempDir,
    pub id: String,
    pub network: String,
    played: Vec<PathBuf>,
    volumes: Vec<String>,
}

impl Play {
    /// A fresh network for this run, after removing what a killed earlier run left (the caller
    /// holds the podman lock, so anything under [`PREFIX`] is stale).
    pub fn new() -> Play {
        Self::remove_leftovers();
        let id = format!("{PREFIX}{}", std::process::id());
        let network = format!("{id}-net");
        let out = podman(&[
            "network",
            "create",
            "--subnet",
            &format!("{SUBNET}.0/24"),
            &network,
        ]);
        assert!(
            out.status.success(),
            "podman network create: {}",
            output_text(&out)
        );
        let dir = tempfile::Builder::new()
            .prefix("sanctum-kube")
            .tempdir()
            .unwrap();
        Play {
            dir,
            id,
            network,
            played: Vec::new(),
            volumes: Vec::new(),
        }
    }

    fn remove_leftovers() {
        for (kind, rm) in [("pod", "rm"), ("volume", "rm"), ("network", "rm")] {
            let listed = podman(&[kind, "ls", "--format", "{{.Name}}"]);
            for name in String::from_utf8_lossy(&listed.stdout)
                .lines()
                .filter(|n| n.contains(PREFIX))
            {
                let _ = podman(&[kind, rm, "-f", name]);
            }
        }
    }

    /// Renders `docs` (see the module doc) and plays them as one file at address `ip`.
    pub fn play(&mut self, name: &str, mut docs: Vec<Value>, ip: &str) {
        for d in docs.iter_mut() {
            self.render(d);
        }
        let file = self.dir.path().join(format!("{name}.yaml"));
        super::kube::write_docs(&file, &docs);
        let out = Command::new("timeout")
            .args([
                "300",
                "podman",
                "kube",
                "play",
                "--network",
                &self.network,
                "--ip",
                ip,
            ])
            .arg(&file)
            .output()
            .expect("podman kube play");
        self.played.push(file);
        assert!(
            out.status.success(),
            "podman kube play {name}: {}\nlisteners on the published ports:\n{}{}",
            output_text(&out),
            super::process::port_holders(8484),
            super::process::port_holders(18790)
        );
    }

    fn render(&mut self, doc: &mut Value) {
        let id = self.id.clone();
        match doc["kind"].as_str().unwrap_or("") {
            "PersistentVolumeClaim" => {
                let claim = format!("{}-{id}", doc["metadata"]["name"].as_str().unwrap());
                doc["metadata"]["name"] = json!(claim);
                self.volumes.push(claim);
            }
            "Deployment" => {
                let name = format!("{}-{id}", doc["metadata"]["name"].as_str().unwrap());
                doc["metadata"]["name"] = json!(name);
            }
            _ => {}
        }
        let dir = self.dir.path().to_owned();
        let Some(spec) = pod_spec_mut(doc) else {
            return;
        };
        spec["restartPolicy"] = json!("OnFailure");
        spec["hostAliases"] = json!([
            {"ip": EGRESS_IP, "hostnames": ["sanctum-egress"]},
            {"ip": SCOUT_IP, "hostnames": ["sanctum-scout"]},
        ]);
        for v in spec["volumes"].as_array_mut().into_iter().flatten() {
            if let Some(claim) = v["persistentVolumeClaim"]["claimName"].as_str() {
                v["persistentVolumeClaim"]["claimName"] = json!(format!("{claim}-{id}"));
            }
            if let Some(secret) = v["secret"]["secretName"].as_str().map(str::to_owned) {
                let path = dir.join("secrets").join(&secret);
                assert!(path.is_dir(), "the test made no files for Secret {secret}");
                *v = json!({"name": v["name"], "hostPath": {"path": path, "type": "Directory"}});
            }
        }
        for key in ["initContainers", "containers"] {
            for c in spec[key].as_array_mut().into_iter().flatten() {
                let image = c["image"].as_str().unwrap().to_owned();
                c["image"] = json!(format!("localhost/{image}"));
                // Kubernetes' service links, which podman does not make.
                let env = c.as_object_mut().unwrap().entry("env").or_insert(json!([]));
                for (name, ip) in [
                    ("SANCTUM_EGRESS_SERVICE_HOST", EGRESS_IP),
                    ("SANCTUM_SCOUT_SERVICE_HOST", SCOUT_IP),
                ] {
                    env.as_array_mut()
                        .unwrap()
                        .push(json!({"name": name, "value": ip}));
                }
                for e in c["env"].as_array_mut().into_iter().flatten() {
                    if let Some(v) = e["value"].as_str() {
                        e["value"] = json!(v.replace("$(SANCTUM_EGRESS_SERVICE_HOST)", EGRESS_IP));
                    }
                }
                for p in c["ports"].as_array_mut().into_iter().flatten() {
                    if p["name"] == "web" || p["name"] == "front" {
                        p["hostIP"] = json!("127.0.0.1");
                        p["hostPort"] = p["containerPort"].clone();
                    }
                }
            }
        }
    }

    /// A Secret's files as the test gives them (`name` -> host directory), each owned by
    /// `uid` with mode 0400: what the Secret's volume would give its reader.
    pub fn secret(&self, name: &str, files: &[(&str, &str)], uid: u32) {
        let d = self.dir.path().join("secrets").join(name);
        std::fs::create_dir_all(&d).unwrap();
        for (file, text) in files {
            let f = d.join(file);
            std::fs::write(&f, text).unwrap();
            std::os::unix::fs::chown(&f, Some(uid), Some(uid)).unwrap();
            std::fs::set_permissions(&f, std::os::unix::fs::PermissionsExt::from_mode(0o400))
                .unwrap();
        }
    }

    /// The container `container` of Deployment `deploy` as podman names it.
    pub fn container(&self, deploy: &str, container: &str) -> String {
        format!("{deploy}-{}-pod-0-{container}", self.id)
    }

    /// `podman exec` of a bash script in a container.
    pub fn exec(&self, deploy: &str, container: &str, script: &str) -> Output {
        podman(&[
            "exec",
            &self.container(deploy, container),
            "bash",
            "-c",
            script,
        ])
    }

    /// Where the volume of claim `claim` lies on the host.
    pub fn volume_path(&self, claim: &str) -> PathBuf {
        let out = podman(&[
            "volume",
            "inspect",
            "--format",
            "{{.Mountpoint}}",
            &format!("{claim}-{}", self.id),
        ]);
        assert!(out.status.success(), "{}", output_text(&out));
        PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
    }

    /// The last lines of every container's log, for failure messages.
    pub fn logs(&self) -> String {
        let mut all = String::new();
        let names = podman(&["ps", "-a", "--format", "{{.Names}}"]);
        for c in String::from_utf8_lossy(&names.stdout)
            .lines()
            .filter(|c| c.contains(&self.id))
        {
            let out = podman(&["logs", "--tail", "40", c]);
            all.push_str(&format!("==== {c}\n{}\n", output_text(&out)));
        }
        all
    }
}

impl Drop for Play {
    /// `podman kube down` of every played file, then its volumes and the network.
    fn drop(&mut self) {
        for f in self.played.iter().rev() {
            let out = Command::new("podman")
                .args(["kube", "down"])
                .arg(f)
                .output();
            if let Some(out) = out.ok().filter(|o| !o.status.success()) {
                eprintln!("podman kube down {}: {}", f.display(), output_text(&out));
            }
        }
        for v in &self.volumes {
            let _ = podman(&["volume", "rm", "-f", v]);
        }
        let _ = podman(&["network", "rm", "-f", &self.network]);
    }
}

/// The shipped documents of `file` (in deploy/k8s) whose kind is one of `kinds`.
pub fn shipped_docs(file: &str, kinds: &[&str]) -> Vec<Value> {
    yaml_docs(&super::kube::k8s_dir().join(file))
        .into_iter()
        .filter(|d| kinds.iter().any(|k| d["kind"] == *k))
        .collect()
}
