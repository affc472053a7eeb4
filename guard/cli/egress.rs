//! `sanctum-guard egress` (the proxy) and `egress rules` (what it would serve).

use clap::{Args, Subcommand};
use sanctum_guard::app::secret_file::read_secret;
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

/// Exit 0 after SIGTERM/SIGINT (or after printing the rules), 2 on a start-up error.
pub fn run(a: EgressArgs) -> ExitCode {
    if let Some(EgressCmd::Rules { rules, json }) = a.cmd {
        return print_rules(&rules, json);
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
    serve(
        &state_dir,
        sanctum_guard::egress::EgressOptions {
            listen: a.listen,
            rules,
            state_dir: state_dir.clone(),
            max_connections: a.max_connections,
            routes,
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

fn print_rules(src: &RuleSources, json: bool) -> ExitCode {
    let (rules, routes) = match load(src) {
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
