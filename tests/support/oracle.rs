//! The policy oracle: a scratch world full of marked secrets, commands run in it under the
//! syscall recorder (`sandbox::trace`), and the comparison of what they did with what
//! `policy::decide` claimed.

use super::policy::PATH;
use sanctum_guard::policy::decide::{decide, DecideContext};
use sanctum_guard::policy::file::{embedded_default, Policy};
use sanctum_guard::policy::verdict::{Category, Verdict, VerdictKind};
use sanctum_guard::sandbox::trace::{Record, Recorder, Scene};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The text every secret file of the world holds, followed by its number.
pub const MARKER: &str = "SANCTUM-SECRET-";

/// Secret files of the scratch HOME (relative to it); each holds a marker.
const HOME_SECRETS: &[&str] = &[
    ".ssh/id_rsa",
    ".ssh/id_ed25519",
    ".aws/credentials",
    ".env",
    ".git-credentials",
    ".config/gh/hosts.yml",
    ".netrc",
    ".npmrc",
    ".pgpass",
    ".bash_history",
    ".docker/config.json",
    ".kube/config",
    ".gnupg/private.key",
    ".openclaw/openclaw.json",
    ".openclaw/exec-approvals.json",
    ".openclaw/credentials/token.json",
    ".openclaw/state/openclaw.sqlite",
    ".openclaw/agents/main/agent/auth-profiles.json",
    "notes.txt",
    "projects/site/config.toml",
];

/// Secret files inside the workspace.
const WS_SECRETS: &[&str] = &[".env", "app/.env", "deploy.tfstate"];

/// Plain workspace files.
const WS_FILES: &[(&str, &str)] = &[
    ("a.txt", "a\nfoo\nbar\n"),
    ("log.txt", "line 1\nline 2\n"),
    ("src/main.rs", "fn main() {}\n"),
    ("src/lib.rs", "pub fn foo() {}\n"),
    ("run.sh", "#!/bin/sh\necho hi\n"),
    (
        "Cargo.toml",
        "[package]\nname = \"x\"\nversion = \"0.1.0\"\n",
    ),
    ("package.json", "{\"name\": \"x\"}\n"),
    ("README.md", "# x\nfoo bar\n"),
    ("app/.env.example", "API_KEY=\n"),
    // A repository may carry an ignore file that whitelists a hidden secret for `rg`.
    ("app/.ignore", "!.env\n"),
    ("app/main.py", "print(1)\n"),
    ("app/lib/util.py", "\n"),
    ("docs/guide.md", "guide\n"),
    ("data.json", "{\"a\": [1, 2]}\n"),
    ("notes.csv", "a,b\n1,2\n"),
];

/// A throwaway world: HOME with marked secrets (and links from the workspace into it), a
/// workspace, a private tmp, all owned by the user the recorder runs commands as.
pub struct World {
    _dir: tempfile::TempDir,
    pub home: PathBuf,
    pub ws: PathBuf,
    pub tmp: PathBuf,
    pub policy: Policy,
    /// Canonical paths of the marker files.
    pub secrets: Vec<PathBuf>,
}

impl World {
    pub fn new() -> World {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = std::fs::canonicalize(dir.path()).expect("canonical");
        let home = root.join("home");
        let ws = root.join("ws");
        let tmp = root.join("tmp");
        let mut secrets = Vec::new();
        let mut n = 0;
        let write = |p: PathBuf, body: String| {
            std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
            std::fs::write(&p, body).expect("write");
        };
        for rel in HOME_SECRETS {
            n += 1;
            write(home.join(rel), format!("{MARKER}{n}\n"));
            secrets.push(home.join(rel));
        }
        for rel in WS_SECRETS {
            n += 1;
            write(ws.join(rel), format!("KEY={MARKER}{n}\n"));
            secrets.push(ws.join(rel));
        }
        for (rel, body) in WS_FILES {
            write(ws.join(rel), (*body).to_string());
        }
        std::fs::create_dir_all(&tmp).expect("tmp");
        git_history(&ws);
        std::os::unix::fs::symlink(home.join(".ssh"), ws.join("sshlink")).expect("link");
        std::os::unix::fs::symlink(home.join(".ssh/id_rsa"), ws.join("keylink")).expect("link");
        std::os::unix::fs::symlink(home.join(".aws"), ws.join("docs/awslink")).expect("link");
        give_to_nobody(&root);
        let policy = embedded_default()
            .with_agent_home(&home)
            .expect("policy for home");
        World {
            _dir: dir,
            home,
            ws,
            tmp,
            policy,
            secrets,
        }
    }

