//! Local servers that speak the push channels' documented APIs, for the notification tests:
//! ntfy's JSON publish (`POST /` with `topic`, `title`, `message`, `priority` 1..=5,
//! `actions` of `view`/`http`/`broadcast` with a label and URL, a Bearer token when the topic
//! has one), Telegram's Bot API (`/bot<token>/sendMessage` and `editMessageText` with an
//! inline keyboard of URL buttons; `{"ok":true,"result":{"message_id":…}}`), and a webhook
//! receiver that checks `X-Sanctum-Signature` (HMAC-SHA256 over `<t>.<body>`, `t` recent).
//! Each request is checked as the service would and answered 400/401 with the reason when it
//! is not what the API takes; every request is recorded with its arrival time.

use hmac::{Hmac, Mac};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Which API a server speaks.
#[derive(Debug, Clone)]
pub enum Api {
    Ntfy { token: Option<String> },
    Telegram { token: String, chat: String },
    Webhook { key: String },
}

/// One request the server received.
#[derive(Debug, Clone)]
pub struct Hit {
    pub at: Instant,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub raw: Vec<u8>,
    pub body: Value,
    /// What the server answered.
    pub status: u16,
    /// Why it refused, when it did.
    pub refusal: Option<String>,
}

impl Hit {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

struct State {
    api: Api,
    hits: Vec<Hit>,
    /// Answer 500 to this many requests first.
    fail_first: usize,
    next_message: i64,
    /// The message ids `sendMessage` answered with (Telegram).
    sent: Vec<i64>,
}

/// A running local channel server.
pub struct ChannelServer {
    pub url: String,
    state: Arc<Mutex<State>>,
}

impl ChannelServer {
    pub fn start(api: Api, fail_first: usize) -> ChannelServer {
        let l = TcpListener::bind("127.0.0.1:0").expect("bind");
        let url = format!("http://{}", l.local_addr().expect("addr"));
        let state = Arc::new(Mutex::new(State {
            api,
            hits: Vec::new(),
            fail_first,
            next_message: 100,
            sent: Vec::new(),
        }));
        let st = state.clone();
        std::thread::spawn(move || {
            for s in l.incoming().flatten() {
                let st = st.clone();
                std::thread::spawn(move || serve_conn(s, st));
            }
        });
        ChannelServer { url, state }
    }

    pub fn hits(&self) -> Vec<Hit> {
        self.state.lock().expect("state").hits.clone()
    }

    /// Waits until `n` requests have arrived; returns them all.
    pub fn wait_hits(&self, n: usize, timeout: Duration) -> Vec<Hit> {
        let start = Instant::now();
        loop {
            let h = self.hits();
            if h.len() >= n {
                return h;
            }
            assert!(
                start.elapsed() < timeout,
                "{} of {n} requests at the channel server: {h:#?}",
                h.len()
            );
            std::thread::sleep(Duration::from_millis(2));
        }
    }
}

/// A URL where nothing listens (a dead channel).
pub fn dead_url() -> String {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    format!("http://{}", l.local_addr().expect("addr"))
}

fn serve_conn(s: TcpStream, st: Arc<Mutex<State>>) {
    let mut r = BufReader::new(s.try_clone().expect("clone"));
    let mut s = s;
    loop {
        let mut line = String::new();
        if r.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let mut parts = line.split_whitespace();
        let method = parts.next().unwrap_or("").to_owned();
        let path = parts.next().unwrap_or("").to_owned();
        let mut headers = Vec::new();
        loop {
            let mut h = String::new();
            if r.read_line(&mut h).unwrap_or(0) == 0 {
                return;
            }
            let h = h.trim_end();
            if h.is_empty() {
                break;
            }
            if let Some((k, v)) = h.split_once(':') {
                headers.push((k.trim().to_owned(), v.trim().to_owned()));
            }
        }
        let len: usize = headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case("content-length"))
            .and_then(|(_, v)| v.parse().ok())
            .unwrap_or(0);
        let mut raw = vec![0u8; len];
        if r.read_exact(&mut raw).is_err() {
            return;
        }
        let (status, answer) = {
            let mut g = st.lock().expect("state");
            let body: Value = serde_json::from_slice(&raw).unwrap_or(Value::Null);
            let mut hit = Hit {
                at: Instant::now(),
                path: path.clone(),
                headers: headers.clone(),
                raw: raw.clone(),
                body: body.clone(),
                status: 200,
                refusal: None,
            };
            let (status, answer) = if g.fail_first > 0 {
                g.fail_first -= 1;
                (500, json!({"error": "failing on purpose"}))
            } else {
                match check(&mut g, &method, &path, &headers, &raw, &body) {
                    Ok(a) => (200, a),
                    Err((code, why)) => {
                        hit.refusal = Some(why.clone());
                        (code, json!({"ok": false, "error": why}))
                    }
                }
            };
            hit.status = status;
            g.hits.push(hit);
            (status, answer)
        };
        let text = answer.to_string();
        let out = format!(
            "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{text}",
            text.len()
        );
        if s.write_all(out.as_bytes()).is_err() {
            return;
        }
    }
}

