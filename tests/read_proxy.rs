//! An autonomous HTTP read reaches the network only through the guard's read proxy, and the
//! proxy reaches public addresses only. Real kernel (Landlock, seccomp), real curl and nc;
//! every target is on loopback: a "public" server on 127.0.0.77 (the proxy is told to take
//! that one address as public), internal listeners on 127.0.0.2 and 127.0.1.1 (Debian's
//! hostname line) that must never see a connection. Runs as root (ports 80/443).
// Test code: a panic is the failure report, and tests may read their environment.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use sanctum_guard::readproxy::{confine, ReadProxy};
use sanctum_guard::sandbox::{run, NetworkSpec, RunOutcome};
use sanctum_test_support as support;
use std::collections::BTreeMap;
use std::path::Path;
use support::readproxy::{proxy, public_server, records, Internal};
use support::sandbox::*;

const HOSTS: &str = "127.0.0.1 localhost\n127.0.1.1 devbox.acme-corp.com devbox\n\
                     127.0.0.77 public.test\n10.0.0.5 lan.test\n169.254.169.254 metadata.test\n\
                     127.0.0.2 internal.test\n";

/// Runs `script` under `sh -c` as an autonomous HTTP read with request id `id`.
async fn read_run(p: &ReadProxy, ws: &Ws, id: &str, script: &str) -> RunOutcome {
    let mut s = run_spec(ws, "autonomous-http-read", &["/bin/sh", "-c", script]);
    assert_eq!(s.profile.network, NetworkSpec::ReadProxy);
    s.inherit_env = false;
    s.env = BTreeMap::from([
        ("PATH".to_string(), "/usr/bin:/bin".to_string()),
        ("NO_PROXY".into(), "*".into()),
        ("ALL_PROXY".into(), "http://127.0.0.2:80".into()),
    ]);
    let pass = p.admit(id).unwrap();
    confine(&mut s.profile, &mut s.env, &pass);
    let o = run(s).await.unwrap();
    drop(pass);
    o
}

/// The lab: servers, internal listeners, the proxy (and its audit log).
struct Lab {
    _dir: tempfile::TempDir,
    ca: std::path::PathBuf,
    internal: Vec<Internal>,
    proxy: ReadProxy,
    log: std::path::PathBuf,
}

async fn lab(public_ip: &str, with_internal: bool) -> Lab {
    let dir = tempfile::tempdir().unwrap();
    let ca = public_server(public_ip, "public.test", dir.path()).await;
    let hosts = HOSTS.replace("127.0.0.77", public_ip);
    let (proxy, log) = proxy(dir.path(), &hosts, &[public_ip]);
    let mut internal = Vec::new();
    let addrs: &[&str] = if !with_internal {
        &[]
    } else {
        &[
            "127.0.0.2:80",
            "127.0.0.2:443",
            "127.0.0.2:22",
            "127.0.1.1:80",
            "127.0.1.1:443",
            "127.0.0.1:80",
        ]
    };
    for a in addrs {
        internal.push(Internal::start(a).await);
    }
    Lab {
        _dir: dir,
        ca,
        internal,
        proxy,
        log,
    }
}

impl Lab {
    fn internal_hits(&self) -> Vec<(String, usize)> {
        self.internal
            .iter()
            .filter(|i| i.hits() > 0)
            .map(|i| (i.addr.to_string(), i.hits()))
            .collect()
    }
}

