//! The Kubernetes manifests (`deploy/k8s`) checked offline: every document the kustomization
//! lists validates against the Kubernetes API schemas (strict: an unknown or misplaced field is
//! an error), and deliberately broken copies are rejected, so the check is known to bite; every
//! container meets the security policy (non-root with its uid, read-only root, no privilege
//! escalation, all capabilities dropped, a seccomp profile, requests and limits, the guard's
//! probes), and copies that drop one of those fail it; the network policies deny by default and
//! let the agent's Pod reach only the egress proxy, the Scout and DNS; the model key is mounted
//! into the egress container alone.
// Test code: a panic is the failure report.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use sanctum_test_support as support;
use serde_json::{json, Value};
use support::kube::*;
use support::process::output_text;

fn docs() -> Vec<Value> {
    shipped().into_iter().map(|(_, d)| d).collect()
}

/// The document of `kind` named `name`.
fn find<'a>(docs: &'a mut [Value], kind: &str, name: &str) -> &'a mut Value {
    docs.iter_mut()
        .find(|d| d["kind"] == kind && d["metadata"]["name"] == name)
        .unwrap_or_else(|| panic!("no {kind} {name}"))
}

/// Container `name` of Deployment `deploy` (init containers included).
fn container<'a>(docs: &'a mut [Value], deploy: &str, name: &str) -> &'a mut Value {
    let spec = pod_spec_mut(find(docs, "Deployment", deploy)).unwrap();
    for key in ["initContainers", "containers"] {
        if let Some(i) = spec[key]
            .as_array()
            .and_then(|l| l.iter().position(|c| c["name"] == name))
        {
            return &mut spec[key][i];
        }
    }
    panic!("no container {name} in {deploy}")
}

#[test]
fn the_kustomization_lists_every_manifest_in_the_folder() {
    let mut listed: Vec<_> = resources();
    listed.sort();
    let mut present: Vec<_> = std::fs::read_dir(k8s_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.extension().is_some_and(|x| x == "yaml") && !p.ends_with("kustomization.yaml")
        })
        .collect();
    present.sort();
    assert_eq!(listed, present, "kubectl apply -k would leave a file out");
}

#[test]
fn every_shipped_manifest_validates_against_the_kubernetes_schemas() {
    let files = resources();
    assert!(files.len() >= 5, "{files:?}");
    for version in KUBERNETES {
        let out = validate(&files, version);
        assert!(
            out.status.success(),
            "against {version}:\n{}",
            output_text(&out)
        );
        let passed = output_text(&out).matches(" passed for resource ").count();
        assert_eq!(passed, docs().len(), "{}", output_text(&out));
    }
    let kinds: Vec<String> = docs()
        .iter()
        .map(|d| d["kind"].as_str().unwrap().to_owned())
        .collect();
    for kind in [
        "ConfigMap",
        "Deployment",
        "Service",
        "NetworkPolicy",
        "PersistentVolumeClaim",
    ] {
        assert!(kinds.iter().any(|k| k == kind), "no {kind} in {kinds:?}");
    }
}

type Break = fn(&mut Vec<Value>);

/// Broken copies the schema check must reject: each is a mistake a hand edit makes.
const SCHEMA_BREAKS: [(&str, Break); 7] = [
    ("a boolean written as a string", |d| {
        container(d, "sanctum-agent", "guard")["securityContext"]["readOnlyRootFilesystem"] =
            json!("yes")
    }),
    ("a misspelt field", |d| {
        let sc = &mut container(d, "sanctum-agent", "agent")["securityContext"];
        let uid = sc.as_object_mut().unwrap().remove("runAsUser").unwrap();
        sc["runAsUsr"] = uid;
    }),
    ("a field one level too high", |d| {
        container(d, "sanctum-egress", "egress")["readOnlyRootFilesystem"] = json!(true)
    }),
    ("a container without a name", |d| {
        container(d, "sanctum-scout", "scout")
            .as_object_mut()
            .unwrap()
            .remove("name");
    }),
    ("a Deployment without a selector", |d| {
        find(d, "Deployment", "sanctum-agent")["spec"]
            .as_object_mut()
            .unwrap()
            .remove("selector");
    }),
    ("a port that is not a number", |d| {
        find(d, "Service", "sanctum-egress")["spec"]["ports"][0]["port"] = json!("http")
    }),
    ("a NetworkPolicy with policy types as one string", |d| {
        find(d, "NetworkPolicy", "sanctum-default-deny")["spec"]["policyTypes"] =
            json!("Ingress,Egress")
    }),
];

