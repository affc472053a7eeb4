//! Sandbox profile specifications as the policy file spells them (`[profiles.<name>]`):
//! pure data the policy validates and names per category. The sandbox (`crate::sandbox::
//! profile`) turns a spec into concrete paths and enforces it; the syntax is documented there.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Network access of a confined process.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum NetworkSpec {
    /// No sockets at all (socketpair still works).
    None,
    /// TCP connect to these ports only (no bind, no UDP, no unix sockets).
    Ports(Vec<u16>),
    /// TCP connect to the guard's read proxy only (its port alone, the proxy variables set
    /// with a credential for the run): what an autonomous HTTP read gets. Where no proxy
    /// runs, a profile asking for it does not run.
    ReadProxy,
}

impl std::fmt::Display for NetworkSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NetworkSpec::None => f.write_str("none"),
            NetworkSpec::ReadProxy => f.write_str("read-proxy"),
            NetworkSpec::Ports(p) => {
                let list: Vec<String> = p.iter().map(u16::to_string).collect();
                write!(f, "tcp:{}", list.join(","))
            }
        }
    }
}

/// Resource limits of one confined run. The rlimits hold per process; `pids`, `memory_mb`
/// and `cpu_percent` hold for the whole run (a per-run cgroup when the guard's is writable;
/// else `pids` falls back to RLIMIT_NPROC, which counts the run's whole uid, see
/// `sandbox::resources`). 0 means "no such limit" for the per-run fields. Core dumps are
/// always off.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Limits {
    /// RLIMIT_NPROC (not enforced by the kernel for uid 0; see README).
    pub nproc: u64,
    /// RLIMIT_AS in MiB (V8 reserves a lot of address space: keep it generous).
    pub address_space_mb: u64,
    /// RLIMIT_FSIZE in MiB.
    pub file_size_mb: u64,
    /// RLIMIT_CPU in seconds.
    pub cpu_secs: u64,
    /// RLIMIT_NOFILE.
    pub nofile: u64,
    /// Processes and threads of the run at once (cgroup pids.max, else RLIMIT_NPROC above
    /// what the uid already runs).
    pub pids: u64,
    /// Memory of the whole run in MiB (cgroup memory.max).
    pub memory_mb: u64,
    /// CPU bandwidth of the whole run, in percent of one CPU (cgroup cpu.max).
    pub cpu_percent: u64,
    /// Size of the private tmp in MiB (a polled size check; RLIMIT_FSIZE per file).
    pub tmp_mb: u64,
    /// Runs of this profile at once; more wait in a queue (0: no cap).
    pub concurrent: u64,
}

impl Default for Limits {
    /// A gated run's: a person approved it, so only what keeps the container alive.
    fn default() -> Self {
        Limits {
            nproc: 512,
            address_space_mb: 16 * 1024,
            file_size_mb: 1024,
            cpu_secs: 600,
            nofile: 1024,
            pids: 128,
            memory_mb: 0,
            cpu_percent: 0,
            tmp_mb: 0,
            concurrent: 0,
        }
    }
}

impl Limits {
    /// An autonomous run's: nobody approved it, so it gets a small, bounded share.
    pub fn autonomous() -> Self {
        Limits {
            nproc: 512,
            address_space_mb: 4096,
            file_size_mb: 64,
            cpu_secs: 10,
            nofile: 256,
            pids: 32,
            memory_mb: 512,
            cpu_percent: 100,
            tmp_mb: 64,
            concurrent: 4,
        }
    }
}

/// Wall-clock limit of an autonomous run, in seconds (a gated run's is 600).
pub const AUTONOMOUS_TIMEOUT_SECS: u64 = 30;