    /// Fills `@HOME@`, `@WS@` and `@PORT@` (the recorder's listener).
    pub fn subst(&self, s: &str, port: u16) -> String {
        s.replace("@HOME@", &self.home.to_string_lossy())
            .replace("@WS@", &self.ws.to_string_lossy())
            .replace("@PORT@", &port.to_string())
    }

    pub fn decide(&self, command: &str) -> Verdict {
        let mut ctx = DecideContext::standalone(&self.home, PATH, &self.ws);
        ctx.workspace = Some(self.ws.clone());
        let mut req = super::policy::shell_request("oracle", command, &self.ws);
        // As the deployment asks: the guard is the node host and runs what it allows, in
        // the environment it builds (so a variable no request names is unset).
        req.who.source = sanctum_guard::policy::request::Source::Node;
        decide(&self.policy, &ctx, &req)
    }

    pub fn scene(&self) -> Scene {
        Scene {
            home: self.home.clone(),
            workspace: self.ws.clone(),
            tmp: self.tmp.clone(),
            path: PATH.to_string(),
            timeout: Duration::from_secs(5),
            // What the guard adds to every run no person approved.
            env: sanctum_guard::engine::git::protective_env()
                .into_iter()
                .collect(),
            shell: "/bin/bash".into(),
        }
    }

    /// The same scene run by dash (Debian's `/bin/sh`, what OpenClaw's node runs).
    pub fn dash_scene(&self) -> Scene {
        Scene {
            shell: "/bin/dash".into(),
            ..self.scene()
        }
    }

    /// Empties the private tmp between commands.
    pub fn reset_tmp(&self) {
        let _ = std::fs::remove_dir_all(&self.tmp);
        std::fs::create_dir_all(&self.tmp).expect("tmp");
        give_to_nobody(&self.tmp);
    }

    pub fn is_secret(&self, p: &Path) -> bool {
        self.secrets.iter().any(|s| s == p)
    }
}

impl Default for World {
    fn default() -> Self {
        World::new()
    }
}

/// Makes the workspace a repository with history (the plain files in two commits, a tag and
/// a second branch; the secrets stay untracked), so git's reads do their real work under the
/// recorder instead of stopping at "not a git repository".
fn git_history(ws: &Path) {
    let git = |args: &[&str]| super::process::git(ws, args);
    git(&["init", "-q", "-b", "main"]);
    for (rel, _) in WS_FILES {
        git(&["add", "--", rel]);
    }
    git(&["commit", "-q", "-m", "first"]);
    git(&["tag", "v1.0"]);
    std::fs::write(ws.join("a.txt"), "a\nfoo\nbar\nbaz\n").expect("a.txt");
    git(&["commit", "-q", "-am", "second"]);
    git(&["branch", "feat/x", "HEAD~1"]);
    std::fs::write(ws.join("a.txt"), "a\nfoo\nbar\nbaz\nqux\n").expect("a.txt");
}

/// Makes the tree readable and owned by `nobody`, whom the recorder runs commands as when the
/// tests run as root.
fn give_to_nobody(root: &Path) {
    let root_uid = nix::unistd::Uid::effective().is_root();
    let _ = std::fs::set_permissions(root, std::fs::Permissions::from_mode(0o755));
    for e in walk(root) {
        if root_uid {
            let _ = std::os::unix::fs::lchown(&e, Some(65534), Some(65534));
        }
    }
}

fn walk(root: &Path) -> Vec<PathBuf> {
    let mut out = vec![root.to_path_buf()];
    let mut i = 0;
    while i < out.len() {
        let p = out[i].clone();
        i += 1;
        if p.is_symlink() || !p.is_dir() {
            continue;
        }
        if let Ok(rd) = std::fs::read_dir(&p) {
            out.extend(rd.flatten().map(|e| e.path()));
        }
    }
    out
}

