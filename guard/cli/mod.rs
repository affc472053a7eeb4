//! The command line: argument parsing, output and exit codes only. Every subcommand calls
//! into the library; the exit codes are a contract (README "Command line").

use clap::{Args, Parser, Subcommand, ValueEnum};
use sanctum_guard::audit::{self, AuditLog};
use sanctum_guard::inbox::{self, InboxError, State, StateFilter, Store};
use sanctum_guard::policy;
use sanctum_guard::policy::request::DecisionKind;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

mod audit_cli;
mod egress;
mod grants;
mod inbox_fleet;
mod passkeys;
mod reviewers;

/// mimalloc: the policy core allocates many small strings per decision; glibc's allocator
/// cost ~25% of `decide()` (benches/decide.rs declares the same allocator).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser, Debug)]
#[command(
    name = "sanctum-guard",
    version,
    about = "A hardened sidecar guard for OpenClaw agents"
)]
struct Cli {
    /// Log format on stderr.
    #[arg(long, global = true, value_enum, default_value_t = LogFormat::Text)]
    log_format: LogFormat,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum LogFormat {
    Text,
    Json,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Validate a policy, or show the verdict for one command.
    #[command(subcommand)]
    Policy(PolicyCommand),
    /// Report what this machine can enforce (non-zero exit when a required layer is missing).
    Doctor {
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
    },
    /// Run one command (argv, not shell text) under Landlock + seccomp + no capabilities.
    Sandbox {
        /// Profile name: read-only, workspace-write, autonomous-read, autonomous-http-read, or one
        /// of the --policy file's.
        #[arg(long, default_value = "read-only")]
        profile: String,
        /// Policy file whose [profiles.*] to use (default: the built-in profiles).
        #[arg(long)]
        policy: Option<PathBuf>,
        /// Workspace directory (default: the current directory).
        #[arg(long)]
        workspace: Option<std::path::PathBuf>,
        /// `none` or comma-separated TCP ports (overrides the profile).
        #[arg(long)]
        network: Option<String>,
        /// Print the enforcement status as one JSON line on stderr before running.
        #[arg(long)]
        json_status: bool,
        /// Wall-clock limit in seconds (overrides the profile).
        #[arg(long)]
        timeout: Option<u64>,
        /// The command and its arguments.
        #[arg(last = true, required = true)]
        argv: Vec<String>,
    },
    /// Serve OpenClaw's exec-approvals socket (the sidecar).
    Serve(ServeCmdArgs),
    /// Be an OpenClaw node host: every `system.run` the gateway sends is decided by the guard.
    Node(NodeArgs),
    /// Act on the pending requests of a (running or stopped) guard.
    Inbox {
        #[command(subcommand)]
        cmd: InboxCmd,
        #[command(flatten)]
        opts: InboxOpts,
    },
    /// The bounded grants: list the live ones, revoke one (effective at once).
    Grants(grants::GrantsArgs),
    /// The web prompt: login links and the TOTP second factor.
    Web {
        #[command(subcommand)]
        cmd: WebCmd,
        /// The guard's state dir (default: $SANCTUM_STATE_DIR, else the XDG state dir).
        #[arg(long, global = true)]
        state_dir: Option<PathBuf>,
    },
    /// The web prompt's passkeys: list them, remove one (at once, recorded in the audit log).
    Passkeys {
        #[command(subcommand)]
        cmd: passkeys::PasskeysCmd,
        /// The guard's state dir (default: $SANCTUM_STATE_DIR, else the XDG state dir).
        #[arg(long, global = true)]
        state_dir: Option<PathBuf>,
    },
    /// Named reviewer accounts of the web prompt: add (prints a login link), list, remove,
    /// role, link (identities they also act under), totp-enroll.
    Reviewers {
        #[command(subcommand)]
        cmd: reviewers::ReviewersCmd,
        /// The guard's state dir (default: $SANCTUM_STATE_DIR, else the XDG state dir).
        #[arg(long, global = true)]
        state_dir: Option<PathBuf>,
    },
    /// The front door's links: who may reach the gateway through the guard.
    Front {
        #[command(subcommand)]
        cmd: FrontCmd,
        /// The guard's state dir (default: $SANCTUM_STATE_DIR, else the XDG state dir).
        #[arg(long, global = true)]
        state_dir: Option<PathBuf>,
    },
    /// Print the device id of the guard's gateway approver, creating its key (0600) when
    /// missing: the one device to approve on the gateway (a deployment provisions it).
    ApproverId {
        /// The guard's state dir (default: $SANCTUM_STATE_DIR, else the XDG state dir).
        #[arg(long)]
        state_dir: Option<PathBuf>,
    },
    /// Print the device id of `sanctum-guard node` on this state dir, creating its key (0600)
    /// when missing: what `tools.exec.node` binds (a name matches whichever node claims it).
    NodeId {
        /// The guard's state dir (default: $SANCTUM_STATE_DIR, else the XDG state dir).
        #[arg(long)]
        state_dir: Option<PathBuf>,
    },
    /// Record the agent container's PATH directories for a guard that runs elsewhere (its
    /// `agent_filesystem`): every name in each DIR and the way to each link's target.
    /// Exit 0, or 2 on error.
    FsSnapshot {
        /// Where to write it (JSON, mode 0644, replaced whole).
        #[arg(long)]
        out: PathBuf,
        /// The directories to list (absolute): the agent's PATH entries.
        #[arg(required = true)]
        dirs: Vec<PathBuf>,
    },
    /// The hash-chained audit log.
    Audit {
        #[command(subcommand)]
        cmd: audit_cli::AuditCmd,
    },
    /// The egress proxy: the agent's one way out, to what its egress rules allow; and
    /// `egress rules`, the rules it serves.
    Egress(egress::EgressArgs),
    /// Ask a running guard whether it is ready (container health checks: no shell needed).
    /// Exit 0 on HTTP 200, 1 on any other status, 2 when there is no answer.
    Health {
        /// The endpoint to ask.
        #[arg(long, default_value = "http://127.0.0.1:8484/readyz")]
        url: String,
    },
}

#[derive(Args, Debug)]
struct InboxOpts {
    /// The guard's config file (its `[store] url` makes this the fleet's shared inbox).
    #[arg(long, global = true)]
    config: Option<PathBuf>,
    /// The guard's state dir (holds inbox.db and audit.jsonl).
    #[arg(long, global = true)]
    state_dir: Option<PathBuf>,
    /// Print JSON instead of text.
    #[arg(long, global = true)]
    json: bool,
}

#[derive(Subcommand, Debug)]
enum InboxCmd {
    /// List entries (pending by default). Exit 0, or 2 on error.
    List {
        /// pending | resolved | all | approved | denied | expired | resolved-elsewhere | cancelled
        #[arg(long, default_value = "pending")]
        state: String,
    },
    /// Approve one request (allow-once; --always for allow-always; --grant for the bounded
    /// grant an egress request offers). Exit 1 if refused.
    Approve {
        id: String,
        #[arg(long)]
        always: bool,
        /// allow-for: that host:port for the time the request states (egress requests).
        #[arg(long, conflicts_with = "always")]
        grant: bool,
        #[arg(long)]
        reason: Option<String>,
        /// Refuse unless the request's hash is this one (what you were shown).
        #[arg(long)]
        hash: Option<String>,
    },
    /// Deny one request. Exit 1 if refused.
    Deny {
        id: String,
        #[arg(long)]
        reason: Option<String>,
        #[arg(long)]
        hash: Option<String>,
    },
}

#[derive(Subcommand, Debug)]
enum WebCmd {
    /// Print a new one-time login link for the running `serve` (exit 0; 2 on error).
    LoginLink {
        /// The name decisions made with this link are recorded under (web:NAME/...).
        #[arg(long, default_value = "admin")]
        name: String,
    },
    /// Enrol a TOTP second factor; prints the otpauth URI once (exit 0; 2 on error).
    TotpEnroll {
        /// Replace an existing enrolment.
        #[arg(long)]
        force: bool,
    },
}

fn fs_snapshot(out: &Path, dirs: &[PathBuf]) -> ExitCode {
    use sanctum_guard::app::fs_snapshot;
    match fs_snapshot::take(dirs).and_then(|s| fs_snapshot::write(out, &s).map(|()| s)) {
        Ok(s) => {
            println!(
                "recorded {} entries ({} directories listed) in {}",
                s.entries.len(),
                s.complete.len(),
                out.display()
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("sanctum-guard fs-snapshot: {e}");
            ExitCode::from(2)
        }
    }
}

/// The guard's state dir, resolved exactly as `serve` resolves it (flag, environment,
/// config file, default): the config owns that fact.
fn state_dir_of(
    explicit: Option<PathBuf>,
) -> Result<PathBuf, sanctum_guard::app::config::ConfigError> {
    let overrides = sanctum_guard::app::config::Overrides {
        state_dir: explicit,
        ..Default::default()
    };
    Ok(sanctum_guard::app::config::Config::load(&overrides)?.state_dir)
}

fn web_cmd(cmd: WebCmd, state_dir: Option<PathBuf>) -> ExitCode {
    let dir = match state_dir_of(state_dir) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("web: {e}");
            return ExitCode::from(2);
        }
    };
    let res = match cmd {
        WebCmd::LoginLink { name } => account_link(&dir, &name),
        WebCmd::TotpEnroll { force } => sanctum_guard::web::auth::totp_enroll(&dir, force),
    };
    match res {
        Ok(line) => {
            println!("{line}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}

/// A login link for the reviewer account `name`, refused when there is none (a link must
/// sign somebody in who may be held to account).
fn account_link(dir: &Path, name: &str) -> Result<String, String> {
    // The fleet's accounts when the config names one: an account of the fleet signs in here.
    let (_, store) = reviewers::open(Some(dir.to_owned()))?;
    if store.get(name).map_err(|e| e.to_string())?.is_none() {
        return Err(format!(
            "no reviewer account named {name:?}: add one first \
             (sanctum-guard reviewers add {name} --role approver)"
        ));
    }
    let at = reviewers::auth_at(dir)?;
    sanctum_guard::web::login::new_link_for_running(&at, name).map_err(|e| e.to_string())
}

#[derive(Subcommand, Debug)]
enum FrontCmd {
    /// Issue a door link for NAME (replacing NAME's old one); prints its path
    /// /door/SECRET once (exit 0; 2 on error). Only a hash is stored.
    Link {
        /// Who the audit log says acted through this link.
        #[arg(long)]
        name: String,
    },
    /// Withdraw NAME's door link (exit 0; 1 when there was none; 2 on error).
    Revoke { name: String },
}

/// Prints the device id kept in `<state-dir>/<sub>/` (creating its key): `gateway` is the
/// key `serve` uses for its approver connection, `node` the one `sanctum-guard node` uses.
fn device_id(command: &str, state_dir: Option<PathBuf>, sub: &str) -> ExitCode {
    let dir = match state_dir_of(state_dir) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("{command}: {e}");
            return ExitCode::from(2);
        }
    };
    if let Err(e) = sanctum_guard::app::config::ensure_state_dir(&dir) {
        eprintln!("{command}: {e}");
        return ExitCode::from(2);
    }
    match sanctum_guard::openclaw::identity::DeviceIdentity::load_or_create(&dir.join(sub)) {
        Ok(id) => {
            println!("{}", id.device_id());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("{command}: {e}");
            ExitCode::from(2)
        }
    }
}

fn front_cmd(cmd: FrontCmd, state_dir: Option<PathBuf>) -> ExitCode {
    use sanctum_guard::gateway::links;
    let dir = match state_dir_of(state_dir) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("front: {e}");
            return ExitCode::from(2);
        }
    };
    if let Err(e) = sanctum_guard::app::config::ensure_state_dir(&dir) {
        eprintln!("front: {e}");
        return ExitCode::from(2);
    }
    match cmd {
        FrontCmd::Link { name } => {
            match links::issue(&dir, &name, sanctum_guard::engine::decision::now_ms()) {
                Ok(secret) => {
                    println!("{}{secret}", links::DOOR_PREFIX);
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("error: {e}");
                    ExitCode::from(2)
                }
            }
        }
        FrontCmd::Revoke { name } => match links::revoke(&dir, &name) {
            Ok(true) => ExitCode::SUCCESS,
            Ok(false) => {
                eprintln!("no door link named {name}");
                ExitCode::from(1)
            }
            Err(e) => {
                eprintln!("error: {e}");
                ExitCode::from(2)
            }
        },
    }
}

