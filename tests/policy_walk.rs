//! Recursive reads over a tree, through `decide()` on an in-memory
//! filesystem (the walks ask the decision's facts): a dotenv file at any depth blocks the
//! read, a tree over the walk's bound gates it, and names `xargs` would split gate
//! `find | xargs` but not `find -print0 | xargs -0`.
// Test code: a panic is the failure report, and tests may read their environment.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use sanctum_guard::policy::decide::{decide, DecideContext};
use sanctum_guard::policy::explain::cli_request;
use sanctum_guard::policy::facts::FakeFs;
use sanctum_guard::policy::file::embedded_default;
use sanctum_guard::policy::verdict::VerdictKind::{self, Allow, Ask, Deny};
use std::path::Path;
use std::sync::Arc;

const PATH: &str = "/usr/bin:/bin";

fn base() -> FakeFs {
    let mut fs = FakeFs::new().dir("/w").dir("/home/a/.ssh");
    for p in ["grep", "rg", "find", "xargs", "cat", "wc", "tar"] {
        fs = fs.file(&format!("/usr/bin/{p}"), 0o755);
    }
    fs
}

fn verdict(fs: FakeFs, cmd: &str) -> VerdictKind {
    let policy = embedded_default()
        .with_agent_home(Path::new("/home/a"))
        .unwrap();
    let mut ctx = DecideContext::new(Path::new("/home/a"), PATH, Path::new("/w"), Arc::new(fs));
    ctx.workspace = Some("/w".into());
    decide(&policy, &ctx, &cli_request(cmd, Path::new("/w"))).kind
}

#[test]
fn dotenv_files_at_any_depth_block_recursive_reads() {
    let fs = base()
        .file("/w/src/a.rs", 0o644)
        .file("/w/deep/a/b/c/.env.production", 0o600)
        .file("/w/deep/a/b/c/.env.example", 0o644)
        .file("/w/tpl/.env.example", 0o644)
        .file("/w/tpl/x.txt", 0o644);
    for (cmd, want) in [
        ("grep -r x deep", Deny),
        ("grep -r x .", Deny),
        ("rg --hidden x deep", Deny),
        ("find deep -exec cat {} +", Deny),
        ("find deep | xargs cat", Deny),
        ("tar -c deep | wc -c", Deny),
        // rg skips hidden files only until an ignore file whitelists one: a person decides.
        ("rg x deep", Ask),
        // Templates are not secrets; find's -name filter holds.
        ("rg x src", Allow),
        ("grep -r x tpl", Allow),
        ("grep -r x src", Allow),
        ("find deep -name '*.rs' -exec cat {} +", Allow),
    ] {
        assert_eq!(verdict(fs.clone(), cmd), want, "{cmd}");
    }
}

#[test]
fn a_tree_over_the_walk_bound_gates() {
    let mut fs = base().file("/w/small/a.txt", 0o644);
    for i in 0..20_001 {
        fs = fs.file(&format!("/w/big/d{}/f{i}.txt", i % 100), 0o644);
    }
    assert_eq!(verdict(fs.clone(), "grep -r x small"), Allow);
    assert_eq!(verdict(fs.clone(), "grep -r x big"), Ask);
    assert_eq!(verdict(fs, "find big -name '*.txt' | xargs wc -l"), Ask);
}

#[test]
fn names_xargs_would_split_gate_find_pipes() {
    let fs = base()
        .file("/w/src/a.rs", 0o644)
        .file("/w/src/x -n.rs", 0o644)
        .file("/w/quote/it's.rs", 0o644)
        .file("/w/ok/b.rs", 0o644);
    for (cmd, want) in [
        ("find src -name '*.rs' | xargs wc -l", Ask),
        ("find quote | xargs wc -l", Ask),
        ("find src -name '*.rs' -print0 | xargs -0 wc -l", Allow),
        ("find ok -name '*.rs' | xargs wc -l", Allow),
    ] {
        assert_eq!(verdict(fs.clone(), cmd), want, "{cmd}");
    }
}