#[test]
fn broken_copies_of_the_manifests_are_rejected_by_the_schema_check() {
    let dir = tempfile::tempdir().unwrap();
    let whole = dir.path().join("whole.yaml");
    write_docs(&whole, &docs());
    let out = validate(std::slice::from_ref(&whole), KUBERNETES[1]);
    assert!(
        out.status.success(),
        "the unbroken copy: {}",
        output_text(&out)
    );
    for (what, breaks) in SCHEMA_BREAKS {
        let mut copy = docs();
        breaks(&mut copy);
        let f = dir.path().join("broken.yaml");
        write_docs(&f, &copy);
        let out = validate(std::slice::from_ref(&f), KUBERNETES[1]);
        assert!(
            !out.status.success(),
            "{what}: accepted\n{}",
            output_text(&out)
        );
        assert!(
            output_text(&out).contains("did not validate"),
            "{what}: {}",
            output_text(&out)
        );
    }
}

#[test]
fn every_container_meets_the_security_policy() {
    let docs = docs();
    assert_eq!(violations(&docs), Vec::<String>::new());
    // Each container named in the layout is there and was checked.
    let mut seen = Vec::new();
    for d in &docs {
        if let Some(spec) = pod_spec(d) {
            for (_, c) in containers(spec) {
                seen.push(format!(
                    "{}/{}",
                    d["metadata"]["name"].as_str().unwrap(),
                    c["name"].as_str().unwrap()
                ));
            }
        }
    }
    seen.sort();
    assert_eq!(
        seen,
        [
            "sanctum-agent/agent",
            "sanctum-agent/guard",
            "sanctum-agent/init",
            "sanctum-egress/egress",
            "sanctum-egress/init",
            "sanctum-scout/scout"
        ]
    );
}

/// Copies that each drop one protection, and the breach the policy check must name.
const POLICY_BREAKS: [(&str, Break); 12] = [
    ("guard: readOnlyRootFilesystem is not true", |d| {
        container(d, "sanctum-agent", "guard")["securityContext"]
            .as_object_mut()
            .unwrap()
            .remove("readOnlyRootFilesystem");
    }),
    ("agent: allowPrivilegeEscalation is not false", |d| {
        container(d, "sanctum-agent", "agent")["securityContext"]["allowPrivilegeEscalation"] =
            json!(true)
    }),
    ("scout: capabilities.drop lacks ALL", |d| {
        container(d, "sanctum-scout", "scout")["securityContext"]["capabilities"]["drop"] =
            json!(["NET_RAW"])
    }),
    (
        "egress: no RuntimeDefault or Localhost seccomp profile",
        |d| {
            container(d, "sanctum-egress", "egress")["securityContext"]["seccompProfile"] =
                json!({"type":"Unconfined"})
        },
    ),
    ("agent: runs as root", |d| {
        container(d, "sanctum-agent", "agent")["securityContext"]["runAsNonRoot"] = json!(false)
    }),
    ("guard: no runAsUser", |d| {
        container(d, "sanctum-agent", "guard")["securityContext"]
            .as_object_mut()
            .unwrap()
            .remove("runAsUser");
    }),
    (
        "init: a root init container adds more than chown and chmod need",
        |d| {
            container(d, "sanctum-agent", "init")["securityContext"]["capabilities"]["add"] =
                json!(["CHOWN", "SYS_ADMIN"])
        },
    ),
    ("scout: a non-root container adds capabilities", |d| {
        container(d, "sanctum-scout", "scout")["securityContext"]["capabilities"]["add"] =
            json!(["NET_BIND_SERVICE"])
    }),
    ("agent: no resources.limits.memory", |d| {
        container(d, "sanctum-agent", "agent")["resources"]["limits"]
            .as_object_mut()
            .unwrap()
            .remove("memory");
    }),
    (
        "guard: the guard's readinessProbe is not an httpGet of /readyz",
        |d| {
            container(d, "sanctum-agent", "guard")
                .as_object_mut()
                .unwrap()
                .remove("readinessProbe");
        },
    ),
    (
        "sanctum-agent: automountServiceAccountToken is not false",
        |d| {
            pod_spec_mut(find(d, "Deployment", "sanctum-agent"))
                .unwrap()
                .as_object_mut()
                .unwrap()
                .remove("automountServiceAccountToken");
        },
    ),
    ("sanctum-scout: hostNetwork is true", |d| {
        pod_spec_mut(find(d, "Deployment", "sanctum-scout")).unwrap()["hostNetwork"] = json!(true)
    }),
];

#[test]
fn copies_that_drop_a_protection_fail_the_security_policy() {
    for (want, breaks) in POLICY_BREAKS {
        let mut copy = docs();
        breaks(&mut copy);
        let found = violations(&copy);
        let (who, what) = want.split_once(": ").unwrap();
        assert!(
            found.iter().any(|v| v.contains(who) && v.contains(what)),
            "{want}: not flagged, found {found:?}"
        );
    }
}

