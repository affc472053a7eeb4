//! Real headless Chromium (Debian `chromium` + `chromium-driver`) over WebDriver with
//! fantoccini: the driver process, a browser session, scripts, waits, clicks, screenshots
//! (into target/web-screenshots/).

use super::process::{free_port, ChildGuard};
use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::{json, Value};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// A running chromedriver (killed with its process group on drop).
pub struct Driver {
    _child: ChildGuard,
    url: String,
}

pub fn chromedriver() -> Driver {
    let port = free_port();
    let child = ChildGuard::spawn_group(
        "chromedriver",
        std::process::Command::new("chromedriver")
            .arg(format!("--port={port}"))
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null()),
    );
    let start = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "chromedriver did not start"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    Driver {
        _child: child,
        url: format!("http://127.0.0.1:{port}"),
    }
}

pub async fn browser(d: &Driver, profile: &std::path::Path) -> Client {
    browser_with(d, profile, &[]).await
}

/// [`browser`] with more Chromium flags.
pub async fn browser_with(d: &Driver, profile: &std::path::Path, extra: &[&str]) -> Client {
    let mut args = vec![
        "--headless=new".to_owned(),
        "--no-sandbox".into(),
        "--disable-gpu".into(),
        "--disable-dev-shm-usage".into(),
        "--window-size=1280,1000".into(),
        "--hide-scrollbars".into(),
        "--lang=en-US".into(),
        format!("--user-data-dir={}", profile.display()),
    ];
    args.extend(extra.iter().map(|a| (*a).to_owned()));
    let mut caps = serde_json::Map::new();
    caps.insert(
        "goog:chromeOptions".into(),
        json!({"binary": "/usr/bin/chromium", "args": args}),
    );
    ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new())
        .capabilities(caps)
        .connect(&d.url)
        .await
        .expect("webdriver session")
}

pub fn shots() -> PathBuf {
    let dir = super::process::target_dir().join("web-screenshots");
    std::fs::create_dir_all(&dir).expect("screenshot dir");
    dir
}

pub async fn js(c: &Client, script: &str, args: Vec<Value>) -> Value {
    c.execute(script, args).await.expect("script")
}

/// Waits until `script` returns true.
pub async fn until(c: &Client, what: &str, script: &str, args: Vec<Value>) {
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(20) {
        if js(c, script, args.clone()).await == Value::Bool(true) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let html = js(c, "return document.body.innerText", vec![]).await;
    panic!(
        "timed out waiting for {what}; page text:\n{}",
        html.as_str().unwrap_or("")
    );
}

/// Waits until the page's event stream is live (the `#live` marker is on).
pub async fn until_live(c: &Client, what: &str) {
    let live =
        "const l = document.getElementById('live'); return !!l && l.classList.contains('on')";
    until(c, what, live, vec![]).await;
}

/// Clicks the element `css` names, scrolled into view first and after the next frame is laid
/// out: a card out of view is not rendered (`content-visibility: auto`) until then, and
/// chromedriver would find its buttons not interactable. The element is found afresh on each
/// try (the queue recycles its rows as the page scrolls); after 5 s of refusals the panic
/// says what the element looked like.
pub async fn click(c: &Client, css: &str) {
    let start = Instant::now();
    loop {
        let e = c
            .find(Locator::Css(css))
            .await
            .unwrap_or_else(|e| panic!("{css}: {e}"));
        c.execute(
            "arguments[0].scrollIntoView({block: 'center'}); \
             return new Promise(r => requestAnimationFrame(() => requestAnimationFrame(() => r(true))));",
            vec![serde_json::to_value(&e).expect("element")],
        )
        .await
        .expect("scroll into view");
        match e.click().await {
            Ok(_) => return,
            Err(err) if start.elapsed() < Duration::from_secs(5) => {
                eprintln!("click {css}: {err}; trying again");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(err) => {
                let seen = js(
                    c,
                    "const n = document.querySelector(arguments[0]); if (!n) return 'gone'; \
                     const card = n.closest('li'); const r = n.getBoundingClientRect(); \
                     return [n.outerHTML.slice(0, 300), getComputedStyle(n).display, \
                       r.width + 'x' + r.height + '@' + r.left + ',' + r.top, \
                       card ? card.className : '', document.querySelectorAll(arguments[0]).length]",
                    vec![json!(css)],
                )
                .await;
                panic!("click {css}: {err}; the element: {seen}");
            }
        }
    }
}

pub async fn shot(c: &Client, name: &str) -> PathBuf {
    let png = c.screenshot().await.expect("screenshot");
    let p = shots().join(name);
    std::fs::write(&p, png).expect("write screenshot");
    p
}

/// Memory of one Chromium renderer process, in KiB.
#[derive(Debug, Clone, Copy)]
pub struct RendererMem {
    pub pid: i32,
    /// VmRSS from /proc/PID/status.
    pub rss_kib: u64,
    /// Pss from /proc/PID/smaps_rollup (pages shared with other Chromium processes counted
    /// in proportion), when the kernel provides it.
    pub pss_kib: Option<u64>,
    /// Private_Clean + Private_Dirty from smaps_rollup: the pages only this process holds
    /// (close to what Chromium's task manager calls the tab's memory footprint).
    pub private_kib: Option<u64>,
    /// Chromium's own UI (`--top-chrome-webui`) or an extension rather than a web page.
    pub ui: bool,
}

/// Every Chromium `--type=renderer` process descended from this test process (chromedriver
/// and the browser it starts are children of the test), found through /proc.
pub fn renderers() -> Vec<RendererMem> {
    let mut parent = std::collections::HashMap::new();
    let mut renderer_pids = Vec::new();
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
            continue;
        };
        let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
        // Fields after the command name (which may hold spaces) start after the last ')'.
        let ppid = stat
            .rsplit_once(')')
            .and_then(|(_, r)| r.split_whitespace().nth(1))
            .and_then(|p| p.parse::<i32>().ok());
        if let Some(ppid) = ppid {
            parent.insert(pid, ppid);
        }
        // Chromium rewrites its process title: the arguments are separated by spaces there,
        // not by NULs.
        let cmdline = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
        let mut args = cmdline.split(|b| *b == 0 || *b == b' ');
        let (mut renderer, mut ui) = (false, false);
        for arg in args.by_ref() {
            renderer |= arg == b"--type=renderer";
            ui |= arg == b"--top-chrome-webui" || arg == b"--extension-process";
        }
        if renderer {
            renderer_pids.push((pid, ui));
        }
    }
    let me = std::process::id() as i32;
    let ours = |mut pid: i32| {
        while let Some(&pp) = parent.get(&pid) {
            if pp == me {
                return true;
            }
            if pp <= 1 {
                return false;
            }
            pid = pp;
        }
        false
    };
    let kib = |text: &str, key: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
    };
    renderer_pids
        .into_iter()
        .filter(|(p, _)| ours(*p))
        .filter_map(|(pid, ui)| {
            let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
            let rollup =
                std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup")).unwrap_or_default();
            Some(RendererMem {
                pid,
                rss_kib: kib(&status, "VmRSS:")?,
                pss_kib: kib(&rollup, "Pss:"),
                private_kib: kib(&rollup, "Private_Clean:")
                    .zip(kib(&rollup, "Private_Dirty:"))
                    .map(|(c, d)| c + d),
                ui,
            })
        })
        .collect()
}

