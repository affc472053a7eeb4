//! Git as the guard runs it autonomously: the settings that keep git from running a program
//! by itself, and the check that every repository config a git command line reads is inert.
//! Both are needed: command-line settings beat a repository's own config, but only for keys
//! with a fixed name; a driver named by the repository (`filter.<driver>.clean`,
//! `diff.<driver>.textconv`, `merge.<driver>.driver`) can only be refused by the check.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Command-line-scope settings (`GIT_CONFIG_COUNT`), read after every repository's config so
/// they win over it, in nested repositories and for git started by any program of the run.
/// `diff.external` is not here: any value is a program git runs, and an empty one makes
/// `git diff` fail; the repository check refuses it instead.
const PINNED: &[(&str, &str)] = &[
    ("core.hooksPath", "/dev/null"),
    ("core.fsmonitor", "false"),
    ("core.pager", "cat"),
    ("core.editor", "false"),
    ("core.sshCommand", "false"),
    ("core.askPass", "false"),
    ("core.alternateRefsCommand", ""),
    // An empty helper empties the list the repository's config built.
    ("credential.helper", ""),
    ("sequence.editor", "false"),
    ("gpg.program", "false"),
    ("gpg.openpgp.program", "false"),
    ("gpg.x509.program", "false"),
    ("gpg.ssh.program", "false"),
    ("gpg.ssh.defaultKeyCommand", "false"),
    ("uploadpack.packObjectsHook", ""),
    ("gc.auto", "0"),
    ("maintenance.auto", "false"),
    ("protocol.allow", "never"),
];

/// Transports git knows by name. A repository's `protocol.<name>.allow` beats
/// `protocol.allow`, so each is pinned too (and `GIT_ALLOW_PROTOCOL` beats all config).
const PROTOCOLS: [&str; 8] = ["ext", "file", "git", "http", "https", "ssh", "ftp", "ftps"];

/// The variables that neutralise what git would run by itself: no system or global config,
/// no prompt, no pager or editor, no transport, and [`PINNED`] at command-line scope.
pub fn protective_env() -> BTreeMap<String, String> {
    let mut env = BTreeMap::new();
    for (k, v) in [
        ("GIT_CONFIG_NOSYSTEM", "1"),
        ("GIT_CONFIG_GLOBAL", "/dev/null"),
        ("GIT_TERMINAL_PROMPT", "0"),
        // `git status` and `git diff` refresh the index when they can: a write to
        // `.git/index` a read must not make.
        ("GIT_OPTIONAL_LOCKS", "0"),
        ("GIT_PAGER", "cat"),
        ("PAGER", "cat"),
        ("GIT_EDITOR", "false"),
        ("GIT_SEQUENCE_EDITOR", "false"),
        ("GIT_SSH_COMMAND", "false"),
        ("GIT_ASKPASS", "false"),
        ("SSH_ASKPASS", "false"),
        // A list naming no transport: every transport refused, whatever config says.
        ("GIT_ALLOW_PROTOCOL", ""),
    ] {
        env.insert(k.to_owned(), v.to_owned());
    }
    let protocols: Vec<(String, &str)> = PROTOCOLS
        .iter()
        .map(|p| (format!("protocol.{p}.allow"), "never"))
        .collect();
    let all = PINNED
        .iter()
        .map(|(k, v)| ((*k).to_owned(), *v))
        .chain(protocols);
    let mut n = 0;
    for (i, (k, v)) in all.enumerate() {
        env.insert(format!("GIT_CONFIG_KEY_{i}"), k);
        env.insert(format!("GIT_CONFIG_VALUE_{i}"), v.to_owned());
        n = i + 1;
    }
    env.insert("GIT_CONFIG_COUNT".into(), n.to_string());
    env
}

/// Where one git command line takes its repository from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Place {
    /// Found from this directory upwards (`.git`, or a bare repository).
    Discover(PathBuf),
    /// This very git directory (`--git-dir`, `GIT_DIR`, `--bare`).
    GitDir(PathBuf),
}

/// The global option that makes git run its subcommands from another directory.
const EXEC_PATH: &str = "--exec-path";

