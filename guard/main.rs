//! The command line: argument parsing, output and exit codes only. Every subcommand calls
//! into the library; the exit codes are a contract (README "Command line").

use clap::{Parser, Subcommand, ValueEnum};
use sanctum_guard::policy;
use std::path::{Path, PathBuf};
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
    /// Validate a policy, or show the verdict for one command.
    #[command(subcommand)]
    Policy(PolicyCommand),
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
        /// The command; the words are joined with spaces and analysed as shell text.
        #[arg(last = true, required = true)]
        command: Vec<String>,
    },
}

fn load_policy(file: Option<&Path>) -> Result<policy::file::Policy, policy::file::PolicyError> {
    match file {
        Some(f) => policy::file::load(f),
        None => Ok(policy::file::embedded_default()),
    }
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
            command,
        } => {
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
            let verdict = policy::explain::explain(&policy, &cwd, &command.join(" "));
            if json {
                println!("{}", policy::explain::render_json(&verdict));
            } else {
                print!("{}", policy::explain::render_human(&verdict));
            }
            ExitCode::from(policy::explain::exit_code(verdict.kind))
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
        Command::Policy(cmd) => policy_command(cmd),
    }
}