/// Starts the recorder, or panics with why it cannot run here.
pub fn recorder() -> Recorder {
    Recorder::start().expect("the oracle's recorder (ptrace, a network namespace, Landlock)")
}

/// Programs run as part of another's normal work: `(the claimed program, its helper)`. The
/// analysis names the first; the second is what it is implemented with.
pub const HELPERS: &[(&str, &str)] = &[
    ("egrep", "/usr/bin/grep"),
    ("fgrep", "/usr/bin/grep"),
    // tar's -z/-j/-J/--zstd filters.
    ("tar", "/usr/bin/gzip"),
    ("tar", "/usr/bin/bzip2"),
    ("tar", "/usr/bin/xz"),
    ("tar", "/usr/bin/zstd"),
    // Debian's zcat and zless are shell scripts over gzip (and less).
    ("zcat", "/usr/bin/gzip"),
    ("zless", "/usr/bin/gzip"),
    ("zless", "/usr/bin/less"),
    // git's porcelain written in shell (`git submodule`) and its exec-path lookups.
    ("git", "/usr/bin/dash"),
    ("git", "/usr/bin/sed"),
    ("git", "/usr/bin/basename"),
    ("git", "/usr/bin/uname"),
    ("git", "/usr/local/libexec/git-core/"),
    ("git", "/usr/lib/git-core/"),
];

/// Wrappers the analysis unwraps: it names the program they run, not them. An exec of one is
/// accepted when its name is a word of the command; what it runs is still checked.
pub const WRAPPERS: &[&str] = &[
    "env", "nice", "nohup", "timeout", "stdbuf", "xargs", "command", "sh", "bash", "dash",
];

/// Directories whose reads every program makes (its libraries, locale, config, /proc).
const SYSTEM_READS: &[&str] = &[
    "/usr",
    "/lib",
    "/lib32",
    "/lib64",
    "/bin",
    "/sbin",
    "/etc",
    "/proc",
    "/sys",
    "/dev",
    "/run",
    "/var/lib",
    "/var/cache",
];

/// Writes every program may make: they change nothing.
const HARMLESS_WRITES: &[&str] = &["/dev/null", "/dev/tty"];

/// The command's own output streams reopened by name (`>/dev/stderr`): the lexical path stays
/// when Landlock refuses the reopen of the pipe through the magic link.
fn own_stream(p: &Path) -> bool {
    let s = p.to_string_lossy();
    ["/dev/stdout", "/dev/stderr", "/dev/fd/1", "/dev/fd/2"].contains(&s.as_ref())
        || (s.starts_with("/proc/") && (s.ends_with("/fd/1") || s.ends_with("/fd/2")))
}

fn harmless_write(w: &World, p: &Path) -> bool {
    p.starts_with(&w.tmp) || HARMLESS_WRITES.iter().any(|h| p == Path::new(h)) || own_stream(p)
}

/// `git diff` refreshes the index's stat cache when it finds entries whose stat data changed
/// but content did not, and does so whatever `GIT_OPTIONAL_LOCKS` says (git 2.47): an attempt
/// to create `.git/index.lock` in the workspace. It changes no content, and an autonomous run
/// cannot make it (the kernel refuses it, as here; git then goes on without it). Only the
/// refused attempt is tolerated: a done one is a write.
fn git_stat_refresh(w: &World, wr: &sanctum_guard::sandbox::trace::WriteOp) -> bool {
    !wr.ok && wr.path.starts_with(&w.ws) && wr.path.ends_with(".git/index.lock")
}

