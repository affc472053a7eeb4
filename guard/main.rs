//! The command line: argument parsing, output and exit codes only. Every subcommand calls
//! into the library; the exit codes are a contract (README "Command line").

use clap::{Parser, Subcommand, ValueEnum};
use std::process::ExitCode;

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
    /// Serve OpenClaw's exec-approvals socket (the sidecar).
    Serve(ServeArgs),
}

#[derive(clap::Args, Debug)]
struct ServeArgs {
    /// Deployment config (TOML); default: $SANCTUM_CONFIG, else the embedded default.
    #[arg(long)]
    config: Option<std::path::PathBuf>,
    /// The guard's own files (inbox.db, audit.jsonl).
    #[arg(long)]
    state_dir: Option<std::path::PathBuf>,
    /// OpenClaw's state dir (approvals document, socket); default $OPENCLAW_STATE_DIR or ~/.openclaw.
    #[arg(long)]
    openclaw_state: Option<std::path::PathBuf>,
    /// Policy file; default: the embedded policy.
    #[arg(long)]
    policy: Option<std::path::PathBuf>,
}

fn run_serve(a: ServeArgs) -> ExitCode {
    let overrides = sanctum_guard::config::Overrides {
        config: a.config,
        state_dir: a.state_dir,
        openclaw_state: a.openclaw_state,
        policy: a.policy,
    };
    let rt = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("sanctum-guard: tokio runtime: {e}");
            return ExitCode::from(2);
        }
    };
    match rt.block_on(sanctum_guard::socket::serve::serve(&overrides)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("sanctum-guard: serve: {e}");
            ExitCode::from(2)
        }
    }
}

fn init_logging(format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_env("SANCTUM_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    match format {
        LogFormat::Text => builder.init(),
        LogFormat::Json => builder.json().init(),
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    init_logging(cli.log_format);
    match cli.command {
        Command::Serve(a) => run_serve(a),
    }
}
