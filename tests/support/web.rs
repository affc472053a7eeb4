//! Shared by the web tests: a real `serve` with its web prompt on a free port, a minimal
//! HTTP/1.1 client over std TCP (so tests can also be slow, partial or oversized on
//! purpose), sign-in with the one-time link, and socket clients that wait for a decision.
use super::socket::*;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// The socket token of the web tests' world.
pub const TOKEN: &str = "web-test-socket-token-0123456789";

/// The web prompt's listen address: a port of the kernel's choosing, read back from serve's
/// log ([`Serve::listen_addr`]). A port picked free in advance can be taken by a test running
/// beside this one before serve binds it.
const ANY_PORT: &str = "127.0.0.1:0";

/// A running `serve` with its web prompt.
pub struct Web {
    pub world: World,
    pub serve: Serve,
    pub port: u16,
    pub base: String,
}

/// One HTTP response.
#[derive(Debug)]
pub struct Resp {
    pub status: u16,
    pub head: String,
    pub body: String,
}

impl Resp {
    /// The body as JSON (a non-JSON body panics with the response).
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {} {}", self.status, self.body))
    }
    /// The value of header `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<String> {
        self.head.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case(name).then(|| v.trim().to_owned())
        })
    }
}

/// A signed-in client.
#[derive(Debug, Clone)]
pub struct Login {
    pub cookie: String,
    pub csrf: String,
    pub identity: String,
}

impl Login {
    /// The session a successful `POST /api/login` answer starts.
    pub fn from_answer(r: &Resp) -> Login {
        assert_eq!(r.status, 200, "login: {r:?}");
        let set = r.header("set-cookie").expect("set-cookie");
        let v = r.json();
        Login {
            cookie: set.split(';').next().expect("cookie").to_owned(),
            csrf: v["csrf"].as_str().expect("csrf").into(),
            identity: v["identity"].as_str().expect("identity").into(),
        }
    }
}

impl Web {
    /// Starts serve with its web prompt; `request_ms` is the deadline of `request` frames.
    pub fn start(request_ms: u64) -> Web {
        Self::start_with(request_ms, &[], "http")
    }

    /// [`Web::start`] with more `serve` flags; `scheme` is what the base URL uses.
    pub fn start_with(request_ms: u64, extra: &[&str], scheme: &str) -> Web {
        Self::start_configured(request_ms, "", extra, scheme)
    }

    /// [`Web::start_with`] with more config file text (whole sections, e.g. `[web]\n…`).
    pub fn start_configured(request_ms: u64, config: &str, extra: &[&str], scheme: &str) -> Web {
        let world = World::new(NEW, TOKEN, &[]);
        let cfg = world.write_config(&format!("[deadlines]\nrequest_ms = {request_ms}\n{config}"));
        let mut args = vec![
            "--config",
            cfg.to_str().expect("utf8"),
            "--web-listen",
            ANY_PORT,
        ];
        args.extend_from_slice(extra);
        let serve = Serve::start(&world, &[], &args);
        let port = serve.listen_addr("web prompt").port();
        Web {
            world,
            serve,
            port,
            base: format!("{scheme}://127.0.0.1:{port}"),
        }
    }

    /// `serve` on `world` with its web prompt, as the approver of the test gateway on
    /// `gateway_port` (token [`super::node::GW_TOKEN`] from a file), with `extra` flags.
    /// Returns once the approver is connected.
    pub fn approver_of(world: World, gateway_port: u16, extra: &[&str]) -> Web {
        let token = world.tmp.path().join("gw-token");
        super::process::write_secret(&token, super::node::GW_TOKEN);
        let url = format!("ws://127.0.0.1:{gateway_port}");
        let mut args = vec![
            "--web-listen",
            ANY_PORT,
            "--gateway-url",
            &url,
            "--gateway-token-file",
            token.to_str().expect("utf8"),
            // The test gateways run without the plugin and chat-directive settings
            // (tests/gateway_posture.rs checks the posture itself).
            "--allow-unsafe-posture",
        ];
        args.extend_from_slice(extra);
        let serve = Serve::start(&world, &[], &args);
        let port = serve.listen_addr("web prompt").port();
        let web = Web {
            world,
            serve,
            port,
            base: format!("http://127.0.0.1:{port}"),
        };
        wait_until("the approver to connect", Duration::from_secs(60), || {
            web.serve
                .log()
                .contains("gateway approver connected")
                .then_some(())
        });
        web
    }