/// Only the names `find` prints matter to `xargs`: a name that would split but that the
/// `-name` tests do not keep is never handed on, while a kept file below a directory whose
/// name would split is (its path carries the blank). (Before, any blank anywhere in the
/// tree gated: 80 of 2,953 read commands of real agent traces in a Django checkout, whose
/// tests hold `ssi include with spaces`.)
#[test]
fn only_names_find_prints_can_split() {
    let fs = base()
        .file("/w/a/b.rs", 0o644)
        .file("/w/a/notes with spaces.txt", 0o644)
        .file("/w/a/it's.md", 0o644)
        .file("/w/b/dir with spaces/c.rs", 0o644)
        .file("/w/c/dir with spaces/c.txt", 0o644)
        .file("/w/d/odd dir.rs/x.txt", 0o644);
    for (cmd, want) in [
        ("find a -name '*.rs' | xargs wc -l", Allow),
        ("find a -name '*.rs' -type f | xargs grep -l x", Allow),
        ("find a -name '*.txt' | xargs wc -l", Ask),
        ("find a | xargs wc -l", Ask),
        ("find a -type f | xargs wc -l", Ask),
        ("find b -name '*.rs' | xargs wc -l", Ask),
        ("find c -name '*.rs' | xargs wc -l", Allow),
        ("find c -name '*.txt' | xargs wc -l", Ask),
        // A directory find prints by its name is handed on too.
        ("find d -name '*.rs' | xargs ls", Ask),
        // Not only -name tests (an -o, a -path): every name counts.
        ("find a -name '*.rs' -o -name '*.py' | xargs wc -l", Ask),
        (
            "find a -path './x' -prune -o -name '*.rs' -print | xargs wc -l",
            Ask,
        ),
    ] {
        assert_eq!(verdict(fs.clone(), cmd), want, "{cmd}");
    }
}

/// GNU grep's `--include` narrows the files a recursive grep reads, and a dotenv file it
/// skips is no secret it reads; but only the glob shapes whose meaning on a base name is
/// exact (`NAME`, `*SUFFIX`), and only when an `--include` comes before any `--exclude`
/// (after an exclude, a file matching nothing is read). grep matches a glob against the path
/// and each part after a `/`, with `*` matching `/`: `a*` reads `./a/.env`. (Before, every
/// `grep -r X --include='*.py' .` in a checkout with a `.env` asked: 66 of 2,953 read commands
/// of real agent traces.)
#[test]
fn grep_include_narrows_what_a_recursive_grep_reads() {
    let fs = base()
        .file("/w/src/a.py", 0o644)
        .file("/w/src/b.txt", 0o644)
        .file("/w/.env", 0o600)
        .file("/w/a/.env", 0o600)
        .file("/w/conf/prod.env", 0o600);
    for (cmd, want) in [
        ("grep -r x --include='*.py' .", Allow),
        ("grep -rn x --include=*.py --include=*.txt .", Allow),
        ("grep -r --include '*.py' x .", Allow),
        ("grep -r x --include=setup.py .", Allow),
        ("grep -r x .", Deny),
        // Globs that reach the secret, or that are not of the two exact shapes.
        ("grep -r x --include=.env .", Deny),
        ("grep -r x --include='*.env' .", Deny),
        ("grep -r x --include='*env' .", Deny),
        ("grep -r x --include='*' .", Deny),
        ("grep -r x --include='a*' .", Deny),
        ("grep -r x --include='*/.env' .", Deny),
        ("grep -r x --include='*.p[y]' .", Deny),
        ("grep -r x --include='?env' .", Deny),
        ("grep -r x --include='*.py' --include='.e*' .", Deny),
        // An exclude first: files matching no glob are read.
        ("grep -r x --exclude='*.txt' --include='*.py' .", Deny),
        ("grep -r x --exclude-from=list --include='*.py' .", Deny),
        // An include first, an exclude after: the include decides.
        ("grep -r x --include='*.py' --exclude='*.txt' .", Allow),
        // A glob the shell builds is no literal: a person's call.
        ("grep -r x --include=\"$G\" .", Ask),
        // rg has no --include (its -g globs are not narrowed here).
        ("rg --hidden x -g '*.py' .", Deny),
    ] {
        assert_eq!(verdict(fs.clone(), cmd), want, "{cmd}");
    }
}

/// The whole verdict for `cmd` in /w on `fs`, asked by `source`.
fn judge_from(
    fs: &FakeFs,
    cmd: &str,
    source: sanctum_guard::policy::request::Source,
) -> sanctum_guard::policy::verdict::Verdict {
    let policy = embedded_default()
        .with_agent_home(Path::new("/home/a"))
        .unwrap();
    let mut ctx = DecideContext::new(
        Path::new("/home/a"),
        PATH,
        Path::new("/w"),
        Arc::new(fs.clone()),
    );
    ctx.workspace = Some("/w".into());
    let mut req = cli_request(cmd, Path::new("/w"));
    req.who.source = source;
    decide(&policy, &ctx, &req)
}

