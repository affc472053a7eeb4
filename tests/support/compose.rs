//! The compose deployment for real: images built with podman from a locally imported Debian
//! base (no registry here), the stack brought up by the `docker-compose` Debian package through
//! podman's Docker-compatible API socket (docs/compose-on-podman.md), commands run inside its
//! containers, and everything torn down (containers, volumes, networks, the API service) when
//! the [`Stack`] is dropped.

pub use super::compose_images::{base_image, build_images, image_size, stage_context};
use super::process::{guard_bin, output_text, podman_lock, port_holders, wait_until, ChildGuard};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

/// The Debian base every image is built from here (`BASE_IMAGE`).
pub const BASE_IMAGE: &str = "localhost/debian:bookworm";
/// The OpenClaw version the agent image carries (its .cache install is the build input).
pub const OPENCLAW: &str = "2026.9.6";
/// Where tests/data/compose/e2e.yml puts the scripted model (on the egress network).
pub const MODEL_ADDR: &str = "172.30.78.10:8080";
/// The model key the deployment is given as a file; the scripted model requires it
/// (`SCRIPTED_MODEL_KEY` in tests/data/compose/e2e.yml).
pub const MODEL_KEY: &str = "sk-e2e-file-secret-51c7";
/// The egress proxy's route to the scripted model, the agent's `baseUrl` for it.
pub const MODEL_ROUTE: &str = "http://172.30.75.3:3128/providers/fake/v1";
/// The site's network (tests/data/compose/site.yml names it), made by podman itself: not
/// isolated from the compose networks, as those made through the Docker API are.
const SITE_NET: &str = "sanctum-egress-site";
/// What the site of [`Stack::with_site`] answers before the host and path.
pub const SITE_MARKER: &str = "sanctum-site-7e3f";
/// The images, as the compose file names them.
pub const IMAGES: [(&str, &str); 3] = [
    ("sanctum/guard:local", "docker/guard.Dockerfile"),
    ("sanctum/agent:local", "docker/agent.Dockerfile"),
    ("sanctum/scout:local", "docker/scout.Dockerfile"),
];

pub(super) fn repo() -> PathBuf {
    super::process::repo_root()
}

/// Runs `cmd`; panics with its output unless it succeeds.
pub(super) fn run(cmd: &mut Command) -> Output {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed:\n{}",
        output_text(&out)
    );
    out
}

/// One running stack: the podman API service, the compose project, its staged files.
pub struct Stack {
    pub dir: tempfile::TempDir,
    pub project: String,
    pub compose_file: PathBuf,
    /// Further compose files merged over it (`-f` each, in order).
    pub overrides: Vec<PathBuf>,
    /// Extra environment for compose's own interpolation.
    pub env: Vec<(String, String)>,
    /// Networks made outside compose, removed after it is down.
    networks: Vec<String>,
    socket: PathBuf,
    _service: ChildGuard,
    /// Its names, addresses and published ports are this run's alone (`podman_lock`).
    _lock: nix::fcntl::Flock<std::fs::File>,
}

impl Stack {
    /// Starts podman's API service on a private socket and stages the context; builds nothing.
    pub fn new(project: &str) -> Stack {
        let lock = podman_lock();
        let dir = tempfile::Builder::new()
            .prefix("sanctum-compose")
            .tempdir()
            .unwrap();
        let socket = dir.path().join("podman.sock");
        let service = ChildGuard::spawn_group(
            "podman-service",
            Command::new("podman")
                .args(["system", "service", "--time=0"])
                .arg(format!("unix://{}", socket.display()))
                .stdout(Stdio::null())
                .stderr(std::fs::File::create(dir.path().join("podman-service.log")).unwrap()),
        );
        wait_until("podman's API socket", Duration::from_secs(60), || {
            socket.exists().then_some(())
        });
        let ctx = stage_context(dir.path());
        Stack {
            compose_file: ctx.join("compose/docker-compose.yml"),
            overrides: Vec::new(),
            env: Vec::new(),
            networks: Vec::new(),
            project: project.to_owned(),
            socket,
            dir,
            _service: service,
            _lock: lock,
        }
    }

    /// The staged build context (the compose file's `..`).
    pub fn context(&self) -> PathBuf {
        self.dir.path().join("context")
    }