/// What an `inbox` subcommand asks, whichever store it acts on.
enum InboxAct {
    List(String),
    Decide {
        id: String,
        kind: DecisionKind,
        reason: Option<String>,
        hash: Option<String>,
    },
}

fn inbox_act(cmd: InboxCmd) -> InboxAct {
    match cmd {
        InboxCmd::List { state } => InboxAct::List(state),
        InboxCmd::Approve {
            id,
            always,
            grant,
            reason,
            hash,
        } => {
            let kind = if always {
                DecisionKind::AllowAlways
            } else if grant {
                DecisionKind::AllowFor
            } else {
                DecisionKind::AllowOnce
            };
            InboxAct::Decide {
                id,
                kind,
                reason,
                hash,
            }
        }
        InboxCmd::Deny { id, reason, hash } => InboxAct::Decide {
            id,
            kind: DecisionKind::Deny,
            reason: Some(reason.unwrap_or_else(|| "user-denied".into())),
            hash,
        },
    }
}

fn inbox_cmd(cmd: InboxCmd, opts: InboxOpts) -> ExitCode {
    let overrides = sanctum_guard::app::config::Overrides {
        config: opts.config.clone(),
        state_dir: opts.state_dir.clone(),
        ..Default::default()
    };
    let cfg = match sanctum_guard::app::config::Config::load(&overrides) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("inbox: {e}");
            return ExitCode::from(2);
        }
    };
    let dir = cfg.state_dir;
    let act = inbox_act(cmd);
    if let sanctum_guard::app::config::StoreSettings::Fleet { url, guard_id } = &cfg.store {
        return inbox_fleet::run(act, opts.json, &dir, url, guard_id);
    }
    let db = dir.join(inbox::DB_FILE);
    if !db.exists() {
        eprintln!("error: no inbox at {}", db.display());
        return ExitCode::from(2);
    }
    // Only a decision writes to the audit log; listing leaves it alone.
    let audit = match &act {
        InboxAct::List(_) => None,
        InboxAct::Decide { .. } => match open_audit(&dir) {
            Ok(log) => Some(log),
            Err(code) => return code,
        },
    };
    let vote_audit = audit.clone();
    let mut store = match Store::open(&db, audit) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let (id, kind, reason, hash) = match act {
        InboxAct::List(state) => return inbox_list(&|f| store.list(f), &state, opts.json),
        InboxAct::Decide {
            id,
            kind,
            reason,
            hash,
        } => (id, kind, reason, hash),
    };
    // The terminal's vote: refused, recorded as one of several approvals, or decided.
    let mut rs = match sanctum_guard::reviewers::sqlite::SqliteReviewers::open(
        &dir.join(inbox::DB_FILE),
        vote_audit,
    ) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let decision = match reviewers::cli_vote(
        &mut rs,
        &|id| store.get(id),
        (&id, hash.as_deref()),
        kind,
        reason,
    ) {
        Ok(d) => d,
        Err(code) => return code,
    };
    inbox_decided(store.decide(&id, decision, hash.as_deref()), opts.json)
}

