//! Shared fixtures of the policy tests: the case files' escapes (tests/data/*.tsv), an agent
//! home on the real filesystem, a shell-text request.

use sanctum_guard::policy::file::{embedded_default, Policy};
use sanctum_guard::policy::request::{Action, ExecAction, OpenClawAsk, Request, Source, Who};
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