    /// `docker-compose ARGS` against this stack, with podman's socket as DOCKER_HOST.
    pub fn compose(&self, args: &[&str]) -> Output {
        Command::new("timeout")
            .arg("300")
            .arg("docker-compose")
            .envs(self.env())
            .arg("-f")
            .arg(&self.compose_file)
            .args(
                self.overrides
                    .iter()
                    .flat_map(|f| [std::ffi::OsStr::new("-f"), f.as_os_str()]),
            )
            .args(args)
            .output()
            .expect("docker-compose (tests/setup.sh installs it)")
    }

    /// The environment compose runs in: podman's socket, the project, the test's settings.
    fn env(&self) -> Vec<(String, String)> {
        vec![
            (
                "DOCKER_HOST".into(),
                format!("unix://{}", self.socket.display()),
            ),
            ("COMPOSE_PROJECT_NAME".into(), self.project.clone()),
            // docker-compose 1.29 reads a `seccomp=FILE` option and sends the profile's text,
            // as Docker's API wants; podman 4.3's compatible API opens that text as a path and
            // fails. So under podman the agent keeps podman's default filter (Seccomp: 2);
            // seccomp/agent-profile.json itself is tested under podman by
            // tests/sandbox_agent_profile.rs. (Spelled unlike the file's own
            // `no-new-privileges:true`: compose refuses duplicate entries.)
            ("SANCTUM_SECCOMP_OPT".into(), "no-new-privileges".into()),
            ("SANCTUM_EGRESS_ALLOW".into(), "model.invalid:8080".into()),
        ]
        .into_iter()
        .filter(|(k, _)| !self.env.iter().any(|(o, _)| o == k))
        .chain(self.env.iter().cloned())
        .collect()
    }

    /// Adds the end-to-end pieces (tests/data/compose/e2e.yml): the scripted model as the
    /// provider behind the egress proxy's route `fake` (HTTPS with a certificate from a test
    /// CA the route trusts; the route added to the staged policy), and the agent's OpenClaw
    /// config `openclaw` (written next to the compose file).
    pub fn with_model(mut self, openclaw: &serde_json::Value) -> Stack {
        let dir = self.context().join("compose/e2e");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::copy(
            repo().join("tests/js/scripted_model.mjs"),
            dir.join("scripted_model.mjs"),
        )
        .unwrap();
        std::fs::write(dir.join("openclaw.json"), openclaw.to_string()).unwrap();
        let file = self.context().join("compose/e2e.yml");
        std::fs::copy(repo().join("tests/data/compose/e2e.yml"), &file).unwrap();
        self.overrides.push(file);
        let ca = model_certificates(&dir);
        let mut policy = std::fs::OpenOptions::new()
            .append(true)
            .open(self.context().join("compose/policy.toml"))
            .unwrap();
        std::io::Write::write_all(
            &mut policy,
            format!(
                "\n[[egress.routes]]\nname = \"fake\"\nupstream = \"https://{MODEL_ADDR}\"\n\
                 key_file = \"/run/provider-keys/model-api-key\"\nca_file = \"{ca}\"\n\
                 allow = [\"POST /v1/chat/completions\", \"GET /v1/models\"]\n"
            )
            .as_bytes(),
        )
        .unwrap();
        // The deployment's model key file, as the README asks for it: the egress service's
        // uid's (10001), 0400. Outside the build context: no image layer ever holds it.
        let key = self.dir.path().join("model-api-key");
        std::fs::write(&key, format!("{MODEL_KEY}\n")).unwrap();
        std::os::unix::fs::chown(&key, Some(10001), Some(10001)).unwrap();
        std::fs::set_permissions(&key, std::os::unix::fs::PermissionsExt::from_mode(0o400))
            .unwrap();
        self.env.push((
            "SANCTUM_MODEL_KEY_FILE".into(),
            key.to_string_lossy().into_owned(),
        ));
        self
    }