/// The guard's audit log, for a decision's record.
fn open_audit(dir: &Path) -> Result<AuditLog, ExitCode> {
    AuditLog::open(&dir.join(audit::AUDIT_FILE))
        .map(|(log, _)| log)
        .map_err(|e| {
            eprintln!("error: {e}");
            ExitCode::from(2)
        })
}

/// A decision's outcome: the new state, or why it was refused (exit 1: it was already
/// decided, another hash, too late, not offered, unknown; exit 2: an error).
fn inbox_decided(res: Result<inbox::Resolved, InboxError>, json: bool) -> ExitCode {
    match res {
        Ok(r) if json => print_json(&r),
        Ok(r) => {
            println!("{} {}", r.id, r.state);
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("refused: {e}");
            match e {
                InboxError::UnknownId(_)
                | InboxError::AlreadyResolved { .. }
                | InboxError::HashMismatch { .. }
                | InboxError::Expired(_)
                | InboxError::NotOffered { .. } => ExitCode::from(1),
                _ => ExitCode::from(2),
            }
        }
    }
}

fn inbox_list(
    list: &dyn Fn(StateFilter) -> Result<Vec<inbox::Entry>, InboxError>,
    state: &str,
    json: bool,
) -> ExitCode {
    let filter = match state {
        "all" => StateFilter::All,
        "pending" => StateFilter::Pending,
        "resolved" => StateFilter::Resolved,
        other => match State::parse(other) {
            Some(s) => StateFilter::Only(s),
            None => {
                eprintln!("error: unknown state {other}");
                return ExitCode::from(2);
            }
        },
    };
    let entries = match list(filter) {
        Ok(e) => e,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    if json {
        return print_json(&entries);
    }
    if entries.is_empty() {
        // Silence looked like a broken command: say what the empty list means.
        match state {
            "all" => println!("no requests"),
            other => println!("nothing {other}"),
        }
        return ExitCode::SUCCESS;
    }
    let now = inbox::now_ms();
    for e in &entries {
        println!("{}", e.list_line(now));
    }
    ExitCode::SUCCESS
}

fn print_json<T: serde::Serialize>(v: &T) -> ExitCode {
    match serde_json::to_string_pretty(v) {
        Ok(s) => {
            println!("{s}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}

#[derive(Args, Debug)]
struct ServeArgs {
    /// Deployment config (TOML); default: $SANCTUM_CONFIG, else the embedded default.
    #[arg(long)]
    config: Option<PathBuf>,
    /// The guard's own files (inbox.db, audit.jsonl).
    #[arg(long)]
    state_dir: Option<PathBuf>,
    /// OpenClaw's state dir (approvals document, socket); default $OPENCLAW_STATE_DIR or ~/.openclaw.
    #[arg(long)]
    openclaw_state: Option<PathBuf>,
    /// Policy file; default: the embedded policy.
    #[arg(long)]
    policy: Option<PathBuf>,
    /// The only tree approved runs may write; default: the config's, the policy's, OpenClaw's
    /// agents.defaults.workspace, else <openclaw state>/workspace.
    #[arg(long)]
    workspace: Option<PathBuf>,
    /// Web prompt address (IP:PORT, or "off"); default 127.0.0.1:8484.
    #[arg(long)]
    web_listen: Option<String>,
    /// PEM certificate for the web prompt (HTTPS; with --web-key).
    #[arg(long)]
    web_cert: Option<PathBuf>,
    /// PEM private key for the web prompt.
    #[arg(long)]
    web_key: Option<PathBuf>,
}

/// `serve`'s own flags: the gateway doors (the node host has its own gateway flags).
#[derive(Args, Debug)]
struct ServeCmdArgs {
    #[command(flatten)]
    base: ServeArgs,
    /// The gateway's WebSocket URL: the guard connects as its approver (ws://HOST:PORT).
    #[arg(long)]
    gateway_url: Option<String>,
    /// File holding the gateway's shared token (with --gateway-url).
    #[arg(long)]
    gateway_token_file: Option<PathBuf>,
    /// Front-door address (IP:PORT, or "off"): human clients reach the gateway only here.
    #[arg(long)]
    front_listen: Option<String>,
    /// Serve even when the gateway could run a command or tool call without the guard
    /// (exec host, elevated, plugin, chat directives, exposure): findings are only reported.
    #[arg(long)]
    allow_unsafe_posture: bool,
}

#[derive(Args, Debug)]
struct NodeArgs {
    /// The gateway's WebSocket URL, e.g. ws://127.0.0.1:18789.
    #[arg(long)]
    gateway_url: String,
    /// File holding the gateway's shared token.
    #[arg(long)]
    token_file: PathBuf,
    /// The sidecar guard's approvals socket; absent: decide in this process (laptop mode).
    #[arg(long)]
    decider: Option<PathBuf>,
    /// File holding the socket token (default: the one in OpenClaw's approvals document).
    #[arg(long)]
    decider_token_file: Option<PathBuf>,
    /// The node's display name in OpenClaw.
    #[arg(long, default_value = "sanctum-guard")]
    name: String,
    /// Longest wait for a human's decision, in seconds (within the gateway's invoke deadline).
    #[arg(long, default_value_t = 600)]
    ask_timeout: u64,
    /// A file or directory no run may read, besides the node's own files (repeat): the
    /// deployment's other secrets beside the node, e.g. the model key in /run/secrets.
    #[arg(long = "deny-read", value_name = "PATH")]
    deny_read: Vec<PathBuf>,
    /// The HTTP proxy the node's read proxy forwards autonomous HTTP reads through (compose:
    /// the egress service, `172.30.75.3:3128`; its allow-list then applies too). Absent:
    /// the read proxy connects to the checked address itself.
    #[arg(long, value_name = "IP:PORT")]
    read_proxy_upstream: Option<std::net::SocketAddr>,
    #[command(flatten)]
    serve: ServeArgs,
}

fn run_node(a: NodeArgs) -> ExitCode {
    let opts = sanctum_guard::app::node::NodeOptions {
        gateway_url: a.gateway_url,
        token_file: a.token_file,
        decider: a.decider,
        decider_token_file: a.decider_token_file,
        name: a.name,
        ask_timeout: std::time::Duration::from_secs(a.ask_timeout),
        deny_read: a.deny_read,
        read_proxy_upstream: a.read_proxy_upstream,
        overrides: sanctum_guard::app::config::Overrides {
            config: a.serve.config,
            state_dir: a.serve.state_dir,
            openclaw_state: a.serve.openclaw_state,
            policy: a.serve.policy,
            workspace: a.serve.workspace,
            // The node serves no web prompt (the sidecar does).
            ..Default::default()
        },
    };
    // As `serve`: before any thread exists, so no thread keeps a capability to hand on.
    match sanctum_guard::sandbox::kernel::clear_own_bounding_set() {
        Ok(0) => {}
        Ok(n) => eprintln!("sanctum-guard node: bounding set cleared ({n} capabilities)"),
        Err(e) => eprintln!("sanctum-guard node: warning: bounding set not cleared ({e}); each confined child still clears its own"),
    }
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("sanctum-guard node: tokio runtime: {e}");
            return ExitCode::from(2);
        }
    };
    match rt.block_on(sanctum_guard::app::node::run(opts)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("sanctum-guard node: {e}");
            ExitCode::from(2)
        }
    }
}

fn run_serve(cmd: ServeCmdArgs) -> ExitCode {
    let a = cmd.base;
    let overrides = sanctum_guard::app::config::Overrides {
        config: a.config,
        state_dir: a.state_dir,
        openclaw_state: a.openclaw_state,
        policy: a.policy,
        workspace: a.workspace,
        web_listen: a.web_listen,
        web_cert: a.web_cert,
        web_key: a.web_key,
        gateway_url: cmd.gateway_url,
        gateway_token_file: cmd.gateway_token_file,
        front_listen: cmd.front_listen,
        allow_unsafe_posture: cmd.allow_unsafe_posture,
    };
    // Before any thread exists (the bounding set is per thread, inherited at creation).
    match sanctum_guard::sandbox::kernel::clear_own_bounding_set() {
        Ok(0) => {}
        Ok(n) => eprintln!("sanctum-guard: bounding set    cleared ({n} capabilities)"),
        Err(e) => eprintln!("sanctum-guard: warning: bounding set not cleared ({e}); each confined child still clears its own"),
    }
    // One event-loop thread: each request is microseconds of work, and on a small machine
    // cross-thread wake-ups cost more than they bring. Blocking work (SQLite, fsync, spawn)
    // runs on the blocking pool and the audit writer thread.
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("sanctum-guard: tokio runtime: {e}");
            return ExitCode::from(2);
        }
    };
    match rt.block_on(sanctum_guard::app::serve::serve(&overrides)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("sanctum-guard: serve: {e}");
            ExitCode::from(2)
        }
    }
}

