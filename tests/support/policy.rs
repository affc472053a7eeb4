//! Shared fixtures of the policy tests: the case files' escapes (tests/data/*.tsv), an agent
//! home on the real filesystem, a shell-text request.

use sanctum_guard::policy::decide::{decide, DecideContext};
use sanctum_guard::policy::file::{embedded_default, Policy};
use sanctum_guard::policy::request::{Action, ExecAction, OpenClawAsk, Request, Source, Who};
use sanctum_guard::policy::verdict::VerdictKind;
use std::path::{Path, PathBuf};

/// Undoes the case files' escapes: `\n`, `\r`, `\t`, `\\`.
pub fn unescape(s: &str) -> String {
    let mut out = String::new();
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('r') => out.push('\r'),
            Some('t') => out.push('\t'),
            Some('\\') => out.push('\\'),
            Some(other) => {
                out.push('\\');
                out.push(other);
            }
            None => out.push('\\'),
        }
    }
    out
}

/// The PATH the policy tests resolve program names with.
pub const PATH: &str = "/usr/local/bin:/usr/bin:/bin";

/// A temporary agent home and workspace on the real filesystem, for `decide()`: secrets in
/// the home, symlinks from the workspace into them, the default policy for that home.
pub struct AgentHome {
    _dir: tempfile::TempDir,
    pub home: PathBuf,
    pub ws: PathBuf,
    pub policy: Policy,
}

/// What an [`AgentHome`] holds; paths are relative to the home or the workspace.
#[derive(Default)]
pub struct Layout<'a> {
    pub home_dirs: &'a [&'a str],
    pub ws_dirs: &'a [&'a str],
    /// `(path, content)`.
    pub home_files: &'a [(&'a str, &'a str)],
    /// `(path, content)`.
    pub ws_files: &'a [(&'a str, &'a str)],
    /// `(link in the workspace, target in the home)`.
    pub links: &'a [(&'a str, &'a str)],
}

impl AgentHome {
    /// Builds the home and workspace `layout` describes.
    pub fn new(layout: &Layout) -> AgentHome {
        let dir = tempfile::tempdir().expect("tempdir");
        let home = dir.path().join("home");
        let ws = dir.path().join("ws");
        for d in layout.home_dirs {
            std::fs::create_dir_all(home.join(d)).expect("mkdir");
        }
        for d in layout.ws_dirs {
            std::fs::create_dir_all(ws.join(d)).expect("mkdir");
        }
        for (rel, body) in layout.home_files {
            std::fs::write(home.join(rel), body).expect("write");
        }
        for (rel, body) in layout.ws_files {
            std::fs::write(ws.join(rel), body).expect("write");
        }
        for (link, target) in layout.links {
            std::os::unix::fs::symlink(home.join(target), ws.join(link)).expect("symlink");
        }
        let policy = embedded_default()
            .with_agent_home(&home)
            .expect("policy for home");
        AgentHome {
            _dir: dir,
            home,
            ws,
            policy,
        }
    }

    /// Fills a case's `@HOME@` and `@WS@` placeholders.
    pub fn subst(&self, s: &str) -> String {
        s.replace("@HOME@", &self.home.to_string_lossy())
            .replace("@WS@", &self.ws.to_string_lossy())
    }
}

/// A shell-text exec request of agent `main` from the socket, run in `cwd`.
pub fn shell_request(id: &str, command: &str, cwd: &Path) -> Request {
    Request {
        id: id.into(),
        who: Who {
            agent_id: "main".into(),
            session_key: None,
            source: Source::SocketRequest,
        },
        action: Action::Exec(ExecAction {
            command: Some(command.to_string()),
            cwd: Some(cwd.to_path_buf()),
            ..ExecAction::default()
        }),
        received_at_ms: 0,
        deadline_ms: None,
        openclaw: OpenClawAsk::default(),
    }
}

/// What every secret of [`attack_world`] holds (and nothing else there): a run's output that
/// contains it printed a secret.
pub const MARK: &str = "SGMARK";

/// One row of tests/data/attacks/*.tsv: `KIND<TAB>ACCEPT<TAB>COMMAND`.
pub struct Case {
    pub file: String,
    pub line: usize,
    /// `harmful`, `secret` or `harmless`.
    pub kind: String,
    /// The verdicts the row accepts.
    pub accept: Vec<String>,
    /// Shell text, escapes undone, placeholders not yet filled.
    pub command: String,
}