pub const ROW_BY_REQ: &str = "return [...document.querySelectorAll('li.qrow:not([hidden])')].some(n => n.textContent.includes(arguments[0]))";

/// The inbox id of the queue row showing `needle` (waits for it). Nothing opens by itself:
/// the card is read after [`open_card`].
pub async fn card_id(c: &Client, needle: &str) -> String {
    until(c, needle, ROW_BY_REQ, vec![json!(needle)]).await;
    js(c, "return [...document.querySelectorAll('li.qrow:not([hidden])')].find(n => n.textContent.includes(arguments[0])).getAttribute('data-id')", vec![json!(needle)])
        .await
        .as_str()
        .expect("id")
        .to_owned()
}

/// Opens the card of inbox entry `id` as a person does: a click on its queue row.
pub async fn open_card(c: &Client, id: &str) {
    click(c, &format!("#q-{id}")).await;
    until(
        c,
        "the card open",
        "return !!document.getElementById('r-' + arguments[0])",
        vec![json!(id)],
    )
    .await;
}

/// Signs the browser in with the one-time `link` and waits for the live inbox.
pub async fn sign_in(c: &Client, link: &str) {
    c.goto(link.trim()).await.expect("goto link");
    click(c, "#signin").await;
    until_live(c, "live inbox").await;
}

impl Driver {
    /// The driver's base URL (for WebDriver extension commands fantoccini has no call for).
    pub fn url(&self) -> &str {
        &self.url
    }
}

/// Adds Chromium's virtual authenticator to the browser session (chromedriver's WebAuthn
/// extension command): a platform authenticator (CTAP2, internal transport) with resident
/// keys and user verification, which verifies the user on every request. Returns its id.
pub async fn virtual_authenticator(d: &Driver, c: &Client) -> String {
    let sid = c
        .session_id()
        .await
        .expect("session id")
        .expect("a session");
    let body = json!({"protocol": "ctap2", "transport": "internal", "hasResidentKey": true,
                      "hasUserVerification": true, "isUserVerified": true,
                      "automaticPresenceSimulation": true});
    let v = driver_post(d, &format!("/session/{sid}/webauthn/authenticator"), &body);
    v["value"]
        .as_str()
        .unwrap_or_else(|| panic!("no authenticator id: {v}"))
        .to_owned()
}

/// The credentials the virtual authenticator `auth` holds (chromedriver's extension command).
pub async fn authenticator_credentials(d: &Driver, c: &Client, auth: &str) -> Vec<Value> {
    let sid = c
        .session_id()
        .await
        .expect("session id")
        .expect("a session");
    let v = driver_get(
        d,
        &format!("/session/{sid}/webauthn/authenticator/{auth}/credentials"),
    );
    v["value"].as_array().cloned().unwrap_or_default()
}

fn driver_exchange(d: &Driver, method: &str, path: &str, body: Option<&Value>) -> Value {
    use std::io::{Read, Write};
    let addr = d.url.trim_start_matches("http://");
    let mut s = std::net::TcpStream::connect(addr).expect("chromedriver");
    let text = body.map(|b| b.to_string()).unwrap_or_default();
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{text}",
        text.len()
    )
    .expect("send");
    // chromedriver may keep the connection open: read the head, then Content-Length bytes.
    s.set_read_timeout(Some(Duration::from_secs(30)))
        .expect("timeout");
    let mut buf = Vec::new();
    let mut byte = [0u8; 1];
    while !buf.ends_with(b"\r\n\r\n") {
        s.read_exact(&mut byte).expect("read head");
        buf.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&buf).to_ascii_lowercase();
    let len: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("{method} {path}: no content-length: {head}"));
    let mut body = vec![0u8; len];
    s.read_exact(&mut body).expect("read body");
    serde_json::from_slice(&body)
        .unwrap_or_else(|e| panic!("{method} {path}: {e}: {}", String::from_utf8_lossy(&body)))
}

fn driver_post(d: &Driver, path: &str, body: &Value) -> Value {
    driver_exchange(d, "POST", path, Some(body))
}

fn driver_get(d: &Driver, path: &str) -> Value {
    driver_exchange(d, "GET", path, None)
}