#[derive(Subcommand, Debug)]
enum PolicyCommand {
    /// Validate a policy file (default: the embedded policy). Exit 0 OK, 2 error.
    Check { file: Option<PathBuf> },
    /// Show the verdict and its reasons for shell text. Exit 0 allow, 10 ask, 20 deny,
    /// 2 usage or policy error.
    Explain {
        /// Print one JSON object (verdict, category, reasons, segments, offered, profile).
        #[arg(long)]
        json: bool,
        /// Directory the command runs in (default: the current directory).
        #[arg(long)]
        cwd: Option<PathBuf>,
        /// Policy file (default: the embedded policy).
        #[arg(long)]
        policy: Option<PathBuf>,
        /// Answer as `serve` with this config file would (its workspace, state, policy).
        #[arg(long)]
        config: Option<PathBuf>,
        /// Answer as `serve` with this workspace would (the cwd is then the request's).
        #[arg(long)]
        workspace: Option<PathBuf>,
        /// Answer as `serve` with this state dir would (its files are denied to every run).
        #[arg(long)]
        state_dir: Option<PathBuf>,
        /// OpenClaw's state dir (its approvals document), as for `serve`.
        #[arg(long)]
        openclaw_state: Option<PathBuf>,
        /// The words are an exec's argv (as a socket `exec` frame or the node sends it, e.g.
        /// `-- /bin/sh -lc 'ls -la'`), resolved by the same exec plan, not shell text.
        #[arg(long)]
        argv: bool,
        /// Which door asks (with a deployment): `request` (socket request frame, the default
        /// for text), `exec` (socket exec frame, the default for --argv) or `node`.
        #[arg(long, value_enum)]
        source: Option<ExplainSource>,
        /// The command; the words are joined with spaces and analysed as shell text.
        #[arg(last = true, required = true)]
        command: Vec<String>,
    },
}

