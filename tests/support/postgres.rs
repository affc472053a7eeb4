//! A throwaway PostgreSQL server from Debian's packages (tests/setup.sh installs them): a
//! cluster in a temp dir on a free loopback port, `trust` sign-in, run as the `postgres`
//! user when the tests run as root (the server refuses root), stopped and removed on drop.
//! `stop`/`start` take it away and bring it back on the same port and data.
//! [`Postgres::start_tls`] serves TLS only (`ssl=on`, `hostssl` the one TCP entry of
//! `pg_hba.conf`): a plain-text client over TCP is refused.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// Where Debian puts the server's programs.
fn bin_dir() -> PathBuf {
    let root = Path::new("/usr/lib/postgresql");
    let mut versions: Vec<PathBuf> = std::fs::read_dir(root)
        .unwrap_or_else(|e| {
            panic!(
                "{}: {e} (tests/setup.sh installs postgresql)",
                root.display()
            )
        })
        .filter_map(|d| d.ok().map(|d| d.path().join("bin")))
        .filter(|b| b.join("pg_ctl").exists())
        .collect();
    versions.sort();
    versions
        .pop()
        .expect("a PostgreSQL server under /usr/lib/postgresql")
}

/// A running throwaway server.
pub struct Postgres {
    dir: tempfile::TempDir,
    bin: PathBuf,
    pub port: u16,
    /// Whether the server was given a certificate and refuses plain text over TCP.
    tls: bool,
}

impl Postgres {
    /// initdb + start on a free port; returns once it accepts connections.
    pub fn start() -> Postgres {
        let pg = Postgres::init();
        pg.start_again();
        pg
    }

    /// [`Postgres::start`] serving TLS with this certificate and key (PEM) and refusing plain
    /// text over TCP; the test's own client goes through the Unix socket.
    pub fn start_tls(cert_pem: &str, key_pem: &str) -> Postgres {
        let mut pg = Postgres::init();
        pg.tls = true;
        let data = pg.data();
        std::fs::write(data.join("server.crt"), cert_pem).expect("server.crt");
        std::fs::write(data.join("server.key"), key_pem).expect("server.key");
        std::fs::write(
            data.join("pg_hba.conf"),
            "local all all trust\nhostssl all all 127.0.0.1/32 trust\n",
        )
        .expect("pg_hba.conf");
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(data.join("server.key"), PermissionsExt::from_mode(0o600))
            .expect("key mode");
        if nix::unistd::getuid().is_root() {
            let st = Command::new("chown")
                .args([
                    "postgres:postgres",
                    "server.crt",
                    "server.key",
                    "pg_hba.conf",
                ])
                .current_dir(&data)
                .status()
                .expect("chown");
            assert!(st.success(), "chown to postgres");
        }
        pg.start_again();
        pg
    }

    /// A new cluster, not started.
    fn init() -> Postgres {
        let dir = tempfile::Builder::new()
            .prefix("sg-pg-")
            .tempdir()
            .expect("tempdir");
        let pg = Postgres {
            bin: bin_dir(),
            port: free_port(),
            dir,
            tls: false,
        };
        if nix::unistd::getuid().is_root() {
            let st = Command::new("chown")
                .args(["-R", "postgres:postgres"])
                .arg(pg.dir.path())
                .status()
                .expect("chown");
            assert!(st.success(), "chown to postgres");
        }
        let data = pg.data();
        pg.run(
            "initdb",
            &[
                "-D",
                data.to_str().expect("utf8"),
                "-A",
                "trust",
                "-U",
                "postgres",
                "--no-sync",
                "-E",
                "UTF8",
            ],
        );
        pg
    }

    fn data(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// Runs one of the server's programs, as `postgres` when we are root; panics on failure.
    fn run(&self, prog: &str, args: &[&str]) {
        let exe = self.bin.join(prog);
        let mut cmd = if nix::unistd::getuid().is_root() {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(&exe);
            c
        } else {
            Command::new(&exe)
        };
        let out = cmd.args(args).output().expect(prog);
        assert!(
            out.status.success(),
            "{prog} {args:?}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// Starts the server (again) on its port and data; waits until it accepts connections.
    pub fn start_again(&self) {
        let opts = format!(
            "-p {} -k {} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200{}",
            self.port,
            self.dir.path().display(),
            if self.tls { " -c ssl=on" } else { "" }
        );
        let log = self.dir.path().join("server.log");
        self.run(
            "pg_ctl",
            &[
                "-D",
                self.data().to_str().expect("utf8"),
                "-o",
                &opts,
                "-l",
                log.to_str().expect("utf8"),
                "-w",
                "-t",
                "30",
                "start",
            ],
        );
        let start = Instant::now();
        // On a thread of its own: the client's runtime must not start inside a test's.
        let url = self.local_url();
        let up = move || {
            let url = url.clone();
            std::thread::spawn(move || postgres::Client::connect(&url, postgres::NoTls).is_ok())
                .join()
                .unwrap_or(false)
        };
        while !up() {
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "postgres never up"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Stops the server (fast: open connections are cut, as in a crash of the network).
    pub fn stop(&self) {
        self.run(
            "pg_ctl",
            &[
                "-D",
                self.data().to_str().expect("utf8"),
                "-m",
                "fast",
                "-w",
                "stop",
            ],
        );
    }

    /// The URL guards are configured with (plain text: a loopback test server).
    pub fn url(&self) -> String {
        format!(
            "postgres://postgres@127.0.0.1:{}/postgres?sslmode=disable",
            self.port
        )
    }

    /// The URL without its TLS options, for a test to add its own.
    pub fn bare_url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }

    /// The server's Unix socket (`local … trust`), reachable whatever TCP demands.
    fn local_url(&self) -> String {
        format!(
            "host={} port={} user=postgres dbname=postgres",
            self.dir.path().display(),
            self.port
        )
    }

    /// A client of the test's own (to read or change rows behind the guards' backs), over
    /// the Unix socket; not for async tests (its own runtime cannot start inside theirs).
    pub fn client(&self) -> postgres::Client {
        postgres::Client::connect(&self.local_url(), postgres::NoTls).expect("connect")
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        let data = self.data();
        let _ = std::panic::catch_unwind(|| {
            let exe = self.bin.join("pg_ctl");
            let mut cmd = if nix::unistd::getuid().is_root() {
                let mut c = Command::new("runuser");
                c.args(["-u", "postgres", "--"]).arg(&exe);
                c
            } else {
                Command::new(&exe)
            };
            let _ = cmd
                .args(["-D", data.to_str().unwrap_or(""), "-m", "immediate", "stop"])
                .output();
        });
    }
}

/// A loopback port free now (the kernel's choice).
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("free port")
        .port()
}
