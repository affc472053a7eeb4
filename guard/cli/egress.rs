//! `sanctum-guard egress` (the proxy) and `egress rules` (what it would serve).

use clap::{Args, Subcommand};
use sanctum_guard::app::secret_file::read_secret;
use sanctum_guard::egress::ask::Asker;
use sanctum_guard::egress::overlay::{read_overlay, OVERLAY_FILE};
use sanctum_guard::egress::route::Routes;
use sanctum_guard::egress::rules::rule_set;
use sanctum_guard::policy::egress::{describe, EgressRule};
use sanctum_guard::policy::egress_routes::{describe_route, ProviderRoute, ROUTE_PREFIX};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// The egress proxy: the agent's one way out, to what its egress rules allow.
#[derive(Args, Debug)]
#[command(args_conflicts_with_subcommands = true)]
pub struct EgressArgs {
    #[command(subcommand)]
    cmd: Option<EgressCmd>,
    /// Address to listen on (the agent's internal network).
    #[arg(long, default_value = "127.0.0.1:3128")]
    listen: std::net::SocketAddr,
    #[command(flatten)]
    rules: RuleSources,
    /// Holds egress-audit.jsonl and its key (required to serve).
    #[arg(long)]
    state_dir: Option<PathBuf>,
    /// Connections served at once.
    #[arg(long, default_value_t = 256)]
    max_connections: usize,
    #[command(flatten)]
    ask: AskArgs,
    /// Answer a refused CONNECT `200` and give the refusal inside the tunnel: an HTTP 403
    /// with the reason to a plain request, a TLS access_denied alert to a TLS client. For
    /// clients that drop a refused CONNECT's body (undici, OpenClaw's web_fetch), so the
    /// agent reads why.
    #[arg(long)]
    refuse_in_tunnel: bool,
    /// Hold each allowed connection until its audit record is fsynced, not only written
    /// (a power cut then loses no record of a connection made; each connection waits one
    /// fsync, several ms on some disks).
    #[arg(long)]
    durable_connections: bool,
}

/// Asking a person about destinations no rule covers (through `serve`'s approvals socket).
#[derive(Args, Debug)]
struct AskArgs {
    /// `serve`'s approvals socket: destinations no rule covers are asked in its inbox
    /// (without it they are refused at once).
    #[arg(long, requires = "ask_token_file")]
    ask_socket: Option<PathBuf>,
    /// The socket token (a file only its owner and group may read).
    #[arg(long)]
    ask_token_file: Option<PathBuf>,
    /// How long a connection waits for a person, then is refused (e.g. 30s, 2m).
    #[arg(long, default_value = "30s", value_parser = parse_duration)]
    ask_wait: std::time::Duration,
    /// How long "allow for a while" lets the same host:port through.
    #[arg(long, default_value = "10m", value_parser = parse_duration)]
    grant: std::time::Duration,
}

/// `30s`, `2m`, `1h`, or plain seconds; 1 s .. 24 h (the guard refuses longer).
fn parse_duration(s: &str) -> Result<std::time::Duration, String> {
    let (n, unit) = match s.find(|c: char| !c.is_ascii_digit()) {
        Some(at) => s.split_at(at),
        None => (s, "s"),
    };
    let n: u64 = n
        .parse()
        .map_err(|_| format!("{s:?} is not a duration like 30s"))?;
    let secs = match unit {
        "s" => n,
        "m" => n * 60,
        "h" => n * 3600,
        _ => return Err(format!("{s:?}: the unit is s, m or h")),
    };
    if secs == 0 || secs > 24 * 3600 {
        return Err(format!("{s:?}: between 1 s and 24 h"));
    }
    Ok(std::time::Duration::from_secs(secs))
}

/// Where the rules come from.
#[derive(Args, Debug)]
struct RuleSources {
    /// Allowed destinations, host:port (repeat, or comma-separated; no wildcards: those go
    /// in the policy file's [[egress.rules]]).
    #[arg(long = "allow", value_delimiter = ',')]
    allow: Vec<String>,
    /// A policy file whose [[egress.rules]] are served (laid over the embedded default).
    #[arg(long)]
    policy: Option<PathBuf>,
}

#[derive(Subcommand, Debug)]
enum EgressCmd {
    /// Print the effective rules, in the order they are judged (deny rules win).
    Rules {
        #[command(flatten)]
        rules: RuleSources,
        /// One JSON object per rule.
        #[arg(long)]
        json: bool,
        /// The proxy's state dir: its overlay rules (what "always" answers stored) too.
        #[arg(long)]
        state_dir: Option<PathBuf>,
    },
}

fn load(src: &RuleSources) -> Result<(Vec<EgressRule>, Vec<ProviderRoute>), String> {
    let policy = sanctum_guard::app::config::load_policy(src.policy.as_deref())
        .map_err(|e| e.to_string())?;
    let rules = rule_set(policy.egress(), &src.allow).map_err(|e| e.to_string())?;
    Ok((rules, policy.egress_routes().to_vec()))
}

