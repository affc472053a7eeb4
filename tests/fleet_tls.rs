//! Fleet mode over TLS: a real PostgreSQL server with `ssl=on` and a certificate from a test
//! CA (made here with rcgen), taking TCP clients over TLS only (`hostssl`). A guard whose URL
//! names that CA (`sslrootcert`) reaches it encrypted and works (a gated request approved on
//! its page); every other way is refused before a row is read or written, with the reason in
//! the guard's log, and the guard fails closed (the agent denied `store-unavailable`, not
//! ready): a certificate from another CA, only Mozilla's roots, a certificate for another
//! name, and plain text.
// Test code: a panic is the failure report, and tests may read their environment.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use sanctum_test_support as support;

use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};
use serde_json::json;
use std::path::Path;
use support::postgres::Postgres;
use support::socket::*;
use support::web::*;

/// A test CA: its certificate (PEM) and what signs its leaves.
struct Ca {
    pem: String,
    issuer: Issuer<'static, KeyPair>,
}

impl Ca {
    /// A CA named `name` (two CAs of one name would look like one issuer).
    fn new(name: &str) -> Ca {
        let mut p = CertificateParams::new(Vec::<String>::new()).unwrap();
        p.distinguished_name
            .push(rcgen::DnType::CommonName, name.to_owned());
        p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let key = KeyPair::generate().unwrap();
        let pem = p.self_signed(&key).unwrap().pem();
        Ca {
            pem,
            issuer: Issuer::new(p, key),
        }
    }

    /// A server certificate for `names` and its key (PEM).
    fn leaf(&self, names: &[&str]) -> (String, String) {
        let p = CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>())
            .unwrap();
        let key = KeyPair::generate().unwrap();
        let cert = p.signed_by(&key, &self.issuer).unwrap();
        (cert.pem(), key.serialize_pem())
    }

    fn write(&self, path: &Path) -> String {
        std::fs::write(path, &self.pem).unwrap();
        path.display().to_string()
    }
}

/// How a row of the table ends.
enum Expect {
    /// The guard files and answers a gated request through the database, encrypted.
    Works,
    /// Refused: the agent is denied `store-unavailable`; the guard's log says this.
    Refused(&'static str),
}

#[test]
fn the_guard_verifies_the_database_and_never_speaks_plain_text_unasked() {
    let dir = tempfile::tempdir().unwrap();
    let ours = Ca::new("fleet test CA");
    let theirs = Ca::new("another CA");
    let (cert, key) = ours.leaf(&["127.0.0.1"]);
    let pg = Postgres::start_tls(&cert, &key);
    let our_ca = ours.write(&dir.path().join("ours.pem"));
    let their_ca = theirs.write(&dir.path().join("theirs.pem"));
    let ip = pg.bare_url();
    let by_name = ip.replace("127.0.0.1", "localhost");
    let table: Vec<(&str, String, Expect)> = vec![
        (
            "verify-full against the server's CA",
            format!("{ip}?sslmode=verify-full&sslrootcert={our_ca}"),
            Expect::Works,
        ),
        (
            "require against the server's CA",
            format!("{ip}?sslmode=require&sslrootcert={our_ca}"),
            Expect::Works,
        ),
        (
            "a certificate from another CA",
            format!("{ip}?sslmode=verify-full&sslrootcert={their_ca}"),
            Expect::Refused("invalid peer certificate: UnknownIssuer"),
        ),
        (
            "require with Mozilla's roots only",
            format!("{ip}?sslmode=require"),
            Expect::Refused("invalid peer certificate: UnknownIssuer"),
        ),
        (
            "a certificate for another name",
            format!("{by_name}?sslmode=verify-full&sslrootcert={our_ca}"),
            Expect::Refused("invalid peer certificate: certificate not valid for name"),
        ),
        (
            "plain text to a server that takes TLS only",
            format!("{ip}?sslmode=disable"),
            Expect::Refused("no encryption"),
        ),
    ];
    for (n, (what, url, expect)) in table.into_iter().enumerate() {
        let name = format!("guard-{n}");
        let store = format!("[store]\nurl = \"{url}\"\nguard_id = \"{name}\"\n");
        let w = Web::start_configured(20_000, &store, &[], "http");
        let req = format!("tls-{n}");
        let client = w.ask(&req, &format!("touch /tmp/sg-fleet-tls-{n}"));
        match expect {
            Expect::Works => {
                let login = w.login();
                let e = w.wait_pending(&login, &req);
                let r = w.decide(
                    &login,
                    e["id"].as_str().unwrap(),
                    json!({"decision": "allow-once", "hash": e["requestHash"]}),
                );
                assert_eq!(r.status, 200, "{what}: {r:?}");
                let reply = first_json(&client.join().unwrap());
                assert_eq!(reply["decision"], "allow-once", "{what}: {reply}");
                // Every connection this guard holds is encrypted, as the server sees it.
                let row = pg
                    .client()
                    .query_one(
                        "SELECT COUNT(*), COALESCE(bool_and(s.ssl), false) FROM pg_stat_ssl s
                         JOIN pg_stat_activity a USING (pid)
                         WHERE a.application_name = 'sanctum-guard'",
                        &[],
                    )
                    .unwrap();
                let (conns, all_tls): (i64, bool) = (row.get(0), row.get(1));
                assert!(
                    conns >= 2 && all_tls,
                    "{what}: {conns} connections, tls {all_tls}"
                );
                eprintln!("{what}: works, {conns} connections, all TLS");
            }
            Expect::Refused(why) => {
                let reply = first_json(&client.join().unwrap());
                assert_eq!(reply["decision"], "deny", "{what}: {reply}");
                let audit = w.audit();
                assert!(
                    audit.lines().any(|l| l.contains(&format!("\"{req}\""))
                        && l.contains("\"reason\":\"store-unavailable\"")),
                    "{what}: {audit}"
                );
                let log = w.serve.log();
                assert!(log.contains(why), "{what}: wanted {why:?} in:\n{log}");
                let ready = w.call("GET", "/readyz", None, None);
                assert_eq!(ready.status, 503, "{what}: {ready:?}");
                eprintln!("{what}: refused ({why})");
            }
        }
        // No row of this guard reached the table unless it could be verified.
        let rows: i64 = pg
            .client()
            .query_one(
                "SELECT COUNT(*) FROM sanctum_inbox WHERE guard_id = $1",
                &[&name],
            )
            .map(|r| r.get(0))
            .unwrap_or(0);
        let want = i64::from(matches!(expect, Expect::Works));
        assert_eq!(rows, want, "{what}");
    }
}

/// A URL that says nothing about TLS, or asks for a mode that falls back to plain text, is
/// refused at start: the guard does not run on a channel nobody chose.
#[test]
fn a_url_that_could_mean_plain_text_is_refused_at_start() {
    for (query, why) in [
        ("", "sslmode=verify-full"),
        ("?sslmode=prefer", "falls back to plain text"),
        (
            "?sslmode=verify-full&sslrootcert=/nonexistent/ca.pem",
            "sslrootcert",
        ),
    ] {
        let url = format!("postgres://postgres@127.0.0.1:1/postgres{query}");
        let world = support::guard::World::new(NEW, TOKEN, &[]);
        let cfg = world.write_config(&format!("[store]\nurl = \"{url}\"\nguard_id = \"g\"\n"));
        let (code, err) =
            support::guard::Serve::start_fails(&world, &["--config", cfg.to_str().unwrap()]);
        assert_ne!(code, 0, "{query}: {err}");
        assert!(err.contains(why), "{query}: wanted {why:?} in:\n{err}");
    }
}