/// The places the git command line `argv`, run in `cwd` with `env`, reads repository config
/// from: its global options (`-C`, `--git-dir`, `--work-tree`, `--bare`) and `GIT_DIR` /
/// `GIT_WORK_TREE`. `Err`: an option that moves where git finds its own programs.
pub fn places(
    argv: &[String],
    cwd: &Path,
    env: &BTreeMap<String, String>,
) -> Result<Vec<Place>, String> {
    places_from(argv, cwd, env, true)
}

/// [`places`] for a `cwd` that already has the command line's `-C` options applied (the
/// shell analysis's directories of a git segment): applying them twice would check
/// `sub/sub` for `git -C sub`, a repository git never reads.
pub fn places_in(
    argv: &[String],
    cwd: &Path,
    env: &BTreeMap<String, String>,
) -> Result<Vec<Place>, String> {
    places_from(argv, cwd, env, false)
}

fn places_from(
    argv: &[String],
    cwd: &Path,
    env: &BTreeMap<String, String>,
    apply_c: bool,
) -> Result<Vec<Place>, String> {
    let mut dir = cwd.to_path_buf();
    let mut git_dir = env.get("GIT_DIR").map(PathBuf::from);
    let mut work_tree = env.get("GIT_WORK_TREE").map(PathBuf::from);
    let mut bare = false;
    let mut args = argv.iter().skip(1);
    while let Some(a) = args.next() {
        let (name, inline) = match a.split_once('=') {
            Some((n, v)) if n.starts_with("--") => (n, Some(v.to_owned())),
            _ => (a.as_str(), None),
        };
        let mut value = || inline.clone().or_else(|| args.next().cloned());
        match name {
            "-C" => {
                let v = value().unwrap_or_default();
                if apply_c && !v.is_empty() {
                    dir = dir.join(v);
                }
            }
            "--git-dir" => git_dir = value().map(|v| dir.join(v)),
            "--work-tree" => work_tree = value().map(|v| dir.join(v)),
            "-c" | "--config-env" | "--namespace" | "--super-prefix" | "--attr-source" => {
                let _ = value();
            }
            "--bare" => bare = true,
            n if n.starts_with(EXEC_PATH) => {
                return Err(format!("git {n} moves where git finds its programs"))
            }
            n if n.starts_with('-') => {}
            _ => break,
        }
    }
    let mut out = Vec::new();
    match git_dir {
        Some(g) => out.push(Place::GitDir(cwd.join(g))),
        None if bare => out.push(Place::GitDir(dir.clone())),
        None => out.push(Place::Discover(dir.clone())),
    }
    if let Some(w) = work_tree {
        out.push(Place::Discover(cwd.join(w)));
    }
    Ok(out)
}

/// Keys of a repository's config that cannot make git run a program or read outside the
/// repository (`section.key`, subsection elided as `*`). Anything else is not understood.
const PLAIN_GIT_KEYS: &[&str] = &[
    "core.repositoryformatversion",
    "core.filemode",
    "core.bare",
    "core.logallrefupdates",
    "core.ignorecase",
    "core.precomposeunicode",
    "core.symlinks",
    "core.autocrlf",
    "core.eol",
    "core.safecrlf",
    "core.quotepath",
    "core.sharedrepository",
    "core.abbrev",
    "core.compression",
    "remote.*.url",
    "remote.*.pushurl",
    "remote.*.fetch",
    "remote.*.tagopt",
    "remote.*.prune",
    "branch.*.remote",
    "branch.*.merge",
    "branch.*.rebase",
    "branch.*.pushremote",
    "user.name",
    "user.email",
    "init.defaultbranch",
    "extensions.objectformat",
    "extensions.worktreeconfig",
    "pull.rebase",
    "pull.ff",
    "fetch.prune",
    "push.default",
    "gc.auto",
    "index.version",
    "submodule.*.url",
    "submodule.*.active",
    "color.ui",
    "advice.*",
];