/// A recursive read past a secret it does not name asks a person only where the guard runs
/// it under a profile that keeps the secret unreadable (node host, socket `exec`, with the
/// autonomous profile); anywhere else, or when the run would get another profile, it is
/// denied as the secret read it would be.
#[test]
fn a_read_past_a_secret_asks_only_where_the_guard_contains_it() {
    use sanctum_guard::policy::request::Source;
    let fs = base()
        .file("/w/src/a.rs", 0o644)
        .file("/w/deep/.env", 0o600)
        .file("/home/a/.ssh/id_rsa", 0o600)
        .link("/w/sub/keys", "/home/a/.ssh")
        .file("/usr/share/app/.env", 0o644)
        .file("/usr/share/app/a.txt", 0o644)
        .file("/etc/app/key.txt", 0o600)
        .link("/w/etc-link", "/usr/share/app/.env");
    let judge = |cmd: &str, source: Source| judge_from(&fs, cmd, source);
    for cmd in ["grep -r x .", "grep -rn x deep", "grep -R x sub"] {
        for source in [Source::Node, Source::SocketExec] {
            let v = judge(cmd, source);
            assert_eq!(v.kind, Ask, "{cmd} {source:?}: {v:?}");
            assert_eq!(v.profile.as_deref(), Some("autonomous-read"), "{cmd}");
            assert!(
                v.reasons.iter().any(|r| r.code == "secret-in-tree"),
                "{cmd}: {v:?}"
            );
        }
        for source in [Source::SocketRequest, Source::Gateway, Source::Cli] {
            let v = judge(cmd, source);
            assert_eq!(v.kind, Deny, "{cmd} {source:?}: {v:?}");
            assert_eq!(v.reasons[0].code, "secret-in-tree-uncontained", "{cmd}");
        }
    }
    // The run would get the write's profile, which reads the workspace's secrets.
    for cmd in ["grep -r x . > out.txt", "touch b; grep -r x deep"] {
        let v = judge(cmd, Source::Node);
        assert_eq!(v.kind, Deny, "{cmd}: {v:?}");
        assert_eq!(v.reasons[0].code, "secret-in-tree-uncontained", "{cmd}");
    }
    // The walk decides the profile: the whole run is kept from the secret (and from writing).
    let v = judge("grep -r x deep; touch b", Source::Node);
    assert_eq!(
        (v.kind, v.profile.as_deref()),
        (Ask, Some("autonomous-read"))
    );
    // A secret the autonomous profile would read (a `.env` under /usr, which it grants):
    // denied wherever the run.
    for cmd in [
        "grep -r x /usr/share/app",
        "grep -R x .",
        "grep -r x /usr/share",
    ] {
        let v = judge(cmd, Source::Node);
        assert_eq!(v.kind, Deny, "{cmd}: {v:?}");
        assert!(
            v.reasons.iter().all(|r| r.code != "secret-in-tree"),
            "{cmd}: {v:?}"
        );
    }
    // Naming the secret is still the sensitive read it is, wherever the run.
    for cmd in [
        "grep -r x deep/.env",
        "cat deep/.env",
        "grep -r x sub/keys/",
    ] {
        assert_eq!(judge(cmd, Source::Node).kind, Deny, "{cmd}");
    }
    assert_eq!(judge("grep -r x src", Source::Node).kind, Allow);
}

/// `grep -R` reads what a link below points at as if it were there: a directory is walked
/// (once, however many links lead to it), and one outside the workspace and the system
/// directories is a person's call (before, `grep -R x .` over a link to `/srv/app` ran by
/// itself, and a link to another workspace directory hid the `.env` in it).
#[test]
fn a_followed_link_is_walked_where_it_leads() {
    use sanctum_guard::policy::request::Source;
    let fs = base()
        .file("/w/src/a.rs", 0o644)
        .file("/w/deep/.env", 0o600)
        .link("/w/src/to-deep", "/w/deep")
        .file("/srv/app/a.txt", 0o644)
        .link("/w/out/to-srv", "/srv/app")
        .file("/w/plain/a.txt", 0o644)
        .link("/w/plain/again", "/w/plain");
    let judge = |cmd: &str, source: Source| judge_from(&fs, cmd, source);
    let v = judge("grep -R x src", Source::Node);
    assert_eq!(v.kind, Ask, "{v:?}");
    assert!(
        v.reasons.iter().any(|r| r.code == "secret-in-tree"),
        "{v:?}"
    );
    assert_eq!(judge("grep -R x src", Source::SocketRequest).kind, Deny);
    let v = judge("grep -R x out", Source::Node);
    assert_eq!(v.kind, Ask, "{v:?}");
    assert!(
        v.reasons.iter().any(|r| r.code == "read-outside-workspace"),
        "{v:?}"
    );
    // A link back to where it is: walked once, nothing else found.
    assert_eq!(judge("grep -R x plain", Source::Node).kind, Allow);
    // Not followed without -R.
    assert_eq!(judge("grep -r x out", Source::Node).kind, Allow);
}