/// The routes with their keys. A key that cannot be read leaves its route refusing, with the
/// reason, rather than stopping the proxy (a deployment without a key still has its rules).
fn with_keys(routes: Vec<ProviderRoute>) -> Result<Routes, String> {
    let keyed = routes
        .into_iter()
        .map(|r| {
            let key = read_secret(Path::new(&r.key_file)).map_err(|e| e.to_string());
            (r, key)
        })
        .collect();
    Routes::new(keyed).map_err(|e| e.to_string())
}

fn asker(a: &AskArgs) -> Result<Option<Asker>, String> {
    let (Some(socket), Some(file)) = (&a.ask_socket, &a.ask_token_file) else {
        return Ok(None);
    };
    let token = sanctum_guard::app::secret_file::read_secret(file).map_err(|e| e.to_string())?;
    Ok(Some(Asker::new(socket.clone(), token, a.ask_wait, a.grant)))
}

/// Exit 0 after SIGTERM/SIGINT (or after printing the rules), 2 on a start-up error.
pub fn run(a: EgressArgs) -> ExitCode {
    if let Some(EgressCmd::Rules {
        rules,
        json,
        state_dir,
    }) = a.cmd
    {
        return print_rules(&rules, json, state_dir.as_deref());
    }
    let fail = |what: &str| {
        eprintln!("sanctum-guard egress: {what}");
        ExitCode::from(2)
    };
    let Some(state_dir) = a.state_dir else {
        return fail("--state-dir is required to serve");
    };
    let (rules, routes) = match load(&a.rules) {
        Ok(r) => r,
        Err(e) => return fail(&e),
    };
    let routes = match with_keys(routes) {
        Ok(r) => r,
        Err(e) => return fail(&e),
    };
    let asker = match asker(&a.ask) {
        Ok(x) => x,
        Err(e) => return fail(&e),
    };
    serve(
        &state_dir,
        sanctum_guard::egress::EgressOptions {
            listen: a.listen,
            rules,
            state_dir: state_dir.clone(),
            max_connections: a.max_connections,
            asker,
            routes,
            refuse_in_tunnel: a.refuse_in_tunnel,
            durable_connections: a.durable_connections,
        },
    )
}

fn serve(state_dir: &Path, o: sanctum_guard::egress::EgressOptions) -> ExitCode {
    if let Err(e) = sanctum_guard::app::config::ensure_state_dir(state_dir) {
        eprintln!("sanctum-guard egress: state dir: {e}");
        return ExitCode::from(2);
    }
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("sanctum-guard egress: runtime: {e}");
            return ExitCode::from(2);
        }
    };
    match rt.block_on(sanctum_guard::egress::serve(o)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("sanctum-guard egress: {e}");
            ExitCode::from(2)
        }
    }
}

fn print_rules(src: &RuleSources, json: bool, state_dir: Option<&Path>) -> ExitCode {
    type Loaded = (Vec<EgressRule>, Vec<ProviderRoute>);
    let overlay = |(mut rules, routes): Loaded| -> Result<Loaded, String> {
        if let Some(d) = state_dir {
            rules.extend(read_overlay(&d.join(OVERLAY_FILE))?);
        }
        Ok((rules, routes))
    };
    let (rules, routes) = match load(src).and_then(overlay) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("sanctum-guard egress rules: {e}");
            return ExitCode::from(2);
        }
    };
    if rules.is_empty() && routes.is_empty() && !json {
        println!("no egress rules: every destination is refused");
    }
    for r in &routes {
        if json {
            println!("{}", route_json(r));
        } else {
            println!("{}", describe_route(r));
        }
    }
    for r in &rules {
        if json {
            println!("{}", rule_json(r));
        } else {
            println!("{}", describe(r));
        }
    }
    ExitCode::SUCCESS
}

fn route_json(r: &ProviderRoute) -> serde_json::Value {
    serde_json::json!({
        "route": r.name,
        "path": format!("{ROUTE_PREFIX}{}/", r.name),
        "upstream": r.upstream_url(),
        "allow": r.allowed(),
        "keyFile": r.key_file,
        "header": r.header_name,
        "internal": r.upstream.internal,
        "origin": r.origin,
    })
}

fn rule_json(r: &EgressRule) -> serde_json::Value {
    use sanctum_guard::policy::egress::{HostPattern, RuleAction, Scheme};
    let host = match &r.host {
        HostPattern::Exact(h) => h.clone(),
        HostPattern::Below(h) => format!("*.{h}"),
        HostPattern::Ip(ip) => ip.to_string(),
    };
    serde_json::json!({
        "action": match r.action { RuleAction::Allow => "allow", RuleAction::Deny => "deny" },
        "host": host,
        "ports": r.ports,
        "scheme": match r.scheme { Scheme::Any => "any", Scheme::Https => "https", Scheme::Http => "http" },
        "methods": r.methods,
        "pathPrefix": r.path_prefix,
        "internal": r.internal,
        "origin": r.origin,
    })
}