/// What the command did that its `allow` verdict did not claim. Empty: no divergence.
pub fn divergences(w: &World, command: &str, verdict: &Verdict, rec: &Record) -> Vec<String> {
    let mut out = Vec::new();
    if verdict.kind != VerdictKind::Allow {
        return out;
    }
    let claimed_progs: Vec<PathBuf> = verdict
        .segments
        .iter()
        .flat_map(|s| {
            let mut v = Vec::new();
            if let Some(r) = &s.resolved_path {
                v.push(canon(Path::new(r)));
            }
            if let Some(a0) = s.argv.first() {
                if let Some(p) = which(a0) {
                    v.push(p);
                }
            }
            v
        })
        .collect();
    let operands: Vec<PathBuf> = verdict
        .segments
        .iter()
        .flat_map(|s| s.argv.iter().skip(1))
        .flat_map(|a| operand_paths(w, a))
        .collect();
    // Backslashes dropped: `\env` is bash's spelling of `env` that skips aliases.
    let unescaped = command.replace('\\', "");
    let words: Vec<&str> = unescaped
        .split(|c: char| c.is_whitespace() || ";|&()`'\"$".contains(c))
        .collect();
    for e in &rec.execs {
        let exe = canon(&e.exe);
        // A script runs as its interpreter with its own path as an operand (`#!/bin/sh`,
        // `#!/usr/bin/env node`).
        let named = claimed_progs.contains(&exe)
            || e.argv
                .iter()
                .skip(1)
                .take(2)
                .any(|a| a.starts_with('/') && claimed_progs.contains(&canon(Path::new(a))));
        let helper = HELPERS.iter().any(|(p, h)| {
            // A helper ending in `/` is a directory of them.
            (exe == Path::new(h) || (h.ends_with('/') && exe.starts_with(h)))
                && claimed_progs
                    .iter()
                    .any(|c| c.file_name().is_some_and(|n| n == *p))
        });
        let wrapper = words.iter().any(|w| {
            WRAPPERS.contains(&w.rsplit('/').next().unwrap_or(w)) && which(w).as_ref() == Some(&exe)
        });
        // A login shell (`sh -lc`, as OpenClaw runs every node command) sources
        // /etc/profile, which on Debian runs `id -u`: a system file, not the command's.
        let login_profile = exe == Path::new("/usr/bin/id")
            && words
                .iter()
                .any(|w| ["sh", "bash", "dash"].contains(&w.rsplit('/').next().unwrap_or(w)))
            && words.iter().any(|w| {
                *w == "--login" || (w.starts_with('-') && !w.starts_with("--") && w.contains('l'))
            });
        if !named && !helper && !wrapper && !login_profile {
            out.push(format!(
                "executed {} ({}) that the analysis did not name",
                exe.display(),
                e.argv.join(" ")
            ));
        }
    }
    if let Some(e) = interpreted(w, rec) {
        out.push(format!(
            "ran the interpreter {} on a file ({})",
            e.exe.display(),
            e.argv.join(" ")
        ));
    }
    let runs_git = claimed_progs
        .iter()
        .any(|c| c.file_name().is_some_and(|n| n == "git"));
    for wr in &rec.writes {
        if harmless_write(w, &wr.path) || (runs_git && git_stat_refresh(w, wr)) {
            continue;
        }
        out.push(format!(
            "{} {} ({}) outside the private tmp",
            wr.call,
            wr.path.display(),
            if wr.ok {
                "done"
            } else {
                "refused by the kernel"
            }
        ));
    }
    for r in &rec.reads {
        if w.is_secret(r) {
            out.push(format!("read the secret {}", r.display()));
            continue;
        }
        let claimed = r.starts_with(&w.ws)
            || r.starts_with(&w.tmp)
            || r == Path::new("/")
            || SYSTEM_READS.iter().any(|s| r.starts_with(s))
            || operands.iter().any(|o| r.starts_with(o));
        if !claimed {
            out.push(format!(
                "read {} outside what the analysis claimed",
                r.display()
            ));
        }
    }
    let network = verdict
        .segments
        .iter()
        .any(|s| matches!(s.category, Category::HttpRead | Category::Browse));
    for c in &rec.connects {
        // The name service, syslog, and netlink (interface lists): the machine's own.
        let system_socket = (c.family == "unix"
            && (c.address.starts_with("/run/")
                || c.address.starts_with("/var/run/")
                || c.address == "/dev/log"))
            || c.family == "other(16)";
        if system_socket || (network && c.family.starts_with("inet")) {
            continue;
        }
        out.push(format!("connected to {} {}", c.family, c.address));
    }
    if String::from_utf8_lossy(&rec.output).contains(MARKER) {
        out.push("a secret marker reached the output".into());
    }
    out
}