/// The door `policy explain --source` answers as.
#[derive(Debug, Clone, Copy, ValueEnum)]
enum ExplainSource {
    Request,
    Exec,
    Node,
}

fn load_policy(file: Option<&Path>) -> Result<policy::file::Policy, policy::file::PolicyError> {
    sanctum_guard::app::config::load_policy(file)
}

fn policy_command(cmd: PolicyCommand) -> ExitCode {
    match cmd {
        PolicyCommand::Check { file } => match load_policy(file.as_deref()) {
            Ok(p) => {
                println!("OK {}", p.origin());
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("{e}");
                ExitCode::from(2)
            }
        },
        PolicyCommand::Explain {
            json,
            cwd,
            policy: file,
            config,
            workspace,
            state_dir,
            openclaw_state,
            argv,
            source,
            command,
        } => {
            let deployment = config.is_some()
                || workspace.is_some()
                || state_dir.is_some()
                || openclaw_state.is_some()
                || argv
                || source.is_some();
            if deployment {
                let overrides = sanctum_guard::app::config::Overrides {
                    config,
                    state_dir,
                    openclaw_state,
                    policy: file,
                    workspace,
                    ..Default::default()
                };
                return explain_deployment(overrides, cwd, argv, source, command, json);
            }
            let policy = match load_policy(file.as_deref()) {
                Ok(p) => p,
                Err(e) => {
                    eprintln!("{e}");
                    return ExitCode::from(2);
                }
            };
            let cwd = match cwd.map(Ok).unwrap_or_else(std::env::current_dir) {
                Ok(c) if c.is_absolute() => c,
                Ok(c) => std::env::current_dir()
                    .map(|d| d.join(c))
                    .unwrap_or_default(),
                Err(e) => {
                    eprintln!("cannot determine the working directory: {e}");
                    return ExitCode::from(2);
                }
            };
            let ctx = sanctum_guard::app::config::explain_context(&policy, &cwd);
            let verdict = policy::explain::explain(&policy, &ctx, &command.join(" "));
            if json {
                println!("{}", policy::explain::render_json(&verdict));
            } else {
                print!("{}", policy::explain::render_human(&verdict));
            }
            ExitCode::from(policy::explain::exit_code(verdict.kind))
        }
    }
}

