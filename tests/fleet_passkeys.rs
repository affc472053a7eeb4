//! Passkeys are the fleet's: in real headless Chromium with its virtual authenticator, two
//! real `serve` processes on one real PostgreSQL server, each under its own `localhost`
//! origin (one RP id, `localhost`). A passkey added on guard A's page signs in alone (no
//! link) on guard B's page, and both guards' command lines list it; the credential's
//! signature counter in the database moved with the sign-in.
// Test code: a panic is the failure report, and tests may read their environment.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use sanctum_test_support as support;

use support::browser::*;
use support::guard::{Serve, World};
use support::postgres::Postgres;
use support::process::{free_port, guard_cli};
use support::tools::NEW;
use support::web::TOKEN;

struct Guard {
    world: World,
    _serve: Serve,
    origin: String,
    cfg: std::path::PathBuf,
}

fn guard(pg: &Postgres, name: &str) -> Guard {
    let world = World::new(NEW, TOKEN, &[]);
    let port = free_port();
    let origin = format!("http://localhost:{port}");
    let cfg = world.write_config(&format!(
        "[deadlines]\nrequest_ms = 120000\n[web]\npublic_origin = \"{origin}\"\n\
         [store]\nurl = \"{}\"\nguard_id = \"{name}\"\n",
        pg.url()
    ));
    let listen = format!("127.0.0.1:{port}");
    let serve = Serve::start(
        &world,
        &[],
        &["--config", cfg.to_str().unwrap(), "--web-listen", &listen],
    );
    Guard {
        world,
        _serve: serve,
        origin,
        cfg,
    }
}

fn cli(g: &Guard, args: &[&str]) -> (i32, String, String) {
    let st = g.world.guard_state.to_str().unwrap().to_owned();
    let mut all = args.to_vec();
    all.extend(["--state-dir", &st]);
    guard_cli(&all, &[("SANCTUM_CONFIG", g.cfg.to_str().unwrap())])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_passkey_added_on_one_guard_signs_in_on_another() {
    let pg = Postgres::start();
    let a = guard(&pg, "guard-a");
    let b = guard(&pg, "guard-b");
    let d = chromedriver();
    let profile = tempfile::tempdir().unwrap();
    let c = browser(&d, profile.path()).await;
    let auth = virtual_authenticator(&d, &c).await;

    // On A: signed in with A's link, a passkey is added.
    let (code, link, err) = cli(&a, &["web", "login-link"]);
    assert_eq!(code, 0, "{err}");
    assert!(link.starts_with(&a.origin), "{link}");
    sign_in(&c, &link).await;
    click(&c, "#passkey-add").await;
    until(
        &c,
        "the passkey added",
        "return document.getElementById('passkey-msg').textContent.includes('Passkey added')",
        vec![],
    )
    .await;
    assert_eq!(authenticator_credentials(&d, &c, &auth).await.len(), 1);
    // Both guards' command lines list the one credential (it is in the fleet's table).
    let (_, on_a, _) = cli(&a, &["passkeys", "list"]);
    let (_, on_b, _) = cli(&b, &["passkeys", "list"]);
    let id = on_a.split_whitespace().next().expect("an id").to_owned();
    assert!(on_b.contains(&id), "B lists A's passkey: {on_b}");
    // On a thread of its own: the client's runtime must not start inside the test's.
    let count = || -> i64 {
        std::thread::scope(|s| {
            s.spawn(|| {
                pg.client()
                    .query_one("SELECT sign_count FROM sanctum_passkeys", &[])
                    .unwrap()
                    .get(0)
            })
            .join()
            .unwrap()
        })
    };
    let before = count();

    // Signed out (the fleet's session ends; cookies do not tell ports apart), then on B's
    // page the passkey alone signs in.
    click(&c, "#logout").await;
    until(
        &c,
        "signed out on A",
        "return !document.getElementById('signed-out').hidden",
        vec![],
    )
    .await;
    c.goto(&b.origin).await.unwrap();
    until(
        &c,
        "B's page signed out",
        "return !document.getElementById('signed-out').hidden",
        vec![],
    )
    .await;
    click(&c, "#signed-out button.passkey-signin").await;
    until(
        &c,
        "signed in on B with the passkey",
        "return document.getElementById('identity').textContent.startsWith('Signed in as web:admin/')",
        vec![],
    )
    .await;
    until_live(&c, "B's live inbox after a passkey sign-in").await;
    shot(&c, "fleet-passkey-on-b.png").await;
    assert!(count() > before, "the counter moved in the fleet's table");
}