/// Ports and peers an egress rule of a NetworkPolicy allows: (component or CIDR, ports).
fn egress_peers(np: &Value) -> Vec<(String, Vec<u64>)> {
    np["spec"]["egress"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|rule| {
            let ports: Vec<u64> = rule["ports"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|p| p["port"].as_u64())
                .collect();
            rule["to"]
                .as_array()
                .cloned()
                .unwrap_or_default()
                .into_iter()
                .map(move |peer| {
                    let who = peer["podSelector"]["matchLabels"]["app.kubernetes.io/component"]
                        .as_str()
                        .or(peer["podSelector"]["matchLabels"]["k8s-app"].as_str())
                        .or(peer["ipBlock"]["cidr"].as_str())
                        .unwrap_or("anything")
                        .to_owned();
                    (who, ports.clone())
                })
        })
        .collect()
}

#[test]
fn the_network_policies_deny_by_default_and_the_agent_reaches_only_egress_scout_and_dns() {
    let mut docs = docs();
    let deny = find(&mut docs, "NetworkPolicy", "sanctum-default-deny").clone();
    assert_eq!(
        deny["spec"]["podSelector"]["matchLabels"],
        json!({"app.kubernetes.io/name":"sanctum"})
    );
    assert_eq!(deny["spec"]["policyTypes"], json!(["Ingress", "Egress"]));
    assert!(deny["spec"].get("ingress").is_none() && deny["spec"].get("egress").is_none());
    // Every sanctum Pod is selected by the default deny.
    for d in &docs {
        if let Some(labels) = d["spec"]["template"]["metadata"]["labels"].as_object() {
            assert_eq!(
                labels["app.kubernetes.io/name"], "sanctum",
                "{}",
                d["metadata"]["name"]
            );
        }
    }
    let agent = find(&mut docs, "NetworkPolicy", "sanctum-agent").clone();
    assert_eq!(
        egress_peers(&agent),
        vec![
            ("egress".to_owned(), vec![3128]),
            ("scout".to_owned(), vec![9222]),
            ("kube-dns".to_owned(), vec![53, 53]),
        ]
    );
    // The web prompt and the front door admit only Pods the operator labels.
    let from = &agent["spec"]["ingress"][0]["from"];
    assert_eq!(
        from[0]["podSelector"]["matchLabels"],
        json!({"sanctum.dev/guard-client":"true"}),
        "{from}"
    );
    assert_eq!(agent["spec"]["ingress"].as_array().unwrap().len(), 1);
    // The agent reaches the Scout at its Service's address (Chromium refuses a Host name).
    let config = find(&mut docs, "ConfigMap", "sanctum-config").clone();
    let oc: Value =
        serde_json::from_str(config["data"]["openclaw.json"].as_str().unwrap()).unwrap();
    assert_eq!(
        oc["browser"]["profiles"]["scout"]["cdpUrl"],
        "http://${SANCTUM_SCOUT_SERVICE_HOST}:9222"
    );
    // The egress proxy and the Scout answer the agent's Pod only, and never reach private ranges.
    for (name, port) in [("sanctum-egress", 3128), ("sanctum-scout", 9222)] {
        let np = find(&mut docs, "NetworkPolicy", name).clone();
        assert_eq!(np["spec"]["ingress"].as_array().unwrap().len(), 1, "{name}");
        let rule = &np["spec"]["ingress"][0];
        assert_eq!(
            rule["from"][0]["podSelector"]["matchLabels"]["app.kubernetes.io/component"], "agent",
            "{name}"
        );
        assert_eq!(
            rule["ports"],
            json!([{"protocol":"TCP","port":port}]),
            "{name}"
        );
        let out = &np["spec"]["egress"][0]["to"][0]["ipBlock"];
        for private in ["10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16"] {
            assert!(
                out["except"].as_array().unwrap().contains(&json!(private)),
                "{name}: {out}"
            );
        }
    }
}

#[test]
fn the_model_key_is_mounted_into_the_egress_container_alone_and_the_tokens_into_init() {
    let docs = docs();
    let mut mounts: Vec<(String, String)> = Vec::new();
    for d in &docs {
        let Some(spec) = pod_spec(d) else { continue };
        for v in spec["volumes"].as_array().into_iter().flatten() {
            let Some(secret) = v["secret"]["secretName"].as_str() else {
                continue;
            };
            for (_, c) in containers(spec) {
                if c["volumeMounts"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .any(|m| m["name"] == v["name"])
                {
                    mounts.push((
                        secret.to_owned(),
                        format!(
                            "{}/{}",
                            d["metadata"]["name"].as_str().unwrap(),
                            c["name"].as_str().unwrap()
                        ),
                    ));
                }
            }
        }
        // No container takes a Secret through its environment.
        assert!(
            !d.to_string().contains("secretKeyRef"),
            "{}",
            d["metadata"]["name"]
        );
    }
    mounts.sort();
    assert_eq!(
        mounts,
        [
            (
                "sanctum-model-key".to_owned(),
                "sanctum-egress/egress".to_owned()
            ),
            ("sanctum-tokens".to_owned(), "sanctum-agent/init".to_owned()),
        ]
    );
}