/// `policy explain` with a deployment: the answer `serve` would give, and what it assumed.
fn explain_deployment(
    overrides: sanctum_guard::app::config::Overrides,
    cwd: Option<PathBuf>,
    argv: bool,
    source: Option<ExplainSource>,
    command: Vec<String>,
    json: bool,
) -> ExitCode {
    use sanctum_guard::app::explain::{explain, Asked, ExplainInput};
    use sanctum_guard::policy::request::Source;
    let source = match (source, argv) {
        (Some(ExplainSource::Request), _) => Source::SocketRequest,
        (Some(ExplainSource::Exec), _) | (None, true) => Source::SocketExec,
        (Some(ExplainSource::Node), _) => Source::Node,
        (None, false) => Source::SocketRequest,
    };
    let asked = if argv {
        Asked::Argv(command)
    } else {
        Asked::Text(command.join(" "))
    };
    let input = ExplainInput {
        overrides,
        cwd: cwd.map(|c| c.to_string_lossy().into_owned()),
        asked,
        source,
    };
    let e = match explain(&input) {
        Ok(e) => e,
        Err(err) => {
            eprintln!("sanctum-guard policy explain: {err}");
            return ExitCode::from(2);
        }
    };
    if json {
        let mut v = policy::explain::render_json(&e.verdict);
        if let Some(o) = v.as_object_mut() {
            o.insert("workspace".into(), e.workspace.display().to_string().into());
            o.insert("cwd".into(), e.cwd.display().to_string().into());
            o.insert(
                "program".into(),
                e.program.map(|p| p.display().to_string()).into(),
            );
            o.insert("argv".into(), e.argv.clone().into());
            o.insert("run_profile".into(), e.profile.clone().into());
            o.insert("config".into(), e.origin.clone().into());
        }
        println!("{v}");
    } else {
        println!("config:    {}", e.origin);
        println!("workspace: {}", e.workspace.display());
        println!("cwd:       {}", e.cwd.display());
        if let Some(p) = &e.program {
            println!("program:   {}", p.display());
            println!("argv:      {:?}", e.argv);
        }
        match &e.profile {
            Some(p) => println!("runs as:   profile {p}"),
            None => println!("runs as:   not run by the guard"),
        }
        print!("{}", policy::explain::render_human(&e.verdict));
    }
    ExitCode::from(policy::explain::exit_code(e.verdict.kind))
}