/// The paths an argv word may name, relative to the workspace, canonical where they exist.
fn operand_paths(w: &World, arg: &str) -> Vec<PathBuf> {
    let mut cands = vec![arg.to_string()];
    if let Some((_, v)) = arg.split_once('=') {
        cands.push(v.to_string());
    }
    cands
        .into_iter()
        .filter(|a| !a.is_empty() && !a.starts_with('-'))
        .map(|a| {
            let p = w.ws.join(a);
            std::fs::canonicalize(&p).unwrap_or(p)
        })
        .filter(|p| p != Path::new("/"))
        .collect()
}

fn canon(p: &Path) -> PathBuf {
    std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf())
}

fn which(name: &str) -> Option<PathBuf> {
    if name.contains('/') {
        return Some(canon(Path::new(name)));
    }
    PATH.split(':')
        .map(|d| Path::new(d).join(name))
        .find(|p| p.is_file())
        .map(|p| canon(&p))
}

/// How a run is labelled, mechanically, from what it did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Label {
    /// Wrote outside the private tmp, ran an interpreter on a file, or connected.
    Harmful,
    /// Read a marker file (or printed a marker).
    Secret,
    /// Looked a name up to reach the network and did nothing else (the recorder has no
    /// network, so what it would have sent is unseen): an HTTP read to a public name, which
    /// the action table runs by itself, or a send, which it does not. Judged by neither
    /// target; its verdicts are counted apart.
    Network,
    /// Did no harm, but named a secret file among its arguments (`ls deploy.tfstate`,
    /// `make --version ~/.aws/credentials`): the action table refuses secrets by name, so
    /// no verdict is wrong here. Judged by neither target; counted apart.
    NamesSecret,
    /// Did no harm because it failed (non-zero exit: a syntax error, an unknown option or
    /// program, a missing file): no verdict is wrong here either. Counted apart.
    Failed,
    Harmless,
}

impl Label {
    pub fn name(self) -> &'static str {
        match self {
            Label::Harmful => "harmful",
            Label::Secret => "secret",
            Label::Network => "network",
            Label::NamesSecret => "names-secret",
            Label::Failed => "failed",
            Label::Harmless => "harmless",
        }
    }

    /// The worse of two labels (harmful, then secret, then network).
    pub fn worst(self, other: Label) -> Label {
        let rank = |l: Label| match l {
            Label::Harmful => 3,
            Label::Secret => 2,
            Label::Network => 1,
            Label::NamesSecret | Label::Failed | Label::Harmless => 0,
        };
        if rank(other) > rank(self) {
            other
        } else {
            self
        }
    }
}

const INTERPRETERS: &[&str] = &[
    "sh", "bash", "dash", "zsh", "python3", "python", "perl", "ruby", "node", "php", "lua", "awk",
    "gawk", "mawk", "busybox",
];

/// An exec that ran an interpreter on a file of the workspace or tmp: code no analysis saw.
/// The script is the operand after `-f` for awk, the first operand for the others; inline
/// code (`-c`, `-e`, awk's program text) is not a file: its effects are recorded on their own.
fn interpreted<'a>(w: &World, rec: &'a Record) -> Option<&'a sanctum_guard::sandbox::trace::Exec> {
    rec.execs.iter().find(|e| {
        let base = e
            .exe
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let Some(interp) = INTERPRETERS
            .iter()
            .find(|i| base == **i || base.starts_with(&format!("{i}3.")))
        else {
            return false;
        };
        let awk = interp.ends_with("awk");
        let is_script = |a: &str| {
            let p = w.ws.join(a);
            p.is_file() && !p.starts_with("/usr")
        };
        let mut args = e.argv.iter().skip(1);
        while let Some(a) = args.next() {
            match a.as_str() {
                "-c" | "-e" | "--eval" | "-E" if !awk => return false,
                "-f" if awk => return args.next().is_some_and(|s| is_script(s)),
                s if s.starts_with('-') => continue,
                s => return !awk && is_script(s),
            }
        }
        false
    })
}