/// Every row of the attack suite, in file order.
pub fn attack_cases() -> Vec<Case> {
    let dir = super::process::repo_root().join("tests/data/attacks");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("tests/data/attacks")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "tsv"))
        .collect();
    files.sort();
    let mut out = Vec::new();
    for f in files {
        let name = f.file_name().expect("name").to_string_lossy().into_owned();
        let text = std::fs::read_to_string(&f).expect("read case file");
        for (i, l) in text.lines().enumerate() {
            if l.starts_with('#') || l.trim().is_empty() {
                continue;
            }
            let cols: Vec<&str> = l.splitn(3, '\t').collect();
            assert_eq!(
                cols.len(),
                3,
                "{name}:{}: KIND<TAB>ACCEPT<TAB>COMMAND",
                i + 1
            );
            let kind = cols[0].to_string();
            assert!(
                ["harmful", "secret", "harmless"].contains(&kind.as_str()),
                "{name}:{}: unknown kind {kind:?}",
                i + 1
            );
            let accept: Vec<String> = cols[1].split(',').map(str::to_string).collect();
            for a in &accept {
                assert!(
                    ["allow", "ask", "deny"].contains(&a.as_str()),
                    "{name}:{}: unknown verdict {a:?}",
                    i + 1
                );
            }
            out.push(Case {
                file: name.clone(),
                line: i + 1,
                kind,
                accept,
                command: unescape(cols[2]),
            });
        }
    }
    out
}

/// The attack suite's agent home: secrets (each holding [`MARK`]), a workspace with
/// symlinks into them.
pub fn attack_world() -> AgentHome {
    AgentHome::new(&Layout {
        home_dirs: &[
            ".ssh",
            ".aws",
            ".openclaw/state",
            ".config/gh",
            ".gnupg",
            "projects/site",
            // The home is a (dotfiles) repository: `REV:PATH` is relative to its root.
            ".git",
        ],
        ws_dirs: &["src", "docs", "sub/.git/hooks", "app/lib"],
        home_files: &[
            (".ssh/id_rsa", "SGMARK-ssh-key"),
            (".aws/credentials", "SGMARK-aws"),
            (".env", "TOKEN=SGMARK-home-env"),
            (".git-credentials", "https://u:SGMARK-gitcred@h"),
            (".config/gh/hosts.yml", "oauth_token: SGMARK-gh"),
            (".netrc", "machine h login u password SGMARK-netrc"),
            (".openclaw/exec-approvals.json", "{}"),
            (".openclaw/state/openclaw.sqlite", ""),
            ("notes.txt", "SGMARK-notes"),
        ],
        ws_files: &[
            ("a.txt", "a"),
            ("src/main.rs", "fn main() {}\n"),
            ("src/lib.rs", "\n"),
            (".env", "PORT=SGMARK-ws-env"),
            ("run.sh", "#!/bin/sh\necho hi\n"),
            ("Cargo.toml", "[package]\nname = \"x\"\n"),
            ("package.json", "{}"),
            // A dotenv file below the root: secret by name wherever it is.
            ("app/.env", "API_KEY=SGMARK-app-env"),
            ("app/.env.example", "API_KEY="),
            // What a cloned repository may carry: `rg` then reads the hidden secret.
            ("app/.ignore", "!.env\n"),
            ("app/main.py", "print(1)\n"),
            ("app/lib/util.py", "\n"),
            // A secret by name that is not hidden: `rg` skips dotfiles but reads this one.
            ("deploy.tfstate", "{\"secret\": \"SGMARK-tfstate\"}"),
        ],
        links: &[
            ("sshlink", ".ssh"),
            ("keylink", ".ssh/id_rsa"),
            ("docs/awslink", ".aws"),
        ],
    })
}

/// The verdict for shell text run in the world's workspace.
pub fn verdict_of(w: &AgentHome, command: &str) -> VerdictKind {
    verdict_as(w, command, Source::SocketRequest)
}

/// [`verdict_of`] as `source` asks: the node host and the socket's `exec` run the command
/// themselves (so a variable no request names is unset; a secret the sandbox keeps is not
/// read), the socket's `request` only answers.
pub fn verdict_as(w: &AgentHome, command: &str, source: Source) -> VerdictKind {
    let mut ctx = DecideContext::standalone(&w.home, PATH, &w.ws);
    ctx.workspace = Some(w.ws.clone());
    let mut req = shell_request("attack", command, &w.ws);
    req.who.source = source;
    decide(&w.policy, &ctx, &req).kind
}