    /// Adds a web site no egress rule lists (tests/data/compose/site.yml): `site-one.test` and
    /// `site-two.test` in the proxy's hosts file, both the site at a public-range address on a
    /// network the proxy is not on, answering `SITE_MARKER <host> <path>` on port 80.
    pub fn with_site(mut self) -> Stack {
        let _ = Command::new("podman")
            .args(["network", "rm", "-f", SITE_NET])
            .output();
        run(Command::new("podman")
            .args(["network", "create", "--subnet", "198.20.77.0/24", SITE_NET])
            .stdout(Stdio::null()));
        self.networks.push(SITE_NET.to_owned());
        // A bridge name of its own: podman 4.3 reuses `podmanN` names, and the isolation rules
        // a removed compose network left for its name would drop the site's traffic (its CLI
        // has no --interface-name; its network file is where the name is kept).
        let conf = Path::new("/etc/containers/networks").join(format!("{SITE_NET}.json"));
        let mut net: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&conf).unwrap()).unwrap();
        net["network_interface"] = "sanctumsite0".into();
        std::fs::write(&conf, net.to_string()).unwrap();
        let file = self.context().join("compose/site.yml");
        std::fs::copy(repo().join("tests/data/compose/site.yml"), &file).unwrap();
        self.overrides.push(file);
        self
    }

    /// `up -d` without building (the images are built by [`build_images`]). Podman runs
    /// health checks from systemd timers, which a machine without systemd (this one) lacks:
    /// left alone, a `service_healthy` dependency would wait forever. So while compose
    /// waits, the guard's check is run every 2 s, as the timer would.
    pub fn up(&self) {
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let guard = self.container("guard");
        let ticker = {
            let stop = stop.clone();
            std::thread::spawn(move || {
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let _ = Command::new("podman")
                        .args(["healthcheck", "run", &guard])
                        .stdout(Stdio::null())
                        .stderr(Stdio::null())
                        .status();
                    std::thread::sleep(Duration::from_secs(2));
                }
            })
        };
        // A stack a killed earlier run left behind would hold the names and addresses.
        let _ = self.compose(&["down", "-v", "--remove-orphans", "-t", "2"]);
        let out = self.compose(&["up", "-d", "--no-build"]);
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let _ = ticker.join();
        assert!(
            out.status.success(),
            "compose up failed:\n{}\n{}\nlisteners on the published ports:\n{}{}",
            output_text(&out),
            self.logs(),
            port_holders(8484),
            port_holders(18790)
        );
    }

    /// The container of `service` (compose v1 names it `<project>_<service>_1`).
    pub fn container(&self, service: &str) -> String {
        format!("{}_{service}_1", self.project)
    }

    /// `podman exec` of a bash script in `service`'s container.
    pub fn exec(&self, service: &str, script: &str) -> Output {
        Command::new("podman")
            .args(["exec", &self.container(service), "bash", "-c", script])
            .output()
            .expect("podman exec")
    }

    /// A podman inspect field of `service`'s container.
    pub fn inspect(&self, service: &str, format: &str) -> String {
        let out = Command::new("podman")
            .args(["inspect", "--format", format, &self.container(service)])
            .output()
            .expect("podman inspect");
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    }

    /// Where a named volume of this project lies on the host.
    pub fn volume_path(&self, volume: &str) -> PathBuf {
        let out = run(Command::new("podman").args([
            "volume",
            "inspect",
            "--format",
            "{{.Mountpoint}}",
            &format!("{}_{volume}", self.project),
        ]));
        PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
    }

    /// The last `tail` lines of one service's log with their times (a failure message's
    /// closing lines: what that service did last, and when).
    pub fn service_log(&self, service: &str, tail: u32) -> String {
        let out = Command::new("podman")
            .args(["logs", "--timestamps", "--tail", &tail.to_string()])
            .arg(self.container(service))
            .output();
        match out {
            Ok(o) => format!("--- {service} (last {tail} lines):\n{}", output_text(&o)),
            Err(e) => format!("--- {service}: podman logs: {e}"),
        }
    }

    /// Why `service` is not running, for a failure message: its container state (exit code,
    /// error, OOM kill, times), every container of the project, the kernel's last OOM or
    /// kill lines, and the service's own last log lines (last, so a tail keeps them).
    pub fn why_not_running(&self, service: &str) -> String {
        let text = |cmd: &mut Command| match cmd.output() {
            Ok(o) => output_text(&o),
            Err(e) => format!("({e})"),
        };
        let state = text(Command::new("podman").args([
            "inspect",
            "--format",
            "{{json .State}}",
            &self.container(service),
        ]));
        let ps = text(Command::new("podman").args([
            "ps",
            "-a",
            "--filter",
            &format!("name={}_", self.project),
            "--format",
            "{{.Names}} {{.Status}}",
        ]));
        let kernel = text(Command::new("dmesg").args(["--ctime"]));
        let kernel: Vec<&str> = kernel
            .lines()
            .filter(|l| {
                let l = l.to_ascii_lowercase();
                l.contains("oom") || l.contains("killed process") || l.contains("segfault")
            })
            .collect();
        let kernel = &kernel[kernel.len().saturating_sub(10)..];
        format!(
            "--- {service} state: {state}\n--- containers:\n{ps}\n--- kernel (oom/kill):\n{}\n{}",
            kernel.join("\n"),
            self.service_log(service, 80)
        )
    }

    /// Every service's log, for failure messages.
    pub fn logs(&self) -> String {
        output_text(&self.compose(&["logs", "--no-color", "--tail", "150"]))
    }
}

