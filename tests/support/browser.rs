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
    let mut caps = serde_json::Map::new();
    caps.insert(
        "goog:chromeOptions".into(),
        json!({"binary": "/usr/bin/chromium", "args": [
            "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
            "--window-size=1280,1000", "--hide-scrollbars", "--lang=en-US",
            format!("--user-data-dir={}", profile.display())]}),
    );
    ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new())
        .capabilities(caps)
        .connect(&d.url)
        .await
        .expect("webdriver session")
}

pub fn shots() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .expect("target")
        .join("web-screenshots");
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

pub async fn click(c: &Client, css: &str) {
    c.find(Locator::Css(css))
        .await
        .unwrap_or_else(|e| panic!("{css}: {e}"))
        .click()
        .await
        .expect("click");
}

pub async fn shot(c: &Client, name: &str) -> PathBuf {
    let png = c.screenshot().await.expect("screenshot");
    let p = shots().join(name);
    std::fs::write(&p, png).expect("write screenshot");
    p
}