fn ca_arg(ca: &Path) -> String {
    format!("--cacert {}", ca.display())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn public_reads_pass_through_the_proxy_and_are_audited() {
    let l = lab("127.0.0.77", false).await;
    let ws = Ws::new();
    let o = read_run(
        &l.proxy,
        &ws,
        "req-ok",
        "curl -sS http://public.test/ && curl -sS -I http://PUBLIC.test./ | head -1",
    )
    .await;
    assert_eq!(o.stdout, "public-ok\nHTTP/1.1 200 OK\r\n", "{o:?}");
    // The run reads the workspace only: the CA file it trusts lives there.
    let ca = ws.path().join("ca.pem");
    std::fs::copy(&l.ca, &ca).unwrap();
    let cmd = format!("curl -sS {} https://public.test/", ca_arg(&ca));
    let o = read_run(&l.proxy, &ws, "req-tls", &cmd).await;
    assert_eq!(o.stdout, "public-ok\n", "{o:?}");
    // The proxy queues each record before it answers and writes it off the request path
    // (`record_detached`): under load the last one can land just after the run ends.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let recs = loop {
        let recs = records(&l.log);
        let allowed = recs.iter().filter(|r| r["fields"]["verdict"] == "allow");
        if allowed.count() >= 3 || std::time::Instant::now() > deadline {
            break recs;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    };
    let allowed: Vec<_> = recs
        .iter()
        .filter(|r| r["fields"]["verdict"] == "allow")
        .collect();
    assert_eq!(allowed.len(), 3, "{recs:#?}");
    assert_eq!(allowed[0]["fields"]["requestId"], "req-ok");
    assert_eq!(allowed[2]["fields"]["requestId"], "req-tls");
    assert_eq!(allowed[2]["fields"]["method"], "CONNECT");
    assert!(l.internal_hits().is_empty(), "{:?}", l.internal_hits());
}

/// Each row: the script (curl or nc under sh), and what its output must contain.
const ATTACKS: &[(&str, &str, &str)] = &[
    ("ip literal", "curl -sS http://127.0.0.2/", "loopback"),
    ("decimal", "curl -sS http://2130706433/", "refused"),
    ("octal", "curl -sS http://0177.0.0.1/", "refused"),
    ("hex", "curl -sS http://0x7f.0.0.1/", "refused"),
    ("hex whole", "curl -sS http://0x7f000001/", "refused"),
    ("short form", "curl -sS http://127.1/", "refused"),
    ("ipv6 loopback", "curl -sS 'http://[::1]/'", "refused"),
    (
        "ipv4-mapped",
        "curl -sS 'http://[::ffff:127.0.0.2]/'",
        "loopback",
    ),
    (
        "ipv4-compatible",
        "curl -sS 'http://[::127.0.0.2]/'",
        "refused",
    ),
    ("trailing dot", "curl -sS http://127.0.0.2./", "loopback"),
    (
        "hosts-file name (Debian hostname line)",
        "curl -sS http://devbox.acme-corp.com/",
        "loopback",
    ),
    (
        "uppercase name",
        "curl -sS http://DEVBOX.ACME-CORP.COM./",
        "loopback",
    ),
    ("short hostname", "curl -sS http://devbox/", "loopback"),
    ("LAN name", "curl -sS http://lan.test/", "private"),
    ("LAN address", "curl -sS http://10.0.0.5/", "private"),
    (
        "metadata address",
        "curl -sS http://169.254.169.254/latest/meta-data/",
        "link-local",
    ),
    (
        "metadata name",
        "curl -sS http://metadata.test/",
        "link-local",
    ),
    ("metadata decimal", "curl -sS http://2852039166/", "refused"),
    ("cgnat", "curl -sS http://100.64.1.1/", "carrier-grade"),
    ("unspecified", "curl -sS http://0.0.0.0/", "refused"),
    ("ula", "curl -sS 'http://[fd00::1]/'", "unique local"),
    (
        "link-local v6",
        "curl -sS 'http://[fe80::1]/'",
        "link-local",
    ),
    (
        "idna fullwidth (raw)",
        "raw 'GET http://１２７．０．０．２/ HTTP/1.1'",
        "refused",
    ),
    (
        "idna fullwidth name (raw)",
        "raw 'GET http://ＤＥＶＢＯＸ/ HTTP/1.1'",
        "loopback",
    ),
    (
        "userinfo trick",
        "curl -sS http://public.test@127.0.0.2/",
        "loopback",
    ),
    (
        "userinfo in a proxied URL (raw)",
        "raw 'GET http://x@127.0.0.2/ HTTP/1.1'",
        "credentials in the URL",
    ),
    (
        "https absolute form (raw)",
        "raw 'GET https://public.test/ HTTP/1.1'",
        "absolute http",
    ),
    (
        "CONNECT to 443 of an internal name (raw)",
        "raw 'CONNECT internal.test:443 HTTP/1.1'",
        "loopback",
    ),
    (
        "redirect to internal (-L)",
        "curl -sSL 'http://public.test/redirect?to=http://127.0.0.2/'",
        "loopback",
    ),
    (
        "redirect to internal name",
        "curl -sSL 'http://public.test/redirect?to=http://devbox/'",
        "loopback",
    ),
    (
        "POST",
        "curl -sS -d x=1 http://public.test/",
        "may only GET or HEAD",
    ),
    (
        "PUT",
        "curl -sS -X PUT http://public.test/",
        "may only GET or HEAD",
    ),
    (
        "GET with a body",
        "curl -sS -X GET -d x=1 http://public.test/",
        "no request body",
    ),
    (
        "plain http to another port",
        "curl -sS http://public.test:8080/",
        "port 80 only",
    ),
    (
        "CONNECT to another port",
        "curl -sS -p http://public.test:22/ 2>&1; echo",
        "403",
    ),
    (
        "CONNECT to an internal address",
        "curl -sS https://127.0.0.2/ 2>&1; echo",
        "403",
    ),
    (
        "CONNECT to a hosts-file name",
        "curl -sS https://devbox/ 2>&1; echo",
        "403",
    ),
    (
        "no proxy at all",
        "curl -sS --noproxy '*' http://127.0.0.2/ 2>&1; echo",
        "Failed to connect",
    ),
    (
        "no proxy, public address",
        "curl -sS --noproxy '*' http://127.0.0.78/ 2>&1; echo",
        "Failed to connect",
    ),
    (
        "no credential (-x)",
        "curl -sS -x http://127.0.0.1:$PROXY_PORT http://public.test/",
        "no live run credential",
    ),
    (
        "wrong credential",
        "curl -sS -x http://run-0:bad@127.0.0.1:$PROXY_PORT http://public.test/",
        "no live run credential",
    ),
    (
        "origin-form to the proxy itself (raw)",
        "raw 'GET / HTTP/1.1'",
        "absolute http",
    ),
    (
        "nc to an internal port",
        "nc -w 2 127.0.0.2 80 </dev/null 2>&1; echo nc-exit=$?",
        "nc-exit=1",
    ),
    (
        "nc to metadata",
        "nc -w 2 169.254.169.254 80 </dev/null 2>&1; echo nc-exit=$?",
        "nc-exit=1",
    ),
];

/// `raw 'REQUEST LINE'`: sends that request line to the proxy with the run's credential, as
/// no client would (curl refuses some of these URLs itself).
const RAW: &str = r#"raw() { c=${HTTP_PROXY#http://}; c=${c%@*}; a=$(printf %s "$c" | base64 -w0); printf '%s\r\nHost: x\r\nProxy-Authorization: Basic %s\r\n\r\n' "$1" "$a" | nc -w 3 127.0.0.1 $PROXY_PORT; }"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_internal_destination_and_method_is_refused() {
    let l = lab("127.0.0.78", true).await;
    let ws = Ws::new();
    let mut failed = Vec::new();
    for (i, (name, script, want)) in ATTACKS.iter().enumerate() {
        let script = format!("PROXY_PORT={}; {RAW}; {script}", l.proxy.port());
        let id = format!("attack-{i}");
        let before = l.internal_hits();
        let o = read_run(&l.proxy, &ws, &id, &script).await;
        let out = format!("{}{}", o.stdout, o.stderr);
        if !out.contains(want) || out.contains("INTERNAL-SECRET") || l.internal_hits() != before {
            failed.push(format!(
                "{name}: want {want:?}, got {out:?}, internal {:?}",
                l.internal_hits()
            ));
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n"));
    assert!(l.internal_hits().is_empty(), "{:?}", l.internal_hits());
    // The counted refusals' summary is written within a second.
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    // Every refusal the proxy saw is on record with the run's request id (or none, for a
    // request without a live credential).
    let recs = records(&l.log);
    let denied: Vec<_> = recs
        .iter()
        .filter(|r| r["fields"]["verdict"] == "deny")
        .collect();
    // Past 20 refusals a second the rest are counted, not written one by one.
    let written = denied
        .iter()
        .filter(|r| r["fields"]["method"] != "")
        .count() as u64;
    let counted: u64 = denied
        .iter()
        .filter_map(|r| r["fields"]["suppressedBefore"].as_u64())
        .sum();
    assert!(written + counted >= 30, "{recs:#?}");
    assert!(
        denied
            .iter()
            .any(|r| r["fields"]["requestId"] == "attack-10"
                && r["fields"]["reason"]
                    .as_str()
                    .unwrap()
                    .contains("127.0.1.1")),
        "{denied:#?}"
    );
    assert!(!recs.iter().any(|r| r["fields"]["verdict"] == "allow"
        && r["fields"]["target"]
            .as_str()
            .unwrap()
            .starts_with("127.0.0.2")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_credential_dies_with_its_run() {
    let l = lab("127.0.0.79", false).await;
    let pass = l.proxy.admit("req-gone").unwrap();
    let url = pass.env()[0].1.clone();
    drop(pass);
    let o = std::process::Command::new("curl")
        .args(["-sS", "-x", &url, "http://public.test/"])
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("no live run credential"), "{out}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refusal_flood_does_not_grow_the_log_fast() {
    let l = lab("127.0.0.80", false).await;
    let port = l.proxy.port();
    let mut tasks = Vec::new();
    for _ in 0..400 {
        tasks.push(tokio::spawn(async move {
            use tokio::io::{AsyncReadExt, AsyncWriteExt};
            let mut s = tokio::net::TcpStream::connect(("127.0.0.1", port))
                .await
                .unwrap();
            s.write_all(b"GET http://127.0.0.2/ HTTP/1.1\r\nHost: x\r\n\r\n")
                .await
                .unwrap();
            let mut v = Vec::new();
            let _ = s.read_to_end(&mut v).await;
            String::from_utf8_lossy(&v).contains("407")
        }));
    }
    for t in tasks {
        assert!(t.await.unwrap());
    }
    tokio::time::sleep(std::time::Duration::from_millis(2500)).await;
    let recs = records(&l.log);
    assert!(
        recs.len() <= 3 * 20 + 3,
        "{} records for 400 refusals",
        recs.len()
    );
    let counted: u64 = recs
        .iter()
        .filter_map(|r| r["fields"]["suppressedBefore"].as_u64())
        .sum();
    let written = recs
        .iter()
        .filter(|r| r["fields"]["suppressedBefore"].is_null())
        .count() as u64;
    // Summaries count what was not written; a refusal's own record may also carry the count.
    assert!(
        written + counted >= 400,
        "{written} written, {counted} counted"
    );
}