/// The deployment's OpenClaw config (compose/openclaw.json) with the scripted model as its
/// provider, reached through the egress proxy's route.
pub fn openclaw_with_model() -> serde_json::Value {
    let path = repo().join("compose/openclaw.json");
    let mut cfg: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    // Turns in parallel beyond the CPU-derived default: the fan-out step keeps four busy.
    cfg["agents"] = serde_json::json!({"defaults":{"workspace":"/workspace","maxConcurrent":8,
        "model":{"primary":"fake/fake-1"}}});
    cfg["models"] = serde_json::json!({"mode":"merge","providers":{"fake":{
        "baseUrl": MODEL_ROUTE, "api":"openai-completions",
        // Not the key: the egress route drops whatever the agent sends and adds the key.
        "apiKey": "held-by-the-egress-proxy",
        "models":[{"id":"fake-1","name":"Fake","reasoning":false,"input":["text"],
                   "contextWindow":128000,"maxTokens":4096}]}}});
    cfg
}

/// The model key is nowhere in the agent's container: no process's environment, and no
/// file (read as the container's root, so every file counts, not only the agent's own).
pub fn assert_no_model_key_in_agent(stack: &Stack) {
    let environ = output_text(&stack.exec(
        "agent",
        "cat /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n'",
    ));
    assert!(!environ.is_empty(), "no environment was read");
    assert!(
        !environ.contains(MODEL_KEY),
        "the model key is in an environment"
    );
    let t = std::time::Instant::now();
    let grep = Command::new("podman")
        .args(["exec", "-u", "0", &stack.container("agent"), "bash", "-c"])
        .arg(format!(
            "grep -rlsF --devices=skip -e '{MODEL_KEY}' / --exclude-dir=proc --exclude-dir=sys; \
             find / -xdev -type f 2>/dev/null | wc -l"
        ))
        .output()
        .unwrap();
    let found = output_text(&grep);
    let files = found.lines().last().unwrap_or_default().trim().to_owned();
    assert!(
        found.lines().count() == 1 && files.parse::<u64>().unwrap_or(0) > 1000,
        "the model key is in the agent container's files (or none were read):\n{found}"
    );
    eprintln!(
        "compose: no model key in {files} files of the agent container ({:.1} s)",
        t.elapsed().as_secs_f64()
    );
}

/// A test CA and the scripted model's certificate for its address (in `dir`: `model-ca.pem`,
/// `model-cert.pem`, `model-cert-key.pem`); returns where the egress service sees the CA.
pub fn model_certificates(dir: &Path) -> &'static str {
    use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};
    let mut p = CertificateParams::new(Vec::<String>::new()).unwrap();
    p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca_key = KeyPair::generate().unwrap();
    std::fs::write(
        dir.join("model-ca.pem"),
        p.self_signed(&ca_key).unwrap().pem(),
    )
    .unwrap();
    let issuer = Issuer::new(p, ca_key);
    let (host, _) = MODEL_ADDR.split_once(':').unwrap();
    let leaf = CertificateParams::new(vec![host.to_owned()]).unwrap();
    let key = KeyPair::generate().unwrap();
    let cert = leaf.signed_by(&key, &issuer).unwrap();
    std::fs::write(dir.join("model-cert.pem"), cert.pem()).unwrap();
    // Read by the model container's uid (1000); a throwaway key of the test's own CA.
    std::fs::write(dir.join("model-cert-key.pem"), key.serialize_pem()).unwrap();
    for f in ["model-ca.pem", "model-cert.pem", "model-cert-key.pem"] {
        std::fs::set_permissions(
            dir.join(f),
            std::os::unix::fs::PermissionsExt::from_mode(0o644),
        )
        .unwrap();
    }
    "/etc/sanctum/model-ca.pem"
}

impl Drop for Stack {
    fn drop(&mut self) {
        let out = self.compose(&["down", "-v", "--remove-orphans", "-t", "5"]);
        if !out.status.success() {
            eprintln!("compose down failed:\n{}", output_text(&out));
        }
        for n in &self.networks {
            let _ = Command::new("podman")
                .args(["network", "rm", "-f", n])
                .output();
        }
    }
}
