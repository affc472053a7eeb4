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
    /// Report what this machine can enforce (non-zero exit when a required layer is missing).
    Doctor {
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
    },
    /// Run one command (argv, not shell text) under Landlock + seccomp + no capabilities.
    Sandbox {
        /// Built-in profile: read-only or workspace-write.
        #[arg(long, default_value = "read-only")]
        profile: String,
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
        Command::Doctor { json } => {
            let report = sanctum_guard::doctor::check();
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
            let code = sanctum_guard::sandbox::cli::sandbox_main(
                sanctum_guard::sandbox::cli::SandboxArgs {
                    profile,
                    workspace,
                    network,
                    json_status,
                    timeout_secs: timeout,
                    argv,
                },
            );
            ExitCode::from(u8::try_from(code).unwrap_or(125))
        }
    }
}