/// The git directory `place` reads when it is not inside `workspace` (canonical): one found
/// above the workspace, or named by a `.git` file or `--git-dir` elsewhere. Git would read
/// and list outside the workspace. `Ok(None)`: inside, or no repository at all.
pub fn repository_outside(
    place: &Place,
    workspace: &Path,
) -> Result<Option<PathBuf>, std::io::Error> {
    let dir = match place {
        Place::Discover(dir) => find_git_dir(dir)?,
        Place::GitDir(g) => Some(g.clone()),
    };
    Ok(dir.filter(|g| !g.canonicalize().is_ok_and(|c| c.starts_with(workspace))))
}

/// The first key of the repository configs `place` reads that is not plain, if any
/// (`Ok(None)` when there is no repository or its config is plain). Unreadable config is `Err`.
pub fn config_not_plain(place: &Place) -> Result<Option<String>, std::io::Error> {
    let files = match place {
        Place::Discover(dir) => match find_git_dir(dir)? {
            Some(g) => configs_of(&g)?,
            None => return Ok(None),
        },
        Place::GitDir(g) => configs_of(g)?,
    };
    for f in files {
        if let Some(key) = file_not_plain(&f)? {
            return Ok(Some(key));
        }
    }
    Ok(None)
}

/// [`config_not_plain`] of the repository found from `dir`.
pub fn git_config_not_plain(dir: &Path) -> Result<Option<String>, std::io::Error> {
    config_not_plain(&Place::Discover(dir.to_path_buf()))
}

/// The first key of one config file that is not plain (a missing file is plain).
fn file_not_plain(config: &Path) -> Result<Option<String>, std::io::Error> {
    let text = match std::fs::read_to_string(config) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let mut section = String::new();
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        let rest = if let Some(body) = line.strip_prefix('[') {
            let Some((head, after)) = body.split_once(']') else {
                return Ok(Some(format!("unparsable section line {line:?}")));
            };
            section = section_name(head);
            after.trim()
        } else {
            line
        };
        if rest.is_empty() || rest.starts_with('#') || rest.starts_with(';') {
            continue;
        }
        let key = rest
            .split(['=', ' ', '\t'])
            .next()
            .unwrap_or("")
            .to_ascii_lowercase();
        let full = format!("{section}.{key}");
        if !PLAIN_GIT_KEYS.iter().any(|k| key_matches(k, &full)) {
            return Ok(Some(full));
        }
    }
    Ok(None)
}

/// `core`, `remote "origin"` → `remote.*`, `branch.main` → `branch.*`.
fn section_name(head: &str) -> String {
    let head = head.trim();
    let (name, has_sub) = match head.split_once([' ', '.']) {
        Some((n, _)) => (n, true),
        None => (head, false),
    };
    let name = name.to_ascii_lowercase();
    if has_sub {
        format!("{name}.*")
    } else {
        name
    }
}

fn key_matches(pattern: &str, key: &str) -> bool {
    match pattern.strip_suffix(".*") {
        // `advice.*`: any key of the section.
        Some(section) if !section.contains('.') && !pattern.contains(".*.") => {
            key.starts_with(section) && key[section.len()..].starts_with('.')
        }
        _ => pattern.eq_ignore_ascii_case(key),
    }
}

/// The git directory git would find from `dir`: walking up, a `.git` directory, a link to
/// one, or a `.git` file naming one; else the directory itself when it is a git directory (a
/// bare repository). A `.git` this cannot read or understand is an error: the caller gates.
fn find_git_dir(dir: &Path) -> Result<Option<PathBuf>, std::io::Error> {
    for d in dir.ancestors() {
        let dot = d.join(".git");
        if std::fs::symlink_metadata(&dot).is_ok() {
            // Git follows a `.git` link, so this does too.
            if std::fs::metadata(&dot)?.is_dir() {
                return Ok(Some(dot));
            }
            let text = std::fs::read_to_string(&dot)?;
            let gitdir = text.strip_prefix("gitdir:").map(str::trim).ok_or_else(|| {
                std::io::Error::other(format!("{} is not a gitdir file", dot.display()))
            })?;
            return Ok(Some(d.join(gitdir)));
        }
        if is_git_dir(d) {
            return Ok(Some(d.to_path_buf()));
        }
    }
    Ok(None)
}