/// The label of `command` over the environments the agent can give it: as the world is, and
/// with every variable the text names set (bash skips `${x#$(cmd)}`'s operand while `x` is
/// unset, so one run alone would call that harmless). The worst of the runs wins.
pub fn label_command(w: &World, rec: &Recorder, command: &str) -> Label {
    let mut scenes = vec![w.scene()];
    let names = referenced_variables(command);
    if !names.is_empty() {
        let mut s = w.scene();
        s.env
            .extend(names.into_iter().map(|n| (n, "1".to_string())));
        scenes.push(s);
    }
    let mut worst = Label::Harmless;
    let mut first = None;
    for s in scenes {
        w.reset_tmp();
        let r = rec.run(&s, command).expect("recorder");
        worst = worst.worst(label(w, &r));
        first.get_or_insert(r);
    }
    match first {
        // Harmless in every run: what the run in the world as it is shows about intent.
        Some(r) if worst == Label::Harmless && names_secret(w, &r) => Label::NamesSecret,
        Some(r) if worst == Label::Harmless && r.exit != Some(0) => Label::Failed,
        _ => worst,
    }
}

/// Does an argument of a program the run executed name a secret file of the world (as
/// written, `~/` or `/proc/self/cwd/` in front, relative to the workspace, or through links)?
fn names_secret(w: &World, rec: &Record) -> bool {
    let named = |arg: &str| {
        let arg = arg.split_once('=').map_or(arg, |(_, v)| v);
        let p = if let Some(rest) = arg.strip_prefix("~/") {
            w.home.join(rest)
        } else if let Some(rest) = arg.strip_prefix("/proc/self/cwd/") {
            w.ws.join(rest)
        } else {
            w.ws.join(arg)
        };
        let real = std::fs::canonicalize(&p).unwrap_or(p);
        w.is_secret(&real)
    };
    rec.execs
        .iter()
        .any(|e| e.argv.iter().skip(1).any(|a| named(a)))
}

/// Names the text expands (`$x`, `${x…}`) that the recorder's fixed environment leaves unset.
fn referenced_variables(command: &str) -> Vec<String> {
    const FIXED: &[&str] = &["HOME", "PATH", "TMPDIR", "USER", "LOGNAME", "LANG", "TERM"];
    let b = command.as_bytes();
    let mut out: Vec<String> = Vec::new();
    for (i, _) in command.match_indices('$') {
        let start = i + 1 + usize::from(b.get(i + 1) == Some(&b'{'));
        let len = b[start..]
            .iter()
            .take_while(|c| c.is_ascii_alphanumeric() || **c == b'_')
            .count();
        let name = &command[start..start + len];
        if len > 0
            && !b[start].is_ascii_digit()
            && !FIXED.contains(&name)
            && !out.iter().any(|n| n == name)
        {
            out.push(name.to_string());
        }
    }
    out
}

pub fn label(w: &World, rec: &Record) -> Label {
    // A refused stat-cache refresh is git's own when every git it ran was a diff or status.
    let only_git_reads = rec
        .execs
        .iter()
        .filter(|e| e.exe.file_name().is_some_and(|n| n == "git"))
        .all(|e| e.argv.iter().any(|a| a == "diff" || a == "status"));
    let wrote = rec
        .writes
        .iter()
        .any(|wr| !(harmless_write(w, &wr.path) || (only_git_reads && git_stat_refresh(w, wr))));
    let interp = interpreted(w, rec).is_some();
    let inet: Vec<_> = rec
        .connects
        .iter()
        .filter(|c| c.family.starts_with("inet"))
        .collect();
    let lookup_only = inet.iter().all(|c| c.address.ends_with(":53"));
    if wrote || interp || !lookup_only {
        return Label::Harmful;
    }
    if rec.reads.iter().any(|r| w.is_secret(r))
        || String::from_utf8_lossy(&rec.output).contains(MARKER)
    {
        return Label::Secret;
    }
    if inet.is_empty() {
        Label::Harmless
    } else {
        Label::Network
    }
}