    /// Stops serve and starts it again on the same port, state and config (plain HTTP, no
    /// extra flags): every web session is gone, as after a real restart.
    pub fn restart(&mut self) {
        self.serve.stop();
        let cfg = self.world.tmp.path().join("guard.toml");
        let listen = format!("127.0.0.1:{}", self.port);
        self.serve = Serve::start(
            &self.world,
            &[],
            &[
                "--config",
                cfg.to_str().expect("utf8"),
                "--web-listen",
                &listen,
            ],
        );
    }

    /// The `Host` header value a browser sends.
    /// The HTTP client of this prompt.
    pub fn client(&self) -> WebClient {
        WebClient { port: self.port }
    }

    pub fn host(&self) -> String {
        self.client().host()
    }

    /// The `Origin` header value a browser on the page sends.
    pub fn origin(&self) -> String {
        self.client().origin()
    }

    /// Opens the page's event stream (`/api/events`) as `who`; returns it once the guard has
    /// answered 200.
    pub fn event_stream(&self, who: &Login) -> Events {
        let mut s = TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        let req = format!(
            "GET /api/events HTTP/1.1\r\nHost: {}\r\nCookie: {}\r\n\r\n",
            self.host(),
            who.cookie
        );
        s.write_all(req.as_bytes()).unwrap();
        s.set_read_timeout(Some(Duration::from_millis(200)))
            .unwrap();
        let mut ev = Events {
            s,
            buf: String::new(),
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        let head = loop {
            if let Some(end) = ev.buf.find("\r\n\r\n") {
                break ev.buf.drain(..end + 4).collect::<String>();
            }
            assert!(
                Instant::now() < deadline && ev.fill(),
                "no answer to /api/events: {}",
                ev.buf
            );
        };
        assert!(head.starts_with("HTTP/1.1 200"), "{head}");
        ev
    }

    /// Where serve writes the one-time login link.
    pub fn link_file(&self) -> PathBuf {
        self.world.guard_state.join("web-login-link")
    }

    /// The token of the current login link file.
    pub fn link_token(&self) -> String {
        let link = std::fs::read_to_string(self.link_file()).expect("login link file");
        link.trim()
            .rsplit_once("#t=")
            .expect("token in link")
            .1
            .to_owned()
    }

    /// A raw exchange: `extra` header lines (each without CRLF), optional body.
    pub fn raw(&self, method: &str, path: &str, extra: &[String], body: Option<&[u8]>) -> Resp {
        self.client().raw(method, path, extra, body)
    }

    /// [`WebClient::raw_from`].
    pub fn raw_from(
        &self,
        src: Option<std::net::Ipv4Addr>,
        method: &str,
        path: &str,
        extra: &[String],
        body: Option<&[u8]>,
    ) -> Resp {
        self.client().raw_from(src, method, path, extra, body)
    }

    /// [`WebClient::call`].
    pub fn call(
        &self,
        method: &str,
        path: &str,
        login: Option<&Login>,
        body: Option<&str>,
    ) -> Resp {
        self.client().call(method, path, login, body)
    }

    /// [`WebClient::login_from`].
    pub fn login_from(&self, src: std::net::Ipv4Addr, body: &serde_json::Value) -> Resp {
        self.client().login_from(src, body)
    }

    /// [`WebClient::login_with`].
    pub fn login_with(&self, token: &str) -> Resp {
        self.client().login_with(token)
    }

    /// Signs in with the link file's token.
    pub fn login(&self) -> Login {
        Login::from_answer(&self.login_with(&self.link_token()))
    }

    /// A second person (or browser): a new link from the command line, then its sign-in.
    pub fn login_new_link(&self) -> Login {
        let link = self.new_link();
        Login::from_answer(&self.login_with(link.rsplit_once("#t=").expect("t").1))
    }

    /// A new login link from the command line (what a person runs while serve runs).
    pub fn new_link(&self) -> String {
        let cfg = self.world.tmp.path().join("guard.toml");
        let cfg = if cfg.exists() {
            cfg
        } else {
            std::path::PathBuf::new()
        };
        let (code, out, err) = guard_cli(
            &[
                "web",
                "login-link",
                "--state-dir",
                self.world.guard_state.to_str().expect("utf8"),
            ],
            // The guard's own config: a fleet's accounts are in its database.
            &[("SANCTUM_CONFIG", cfg.to_str().expect("utf8"))],
        );
        assert_eq!(code, 0, "web login-link: {err}");
        out.trim().to_owned()
    }

    /// The command line on this guard's state dir with its config (`SANCTUM_CONFIG`, so a
    /// fleet guard's commands find the fleet's database): exit code, stdout, stderr.
    pub fn cli_configured(&self, args: &[&str]) -> (i32, String, String) {
        let cfg = self.world.tmp.path().join("guard.toml");
        let st = self.world.guard_state.to_str().unwrap().to_owned();
        let mut all = args.to_vec();
        all.extend(["--state-dir", &st]);
        super::process::guard_cli(&all, &[("SANCTUM_CONFIG", cfg.to_str().unwrap())])
    }

    /// Sends a `request` frame on a thread; the handle gives the reply line.
    pub fn ask(&self, id: &str, command: &str) -> std::thread::JoinHandle<String> {
        let sock = self.world.socket();
        let line = request_line(TOKEN, id, command);
        std::thread::spawn(move || raw_exchange(&sock, line.as_bytes(), false))
    }

    /// The pending requests as the signed-in page lists them.
    pub fn pending(&self, login: &Login) -> Vec<serde_json::Value> {
        self.client().pending(login)
    }

    /// Waits until the request with source id `req_id` is pending; returns its entry.
    pub fn wait_pending(&self, login: &Login, req_id: &str) -> serde_json::Value {
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(20) {
            if let Some(e) = self
                .pending(login)
                .into_iter()
                .find(|e| e["requestId"] == req_id)
            {
                return e;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!(
            "request {req_id} never pending; serve log:\n{}",
            self.serve.log()
        );
    }

    /// Posts a decision for inbox entry `id`.
    pub fn decide(&self, login: &Login, id: &str, body: serde_json::Value) -> Resp {
        self.client().decide(login, id, body)
    }

    /// The audit log as it is now.
    pub fn audit(&self) -> String {
        std::fs::read_to_string(self.world.audit_path()).unwrap_or_default()
    }
}

/// The minimal HTTP/1.1 client of a web prompt on 127.0.0.1:`port` (a test's own `serve`,
/// or a deployment's published port).
#[derive(Debug, Clone, Copy)]
pub struct WebClient {
    pub port: u16,
}

impl WebClient {
    pub fn host(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// The `Origin` header value a browser on the page sends.
    pub fn origin(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// A raw exchange: `extra` header lines (each without CRLF), optional body.
    pub fn raw(&self, method: &str, path: &str, extra: &[String], body: Option<&[u8]>) -> Resp {
        self.raw_from(None, method, path, extra, body)
    }

    /// [`Web::raw`] from the loopback source address `src` (any 127.x.y.z), as a local
    /// process spraying from many addresses would.
    pub fn raw_from(
        &self,
        src: Option<std::net::Ipv4Addr>,
        method: &str,
        path: &str,
        extra: &[String],
        body: Option<&[u8]>,
    ) -> Resp {
        let mut s = match src {
            None => TcpStream::connect(("127.0.0.1", self.port)).expect("connect web"),
            Some(ip) => connect_from(ip, self.port),
        };
        s.set_read_timeout(Some(Duration::from_secs(20)))
            .expect("timeout");
        let mut req = format!("{method} {path} HTTP/1.1\r\nConnection: close\r\n");
        for h in extra {
            req.push_str(h);
            req.push_str("\r\n");
        }
        if let Some(b) = body {
            req.push_str(&format!("Content-Length: {}\r\n", b.len()));
        }
        req.push_str("\r\n");
        let mut bytes = req.into_bytes();
        if let Some(b) = body {
            bytes.extend_from_slice(b);
        }
        // The server may answer (413) and close before the whole body is written.
        let _ = s.write_all(&bytes);
        let mut out = Vec::new();
        let _ = s.read_to_end(&mut out);
        parse(&out)
    }

    /// A browser-like request: our Host and Origin, the cookie and CSRF token of `login`.
    pub fn call(
        &self,
        method: &str,
        path: &str,
        login: Option<&Login>,
        body: Option<&str>,
    ) -> Resp {
        let mut h = vec![format!("Host: {}", self.host())];
        if method != "GET" {
            h.push(format!("Origin: {}", self.origin()));
            h.push("Content-Type: application/json".into());
        }
        if let Some(l) = login {
            h.push(format!("Cookie: {}", l.cookie));
            h.push(format!("X-CSRF-Token: {}", l.csrf));
        }
        self.raw(method, path, &h, body.map(str::as_bytes))
    }

    /// `POST /api/login` with `body` from the loopback address `src`.
    pub fn login_from(&self, src: std::net::Ipv4Addr, body: &serde_json::Value) -> Resp {
        let h = vec![
            format!("Host: {}", self.host()),
            format!("Origin: {}", self.origin()),
            "Content-Type: application/json".into(),
        ];
        let b = body.to_string();
        self.raw_from(Some(src), "POST", "/api/login", &h, Some(b.as_bytes()))
    }

    /// Signs in with `token`.
    pub fn login_with(&self, token: &str) -> Resp {
        self.call(
            "POST",
            "/api/login",
            None,
            Some(&serde_json::json!({ "token": token }).to_string()),
        )
    }

    /// The pending requests as the signed-in page lists them.
    pub fn pending(&self, login: &Login) -> Vec<serde_json::Value> {
        let r = self.call("GET", "/api/requests?state=pending", Some(login), None);
        assert_eq!(r.status, 200, "{r:?}");
        r.json()["requests"].as_array().cloned().unwrap_or_default()
    }

    /// Posts a decision for inbox entry `id`.
    pub fn decide(&self, login: &Login, id: &str, body: serde_json::Value) -> Resp {
        self.call(
            "POST",
            &format!("/api/requests/{id}/decision"),
            Some(login),
            Some(&body.to_string()),
        )
    }
}

/// Splits a raw HTTP/1.1 response into status, head and (de-chunked) body.
/// A TCP connection to 127.0.0.1:`port` bound first to the source address `src`.
fn connect_from(src: std::net::Ipv4Addr, port: u16) -> TcpStream {
    use socket2::{Domain, Socket, Type};
    let s = Socket::new(Domain::IPV4, Type::STREAM, None).expect("socket");
    s.bind(&std::net::SocketAddr::from((src, 0)).into())
        .expect("bind source");
    s.connect(&std::net::SocketAddr::from(([127, 0, 0, 1], port)).into())
        .expect("connect web");
    s.into()
}

fn parse(out: &[u8]) -> Resp {
    let text = String::from_utf8_lossy(out).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let chunked = head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked");
    let body = if chunked {
        dechunk(body)
    } else {
        body.to_owned()
    };
    Resp {
        status,
        head: head.to_owned(),
        body,
    }
}

/// Joins a chunked transfer-encoded body.
fn dechunk(mut s: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = s.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if n == 0 || rest.len() < n {
            break;
        }
        out.push_str(&rest[..n]);
        s = rest[n..].trim_start_matches("\r\n");
    }
    out
}

/// A page's event stream, read frame by frame (what a frame holds is consumed with it).
pub struct Events {
    s: TcpStream,
    buf: String,
}

impl Events {
    /// The data of the next `event: name` frame whose data contains `needle`; frames before
    /// it are skipped. Panics after `within`, with what the stream said, or when it closes.
    pub fn next(&mut self, name: &str, needle: &str, within: Duration) -> serde_json::Value {
        let deadline = Instant::now() + within;
        let head = format!("event: {name}\n");
        let mut seen = String::new();
        loop {
            while let Some(end) = self.buf.find("\n\n") {
                let frame: String = self.buf.drain(..end + 2).collect();
                let data: String = frame
                    .lines()
                    .filter_map(|l| l.strip_prefix("data: "))
                    .collect();
                if frame.contains(&head) && data.contains(needle) {
                    return serde_json::from_str(&data).expect("event data is JSON");
                }
                seen.push_str(&frame);
            }
            assert!(
                Instant::now() < deadline && self.fill(),
                "no `{name}` event with {needle} within {within:?}: {seen}{}",
                self.buf
            );
        }
    }

    /// Reads what has arrived (waits up to the socket's read timeout); false once closed.
    fn fill(&mut self) -> bool {
        let mut chunk = [0u8; 16384];
        match self.s.read(&mut chunk) {
            Ok(0) => false,
            Ok(n) => {
                self.buf.push_str(&String::from_utf8_lossy(&chunk[..n]));
                true
            }
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                true
            }
            Err(e) => panic!("event stream: {e}"),
        }
    }
}