/// Git's own test for a git directory: `HEAD`, `objects/` and `refs/`.
fn is_git_dir(d: &Path) -> bool {
    std::fs::symlink_metadata(d.join("HEAD")).is_ok()
        && d.join("objects").is_dir()
        && d.join("refs").is_dir()
}

/// The config files of a git directory: the common directory's `config` (a linked worktree
/// shares it) and the per-worktree `config.worktree`.
fn configs_of(gitdir: &Path) -> Result<Vec<PathBuf>, std::io::Error> {
    let common = match std::fs::read_to_string(gitdir.join("commondir")) {
        Ok(c) => gitdir.join(c.trim()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => gitdir.to_path_buf(),
        Err(e) => return Err(e),
    };
    Ok(vec![common.join("config"), gitdir.join("config.worktree")])
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_repository_outside_the_workspace_is_named() {
        let t = tempfile::tempdir().expect("tempdir");
        let root = t.path().canonicalize().expect("canonical");
        let mkrepo = |d: &Path| {
            for sub in ["objects", "refs"] {
                std::fs::create_dir_all(d.join(".git").join(sub)).expect("mkdir");
            }
            std::fs::write(d.join(".git/HEAD"), "ref: refs/heads/main\n").expect("HEAD");
        };
        // The workspace inside another repository (a home directory kept in git).
        let outer = root.join("home");
        let ws = outer.join("ws");
        std::fs::create_dir_all(ws.join("src")).expect("ws");
        mkrepo(&outer);
        let d = |p: &Path| Place::Discover(p.to_path_buf());
        let out = |p: &Place| repository_outside(p, &ws).expect("readable");
        assert_eq!(out(&d(&ws.join("src"))), Some(outer.join(".git")));
        assert_eq!(
            out(&Place::GitDir(outer.join(".git"))),
            Some(outer.join(".git"))
        );
        // Its own repository: inside.
        mkrepo(&ws);
        assert_eq!(out(&d(&ws.join("src"))), None);
        // A `.git` file naming a git directory elsewhere (a worktree of another clone).
        std::fs::remove_dir_all(ws.join(".git")).expect("rm");
        std::fs::write(
            ws.join(".git"),
            format!("gitdir: {}\n", outer.join(".git").display()),
        )
        .expect(".git file");
        assert_eq!(out(&d(&ws)), Some(outer.join(".git")));
        // No repository anywhere above.
        let lone = root.join("lone");
        std::fs::create_dir_all(&lone).expect("lone");
        assert_eq!(
            repository_outside(&d(&lone), &lone).expect("readable"),
            None
        );
    }

    use super::*;

    #[test]
    fn places_follow_the_global_options_git_follows() {
        let cwd = Path::new("/w");
        let v = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let none = BTreeMap::new();
        let d = |p: &str| Place::Discover(PathBuf::from(p));
        let g = |p: &str| Place::GitDir(PathBuf::from(p));
        for (argv, want) in [
            (v(&["git", "status"]), vec![d("/w")]),
            (v(&["git", "-C", "a", "-C", "b", "log"]), vec![d("/w/a/b")]),
            (v(&["git", "-C", "/r", "status"]), vec![d("/r")]),
            (v(&["git", "--git-dir=/g", "log"]), vec![g("/g")]),
            (
                v(&["git", "-C", "a", "--git-dir", "g", "log"]),
                vec![g("/w/a/g")],
            ),
            (
                v(&["git", "--work-tree=/t", "--git-dir=/g", "status"]),
                vec![g("/g"), d("/t")],
            ),
            (v(&["git", "--bare", "log"]), vec![g("/w")]),
            (
                v(&["git", "-c", "x.y=z", "-C", "a", "log"]),
                vec![d("/w/a")],
            ),
            // Options after the subcommand are the subcommand's.
            (v(&["git", "log", "-C", "/elsewhere"]), vec![d("/w")]),
        ] {
            assert_eq!(places(&argv, cwd, &none).unwrap(), want, "{argv:?}");
        }
        let env = BTreeMap::from([("GIT_DIR".to_string(), "/e".to_string())]);
        assert_eq!(
            places(&v(&["git", "log"]), cwd, &env).unwrap(),
            vec![g("/e")]
        );
        assert!(places(&v(&["git", "--exec-path=/w/bin", "status"]), cwd, &none).is_err());
    }

    #[test]
    fn protective_env_counts_every_key_it_sets() {
        let env = protective_env();
        let n: usize = env["GIT_CONFIG_COUNT"].parse().unwrap();
        for i in 0..n {
            assert!(env.contains_key(&format!("GIT_CONFIG_KEY_{i}")), "{i}");
            assert!(env.contains_key(&format!("GIT_CONFIG_VALUE_{i}")), "{i}");
        }
        assert!(!env.contains_key(&format!("GIT_CONFIG_KEY_{n}")));
        assert_eq!(env["GIT_ALLOW_PROTOCOL"], "");
    }

    #[test]
    fn a_git_dir_that_cannot_be_read_or_understood_is_not_plain() {
        let d = tempfile::tempdir().unwrap();
        let ws = d.path();
        // A `.git` link to a repository elsewhere: git follows it, so the check does too.
        let real = ws.join("real");
        std::fs::create_dir_all(real.join(".git")).unwrap();
        std::fs::write(real.join(".git/config"), "[core]\n\tfsmonitor = x\n").unwrap();
        let linked = ws.join("linked");
        std::fs::create_dir(&linked).unwrap();
        std::os::unix::fs::symlink(real.join(".git"), linked.join(".git")).unwrap();
        assert_eq!(
            git_config_not_plain(&linked).unwrap().as_deref(),
            Some("core.fsmonitor")
        );
        // A `.git` file naming a gitdir whose config sets a program.
        let wt = ws.join("wt");
        std::fs::create_dir(&wt).unwrap();
        std::fs::write(
            wt.join(".git"),
            format!("gitdir: {}\n", real.join(".git").display()),
        )
        .unwrap();
        assert_eq!(
            git_config_not_plain(&wt).unwrap().as_deref(),
            Some("core.fsmonitor")
        );
        // A `.git` file that is not a gitdir file, or a link to nothing: an error (gates).
        let odd = ws.join("odd");
        std::fs::create_dir(&odd).unwrap();
        std::fs::write(odd.join(".git"), "not a gitdir\n").unwrap();
        assert!(git_config_not_plain(&odd).is_err());
        let dangling = ws.join("dangling");
        std::fs::create_dir(&dangling).unwrap();
        std::os::unix::fs::symlink(ws.join("nowhere"), dangling.join(".git")).unwrap();
        assert!(git_config_not_plain(&dangling).is_err());
    }

    #[test]
    fn git_config_allow_list() {
        let d = tempfile::tempdir().unwrap();
        let ws = d.path();
        assert_eq!(git_config_not_plain(ws).unwrap(), None, "no repository");
        std::fs::create_dir_all(ws.join(".git")).unwrap();
        std::fs::create_dir_all(ws.join("sub/deeper")).unwrap();
        let plain = "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\
                     [remote \"origin\"]\n\turl = https://x/y\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n\
                     [branch \"main\"]\n\tremote = origin\n\tmerge = refs/heads/main\n";
        std::fs::write(ws.join(".git/config"), plain).unwrap();
        assert_eq!(git_config_not_plain(&ws.join("sub/deeper")).unwrap(), None);
        for (bad, key) in [
            ("[core]\n\tfsmonitor = /tmp/x\n", "core.fsmonitor"),
            ("[core]\n\thooksPath = h\n", "core.hookspath"),
            ("[filter \"lfs\"]\n\tclean = x\n", "filter.*.clean"),
            (
                "[diff \"x\"]\n\ttextconv = cat ~/.ssh/id_rsa\n",
                "diff.*.textconv",
            ),
            ("[include]\n\tpath = /tmp/evil\n", "include.path"),
            ("[alias]\n\tst = !sh\n", "alias.st"),
            ("[core] worktree = /root\n", "core.worktree"),
        ] {
            std::fs::write(ws.join(".git/config"), format!("{plain}{bad}")).unwrap();
            assert_eq!(
                git_config_not_plain(&ws.join("sub")).unwrap().as_deref(),
                Some(key),
                "{bad}"
            );
        }
    }
}