/// A wrapper is unwrapped only where the agent cannot have put it: with an agent-writable
/// directory first on PATH, `nice ls` runs that directory's `nice`, whatever it does.
#[test]
fn a_wrapper_found_outside_the_system_directories_is_not_unwrapped() {
    let fs = || {
        let mut fs = base().file("/usr/bin/ls", 0o755).file("/w/a.txt", 0o644);
        for w in ["nice", "env", "timeout", "nohup", "stdbuf", "xargs", "find"] {
            fs = fs
                .file(&format!("/usr/bin/{w}"), 0o755)
                .file(&format!("/w/bin/{w}"), 0o755);
        }
        fs
    };
    let decide_on = |path: &str, cmd: &str| {
        let policy = embedded_default()
            .with_agent_home(Path::new("/home/a"))
            .unwrap();
        let mut ctx =
            DecideContext::new(Path::new("/home/a"), path, Path::new("/w"), Arc::new(fs()));
        ctx.workspace = Some("/w".into());
        decide(&policy, &ctx, &cli_request(cmd, Path::new("/w"))).kind
    };
    for cmd in [
        "nice ls",
        "env ls",
        "timeout 5 ls",
        "nohup ls",
        "stdbuf -oL ls",
        "echo | xargs ls",
        "nice -n 5 cat a.txt",
        "find . -name a.txt | xargs cat",
    ] {
        assert_eq!(
            decide_on("/usr/bin:/bin", cmd),
            Allow,
            "{cmd} from /usr/bin"
        );
        assert_ne!(
            decide_on("/w/bin:/usr/bin:/bin", cmd),
            Allow,
            "{cmd} from /w/bin"
        );
    }
    // `command -p` looks the wrapper up on the standard PATH: the system's nice.
    assert_eq!(
        decide_on("/w/bin:/usr/bin:/bin", "command -p nice ls"),
        Allow
    );
}

/// OpenClaw's own default layout: the workspace is `~/.openclaw/workspace`, beside
/// `~/.openclaw/openclaw.json` (a sensitive pattern `~/.openclaw/openclaw.json*`). A glob's
/// literal part is literal: `openclaw.json*` does not name `workspace`, so ordinary reads
/// of that workspace are autonomous, while a link to the config inside it still is not.
#[test]
fn openclaws_default_workspace_is_not_taken_for_its_config() {
    let ws = "/home/a/.openclaw/workspace";
    let mut fs = base()
        .dir(ws)
        .file("/home/a/.openclaw/openclaw.json", 0o600)
        .file("/home/a/.openclaw/openclaw.json.bak", 0o600)
        .file(&format!("{ws}/src/a.rs"), 0o644)
        .file(&format!("{ws}/README.md"), 0o644)
        .dir(&format!("{ws}/.git"));
    for p in ["git", "head", "ls"] {
        fs = fs.file(&format!("/usr/bin/{p}"), 0o755);
    }
    let judge = |fs: &FakeFs, cmd: &str| {
        let policy = embedded_default()
            .with_agent_home(Path::new("/home/a"))
            .unwrap();
        let mut ctx = DecideContext::new(
            Path::new("/home/a"),
            PATH,
            Path::new(ws),
            Arc::new(fs.clone()),
        );
        ctx.workspace = Some(ws.into());
        decide(&policy, &ctx, &cli_request(cmd, Path::new(ws)))
    };
    for cmd in [
        "git log --oneline",
        "rg hi",
        "grep -rn hi .",
        "find . -name '*.rs' | xargs wc -l",
        "ls -la",
    ] {
        let v = judge(&fs, cmd);
        assert_eq!(v.kind, Allow, "{cmd}: {v:?}");
    }
    // The config itself, and every way to it from the workspace, stays out of reach.
    let linked = fs
        .clone()
        .link(&format!("{ws}/cfg"), "/home/a/.openclaw/openclaw.json")
        .link(&format!("{ws}/up"), "/home/a/.openclaw");
    for cmd in [
        "cat ../openclaw.json",
        "cat ~/.openclaw/openclaw.json.bak",
        "cat cfg",
        "grep -R token .",
        "cat up/openclaw.json",
        "grep -r token ..",
        "head ~/.openclaw/openclaw.j*",
    ] {
        let v = judge(&linked, cmd);
        assert_ne!(v.kind, Allow, "{cmd}: {v:?}");
    }
}