type Checked = Result<Value, (u16, String)>;

fn bad(why: impl Into<String>) -> (u16, String) {
    (400, why.into())
}

fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

fn check(
    st: &mut State,
    method: &str,
    path: &str,
    headers: &[(String, String)],
    raw: &[u8],
    body: &Value,
) -> Checked {
    if method != "POST" {
        return Err(bad(format!("method {method}")));
    }
    if !header(headers, "content-type").is_some_and(|c| c.starts_with("application/json")) {
        return Err(bad("not JSON"));
    }
    match st.api.clone() {
        Api::Ntfy { token } => ntfy(token, path, headers, body),
        Api::Telegram { token, chat } => {
            let Some(method) = path.strip_prefix(&format!("/bot{token}/")) else {
                return Err((401, "Unauthorized".into()));
            };
            telegram(st, method, &chat, body)
        }
        Api::Webhook { key } => webhook(&key, headers, raw, body),
    }
}

/// ntfy's JSON publish (docs.ntfy.sh/publish/#publish-as-json).
fn ntfy(token: Option<String>, path: &str, headers: &[(String, String)], b: &Value) -> Checked {
    if path != "/" {
        return Err(bad("JSON publishing goes to the root URL"));
    }
    if let Some(t) = token {
        if header(headers, "authorization") != Some(&format!("Bearer {t}")) {
            return Err((401, "unauthorized".into()));
        }
    }
    let topic = b["topic"].as_str().ok_or(bad("topic is required"))?;
    for k in ["title", "message", "click"] {
        if !b[k].is_null() && !b[k].is_string() {
            return Err(bad(format!("{k} must be a string")));
        }
    }
    if let Some(p) = b.get("priority") {
        if !p.as_u64().is_some_and(|p| (1..=5).contains(&p)) {
            return Err(bad("priority must be 1..5"));
        }
    }
    let actions = b["actions"].as_array().cloned().unwrap_or_default();
    if actions.len() > 3 {
        return Err(bad("at most 3 actions"));
    }
    for a in &actions {
        if !["view", "http", "broadcast"].contains(&a["action"].as_str().unwrap_or("")) {
            return Err(bad("action must be view, http or broadcast"));
        }
        if !a["label"].is_string() {
            return Err(bad("an action needs a label"));
        }
        if a["action"] == "view" && !a["url"].as_str().is_some_and(|u| u.starts_with("http")) {
            return Err(bad("a view action needs a URL"));
        }
    }
    Ok(json!({"id": "x1", "time": 1, "event": "message", "topic": topic, "message": b["message"]}))
}