fn init_logging(format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_env("SANCTUM_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    // Colour only on a terminal: a log file or a container log gets plain text.
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(ansi)
        .with_writer(std::io::stderr);
    match format {
        LogFormat::Text => builder.init(),
        LogFormat::Json => builder.json().init(),
    }
}

pub fn main() -> ExitCode {
    let cli = Cli::parse();
    init_logging(cli.log_format);
    match cli.command {
        Command::Policy(cmd) => policy_command(cmd),
        Command::Serve(a) => run_serve(a),
        Command::Node(a) => run_node(a),
        Command::Doctor { json } => {
            let report = sanctum_guard::app::doctor::check();
            if json {
                match serde_json::to_string_pretty(&report) {
                    Ok(s) => println!("{s}"),
                    Err(e) => eprintln!("doctor: {e}"),
                }
            } else {
                println!("{}", report.render());
            }
            ExitCode::from(u8::from(!report.problems.is_empty()))
        }
        Command::Sandbox {
            profile,
            policy,
            workspace,
            network,
            json_status,
            timeout,
            argv,
        } => {
            let network = match network.map(|n| n.parse()).transpose() {
                Ok(n) => n,
                Err(e) => {
                    eprintln!("sanctum-guard sandbox: {e}");
                    return ExitCode::from(125);
                }
            };
            // The deployment's deny list is made for the workspace this run writes.
            let overrides = sanctum_guard::app::config::Overrides {
                policy: policy.clone(),
                workspace: workspace.clone().or_else(|| std::env::current_dir().ok()),
                ..Default::default()
            };
            let profiles = match policy {
                Some(p) => match sanctum_guard::app::config::load_policy(Some(&p)) {
                    Ok(pol) => pol.profiles().clone(),
                    Err(e) => {
                        eprintln!("sanctum-guard sandbox: {e}");
                        return ExitCode::from(125);
                    }
                },
                None => sanctum_guard::sandbox::builtin_profiles(),
            };
            // What a real run of the profile gets: the deployment's deny list (the guard's
            // state, OpenClaw's, every sensitive path), and for a profile of runs nobody
            // approved the guard's git neutralisation and pager settings.
            let deployment = match sanctum_guard::app::explain::deployment_confinement(&overrides) {
                Ok(d) => d,
                Err(e) => {
                    eprintln!("sanctum-guard sandbox: the deployment's deny list: {e}");
                    return ExitCode::from(125);
                }
            };
            let env_overrides = if profile.starts_with("autonomous-") {
                sanctum_guard::engine::git::protective_env()
            } else {
                Default::default()
            };
            let code = sanctum_guard::sandbox::cli::sandbox_main(
                sanctum_guard::sandbox::cli::SandboxArgs {
                    profiles,
                    profile,
                    workspace,
                    network,
                    json_status,
                    timeout_secs: timeout,
                    argv,
                    env_overrides,
                    deployment: Some(deployment),
                },
            );
            ExitCode::from(u8::try_from(code).unwrap_or(125))
        }
        Command::Inbox { cmd, opts } => inbox_cmd(cmd, opts),
        Command::Grants(a) => grants::run(a),
        Command::Audit { cmd } => audit_cli::run(cmd),
        Command::Web { cmd, state_dir } => web_cmd(cmd, state_dir),
        Command::Front { cmd, state_dir } => front_cmd(cmd, state_dir),
        Command::Passkeys { cmd, state_dir } => passkeys::run(cmd, state_dir),
        Command::Reviewers { cmd, state_dir } => reviewers::run(cmd, state_dir),
        Command::ApproverId { state_dir } => device_id("approver-id", state_dir, "gateway"),
        Command::NodeId { state_dir } => device_id("node-id", state_dir, "node"),
        Command::FsSnapshot { out, dirs } => fs_snapshot(&out, &dirs),
        Command::Egress(a) => egress::run(a),
        Command::Health { url } => {
            match sanctum_guard::app::health::probe(&url, std::time::Duration::from_secs(3)) {
                Ok(200) => ExitCode::SUCCESS,
                Ok(status) => {
                    eprintln!("sanctum-guard health: {url} answered {status}");
                    ExitCode::from(1)
                }
                Err(e) => {
                    eprintln!("sanctum-guard health: {e}");
                    ExitCode::from(2)
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    /// Every subcommand's flags are consistent (e.g. no flag name used twice by flattened
    /// argument groups): clap checks this only when that subcommand runs.
    #[test]
    fn the_command_line_is_consistent() {
        use clap::CommandFactory;
        super::Cli::command().debug_assert();
    }
}