/// Environment variables a confined process may inherit or be given (`*` is a suffix glob).
pub fn default_env_allow() -> Vec<String> {
    [
        "PATH",
        "HOME",
        "LANG",
        "LANGUAGE",
        "LC_*",
        "TERM",
        "TZ",
        "USER",
        "LOGNAME",
        "SHELL",
        "PWD",
        "COLUMNS",
        "LINES",
        "NO_COLOR",
        "FORCE_COLOR",
        "GIT_PAGER",
        "PAGER",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

fn default_timeout_secs() -> u64 {
    600
}

/// One named profile.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProfileSpec {
    /// Paths that may be read and executed. `{workspace}` expands to the workspace.
    pub read: Vec<String>,
    /// Paths that may be written. `{workspace}` and `{tmp}` (a private temp dir) expand.
    pub write: Vec<String>,
    /// Paths under a writable root that stay read-only (e.g. `{workspace}/.git/hooks`),
    /// whether they exist or not.
    pub protected: Vec<String>,
    pub network: NetworkSpec,
    /// Paths that may not even be read (secrets), though under a readable or writable root.
    /// `{home}` expands to $HOME.
    #[serde(default)]
    pub deny_read: Vec<String>,
    #[serde(default)]
    pub limits: Limits,
    /// Environment allow-list; secret-looking names are removed even when listed.
    #[serde(default = "default_env_allow")]
    pub env: Vec<String>,
    /// Run even when the kernel lacks a Landlock feature the profile needs (status says so).
    #[serde(default)]
    pub allow_degraded: bool,
    /// Wall-clock limit in seconds; the whole process group is killed after it.
    #[serde(default = "default_timeout_secs")]
    pub timeout_secs: u64,
}

/// The built-in profile of autonomous verdicts.
pub const AUTONOMOUS_PROFILE: &str = "autonomous-read";
/// The same with the guard's read proxy as its only network, for an autonomous HTTP read.
pub const AUTONOMOUS_HTTP_PROFILE: &str = "autonomous-http-read";

/// Secrets no built-in profile may read: SSH and cloud credentials. (The engine adds the
/// whole sensitive list, `paths::sensitive_paths`, and the deployment's own secrets.)
const DENY_READ: [&str; 5] = [
    "{home}/.ssh",
    "{home}/.aws",
    "{home}/.gnupg",
    "{home}/.config/gh",
    "/etc/shadow",
];

/// Denied to the read-only profile only: under a writable workspace it would cap the root
/// (Landlock rights cover whole subtrees), so `workspace-write` keeps the root creatable.
const DENY_READ_RO: [&str; 1] = ["{workspace}/.env"];

/// What an autonomous run may read besides the workspace: an allow-list. Whole system
/// directories only where they hold programs and their data (`/usr`, `/lib*`, `/bin`,
/// `/sbin`); of `/etc` only the files a program reads to start, resolve names and format
/// output, each named (a deployment keeps secrets in `/etc`: k3s.yaml, environment,
/// profile.d, pip.conf, apt credentials); and /proc. A program that needs one more file
/// gets that file named here, never a directory.
const AUTONOMOUS_READ: &[&str] = &[
    "{workspace}",
    "{tmp}",
    // Programs, libraries and their data (`/usr/local/etc` is denied below).
    "/usr",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/bin",
    "/sbin",
    // The dynamic loader.
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/ld.so.preload",
    // Users and groups (`ls -l`, `id`, `whoami`), through NSS.
    "/etc/passwd",
    "/etc/group",
    "/etc/nsswitch.conf",
    // Name resolution and service names (`getaddrinfo`, `getservbyname`).
    "/etc/hosts",
    "/etc/host.conf",
    "/etc/resolv.conf",
    "/etc/gai.conf",
    "/etc/services",
    "/etc/protocols",
    "/etc/networks",
    // TLS roots (not `/etc/ssl/private`).
    "/etc/ssl/certs",
    "/etc/ssl/openssl.cnf",
    "/etc/ca-certificates.conf",
    // Time zone and locale.
    "/etc/localtime",
    "/etc/timezone",
    "/etc/locale.alias",
    "/etc/default/locale",
    // Which program a generic name is (`awk`, `editor`), as links to list.
    "/etc/alternatives",
    // File types and terminals (`file`, `ls --color`, `tput`).
    "/etc/mime.types",
    "/etc/magic",
    "/etc/magic.mime",
    "/etc/terminfo",
    // The system's name and release (`cat /etc/os-release`, `lsb_release`).
    "/etc/os-release",
    "/etc/lsb-release",
    "/etc/debian_version",
    "/etc/hostname",
    // Interpreters' own configuration, for the programs written in them (`perl` tools).
    "/etc/perl",
    "/etc/python3",
    "/etc/python3.11",
    "/etc/python3.12",
    "/etc/python3.13",
    "/etc/manpath.config",
    // Devices a program may open.
    "/dev/null",
    "/dev/zero",
    "/dev/urandom",
    "/dev/random",
    // Its own processes, and machine-wide figures (`free`, `uptime`, `ps`). Other processes'
    // per-process files: environ and memory need ptrace, which Landlock refuses outside the
    // run's domain; command lines are hidden only where /proc is mounted
    // `hidepid=ptraceable` (`doctor` warns; SECURITY.md).
    "/proc",
    "/sys/devices/system/cpu",
];

/// Under a readable root, still secret to an autonomous run: configuration a local
/// install keeps beside programs.
const AUTONOMOUS_DENY: [&str; 1] = ["/usr/local/etc"];

/// The profile of an autonomous verdict: read the workspace and the system only (minus
/// every secret inside them), write only a private tmp, no network.
fn autonomous_read(base: &ProfileSpec) -> ProfileSpec {
    ProfileSpec {
        read: AUTONOMOUS_READ.iter().map(|s| s.to_string()).collect(),
        write: vec!["/dev/null".into(), "{tmp}".into()],
        deny_read: DENY_READ
            .iter()
            .chain(&DENY_READ_RO)
            .chain(&AUTONOMOUS_DENY)
            .map(|s| s.to_string())
            .collect(),
        ..base.clone()
    }
}

/// The profiles every policy has; a policy file may override them by name.
pub fn builtin_profiles() -> BTreeMap<String, ProfileSpec> {
    let base = ProfileSpec {
        read: vec!["/".into()],
        write: vec!["/dev/null".into()],
        protected: vec![],
        network: NetworkSpec::None,
        deny_read: DENY_READ
            .iter()
            .chain(&DENY_READ_RO)
            .map(|s| s.to_string())
            .collect(),
        limits: Limits::default(),
        env: default_env_allow(),
        allow_degraded: false,
        timeout_secs: default_timeout_secs(),
    };
    let workspace_write = ProfileSpec {
        write: vec!["/dev/null".into(), "{workspace}".into(), "{tmp}".into()],
        deny_read: DENY_READ.iter().map(|s| s.to_string()).collect(),
        ..base.clone()
    };
    let autonomous = ProfileSpec {
        limits: Limits::autonomous(),
        timeout_secs: AUTONOMOUS_TIMEOUT_SECS,
        ..autonomous_read(&base)
    };
    let autonomous_http = ProfileSpec {
        network: NetworkSpec::ReadProxy,
        ..autonomous.clone()
    };
    BTreeMap::from([
        ("read-only".to_string(), base),
        ("workspace-write".to_string(), workspace_write),
        (AUTONOMOUS_PROFILE.to_string(), autonomous),
        (AUTONOMOUS_HTTP_PROFILE.to_string(), autonomous_http),
    ])
}