/// Telegram's Bot API (core.telegram.org/bots/api#sendmessage, #editmessagetext).
fn telegram(st: &mut State, method: &str, chat: &str, b: &Value) -> Checked {
    if b["chat_id"].as_str() != Some(chat) {
        return Err(bad("Bad Request: chat not found"));
    }
    let text = b["text"].as_str().unwrap_or("");
    if text.is_empty() || text.chars().count() > 4096 {
        return Err(bad("Bad Request: message text is empty or too long"));
    }
    if let Some(m) = b.get("reply_markup") {
        let rows = m["inline_keyboard"]
            .as_array()
            .ok_or(bad("reply_markup: inline_keyboard must be an array"))?;
        for row in rows {
            for button in row
                .as_array()
                .ok_or(bad("a keyboard row must be an array"))?
            {
                if !button["text"].is_string()
                    || !button["url"]
                        .as_str()
                        .is_some_and(|u| u.starts_with("http"))
                {
                    return Err(bad("a button needs text and an http(s) url"));
                }
            }
        }
    }
    match method {
        "sendMessage" => {
            st.next_message += 1;
            st.sent.push(st.next_message);
            Ok(
                json!({"ok": true, "result": {"message_id": st.next_message, "chat": {"id": chat}, "text": text}}),
            )
        }
        "editMessageText" => {
            let id = b["message_id"]
                .as_i64()
                .ok_or(bad("message_id is required"))?;
            if !st.sent.contains(&id) {
                return Err(bad("Bad Request: message to edit not found"));
            }
            Ok(json!({"ok": true, "result": {"message_id": id, "text": text}}))
        }
        other => Err((404, format!("Not Found: method {other}"))),
    }
}

/// The guard's webhook signature: `t=<unix s>,v1=<hex HMAC-SHA256(key, "<t>." + body)>`.
pub fn verify_signature(
    key: &str,
    header: &str,
    body: &[u8],
    max_age_s: u64,
) -> Result<(), String> {
    let mut t = None;
    let mut v1 = None;
    for part in header.split(',') {
        match part.split_once('=') {
            Some(("t", x)) => t = x.parse::<u64>().ok(),
            Some(("v1", x)) => v1 = hex::decode(x).ok(),
            _ => {}
        }
    }
    let (t, v1) = t.zip(v1).ok_or("malformed signature header")?;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_secs();
    if now.abs_diff(t) > max_age_s {
        return Err("stale timestamp (a replay?)".into());
    }
    let mut mac = Hmac::<sha2::Sha256>::new_from_slice(key.as_bytes()).expect("key");
    mac.update(format!("{t}.").as_bytes());
    mac.update(body);
    mac.verify_slice(&v1)
        .map_err(|_| "signature mismatch".to_owned())
}

fn webhook(key: &str, headers: &[(String, String)], raw: &[u8], b: &Value) -> Checked {
    let sig = header(headers, "x-sanctum-signature").ok_or((401, "unsigned".to_owned()))?;
    verify_signature(key, sig, raw, 300).map_err(|e| (401, e))?;
    if header(headers, "x-sanctum-delivery").is_none() {
        return Err(bad("no delivery id"));
    }
    if !b["event"].is_string() {
        return Err(bad("no event"));
    }
    Ok(json!({"received": true}))
}

/// `serve` with its web prompt and `notify` (a `[notify]` section and its channels) in its
/// config, local time UTC (the quiet-hours tests compute their window in UTC).
pub fn serve_with(request_ms: u64, notify: &str) -> super::web::Web {
    use super::guard::{Serve, World};
    let world = World::new(super::tools::NEW, super::web::TOKEN, &[]);
    let cfg = world.write_config(&format!(
        "[deadlines]\nrequest_ms = {request_ms}\n\n{notify}"
    ));
    let serve = Serve::start(
        &world,
        &[("TZ", "UTC")],
        &[
            "--config",
            cfg.to_str().expect("utf8"),
            "--web-listen",
            "127.0.0.1:0",
        ],
    );
    let port = serve.listen_addr("web prompt").port();
    super::web::Web {
        world,
        serve,
        port,
        base: format!("http://127.0.0.1:{port}"),
    }
}

/// Writes `text` as a 0600 secret file in a fresh temp dir kept alive by the returned guard.
pub fn secret(text: &str) -> (tempfile::TempDir, String) {
    let d = tempfile::tempdir().expect("tmp");
    let p = d.path().join("secret");
    super::process::write_secret(&p, text);
    // The guard may run as another uid: it must be able to reach and read the file.
    if super::process::guard_uid().is_some() {
        super::process::give_to_guard(d.path());
    }
    (d, p.to_str().expect("utf8").to_owned())
}

/// A URL whose server accepts connections (the kernel's backlog) and never answers: a channel
/// that hangs. Nothing listens once the returned listener is dropped.
pub fn silent_url() -> (TcpListener, String) {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}", l.local_addr().expect("addr"));
    (l, url)
}
