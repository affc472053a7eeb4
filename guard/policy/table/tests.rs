//! Unit tests of the command table on non-exec actions (exec cases live in
//! tests/data/policy_cases.tsv).

use super::*;
use crate::policy::file::embedded_default;

fn ctx_for<'a>(policy: &'a Policy, home: &'a Path) -> TableContext<'a> {
    TableContext {
        policy,
        home,
        workspace: Path::new("/workspace"),
        cwd: Path::new("/workspace"),
    }
}

fn cats(a: &Action) -> Vec<Category> {
    let policy = embedded_default()
        .with_agent_home(Path::new("/home/agent"))
        .expect("policy");
    let t = ctx_for(&policy, Path::new("/home/agent"));
    classify_action(a, &t)
        .findings
        .iter()
        .map(|f| f.category)
        .collect()
}

#[test]
fn non_exec_actions_get_categories() {
    let p = |s: &str| PathBuf::from(s);
    assert_eq!(
        cats(&Action::FileRead { path: p("a.txt") }),
        vec![Category::Read]
    );
    assert!(cats(&Action::FileRead {
        path: p("/home/agent/.ssh/id_rsa")
    })
    .contains(&Category::SensitivePath));
    assert!(cats(&Action::FileWrite {
        path: p("/etc/passwd"),
        content_sha256: None
    })
    .contains(&Category::Privilege));
    assert!(cats(&Action::FileWrite {
        path: p("/home/agent/.openclaw/exec-approvals.json"),
        content_sha256: None
    })
    .contains(&Category::ApprovalsOff));
    assert_eq!(
        cats(&Action::FileDelete { path: p("x") }),
        vec![Category::Delete]
    );
    assert_eq!(
        cats(&Action::Http {
            method: "get".into(),
            url: "https://x.example".into()
        }),
        vec![Category::HttpRead]
    );
    assert_eq!(
        cats(&Action::Http {
            method: "POST".into(),
            url: "https://x.example".into()
        }),
        vec![Category::HttpWrite]
    );
    assert!(cats(&Action::Http {
        method: "GET".into(),
        url: "file:///home/agent/.aws/credentials".into()
    })
    .contains(&Category::SensitivePath));
    assert_eq!(
        cats(&Action::Browser {
            action: "goto".into(),
            url: Some("https://x.example".into())
        }),
        vec![Category::Browse]
    );
    assert_eq!(
        cats(&Action::Browser {
            action: "screenshot".into(),
            url: None
        }),
        vec![Category::Privilege]
    );
    assert_eq!(
        cats(&Action::Browser {
            action: "launch".into(),
            url: None
        }),
        vec![Category::Privilege]
    );
    assert_eq!(
        cats(&Action::PackageInstall {
            manager: "npm".into(),
            packages: vec!["x".into()]
        }),
        vec![Category::PackageInstall]
    );
    assert_eq!(
        cats(&Action::ProcessExit { code: Some(0) }),
        vec![Category::ProcessExit]
    );
    assert_eq!(
        cats(&Action::SkillInstall { name: "x".into() }),
        vec![Category::SkillInstall]
    );
    assert_eq!(
        cats(&Action::ConfigChange {
            key: "tools.exec.security".into(),
            value: Some("full".into())
        }),
        vec![Category::ApprovalsOff]
    );
    assert_eq!(
        cats(&Action::ConfigChange {
            key: "tools.exec.ask".into(),
            value: Some("always".into())
        }),
        vec![Category::ConfigChange]
    );
    assert_eq!(
        cats(&Action::ConfigChange {
            key: "agents.defaults.model".into(),
            value: None
        }),
        vec![Category::ConfigChange]
    );
}

/// Package managers' listings judged on a trusted `cargo`/`go`/`pip` (the attack suite's
/// PATH may hold neither cargo nor go, so their rows alone could not fail): a config that
/// names a rustc wrapper, a tool wrapper or another interpreter makes the listing code.
#[cfg(test)]
mod tool_reads {
    use super::*;
    use crate::policy::shell::{Stdin, Word};

    fn seg(ws: &Path, argv: &str) -> Segment {
        let argv: Vec<Word> = argv.split_whitespace().map(Word::literal).collect();
        Segment {
            text: String::new(),
            program: argv[0].value.clone(),
            argv,
            trusted_name: true,
            trusted_location: true,
            resolved: None,
            resolved_real: None,
            redirects: Vec::new(),
            stdin: Stdin::Inherited,
            wrappers: Vec::new(),
            privileged: false,
            env_assignments: Vec::new(),
            cwds: vec![ws.to_path_buf()],
            function_call: false,
            problem: None,
        }
    }

    #[test]
    fn listings_that_load_code_are_not_reads() {
        let _facts = crate::host_facts::scope();
        let dir = tempfile::tempdir().expect("tempdir");
        let home = dir.path().join("home");
        let ws = dir.path().join("ws");
        let rs = ws.join("rs");
        std::fs::create_dir_all(rs.join(".cargo")).expect("mkdir");
        std::fs::create_dir_all(&home).expect("mkdir");
        std::fs::write(
            rs.join(".cargo/config.toml"),
            "[build]\nrustc-wrapper = \"x\"\n",
        )
        .expect("write");
        let policy = embedded_default().with_agent_home(&home).expect("policy");
        let cats = |cwd: &Path, argv: &str| {
            let t = TableContext {
                policy: &policy,
                home: &home,
                workspace: &ws,
                cwd,
            };
            classify_segment(&seg(cwd, argv), &t)
                .findings
                .iter()
                .map(|f| f.category)
                .collect::<Vec<_>>()
        };
        let read = |cwd: &Path, argv: &str| cats(cwd, argv) == vec![Category::Enumerate];
        assert!(read(&ws, "cargo tree"));
        assert!(read(&ws, "cargo metadata"));
        assert!(read(&ws, "go list ./..."));
        assert!(read(&ws, "go env GOPATH"));
        assert!(read(&ws, "pip list"));
        for (cwd, argv) in [
            (&rs, "cargo tree"),
            (&rs, "cargo metadata"),
            (&ws, "cargo tree --config build.rustc-wrapper=x"),
            (&ws, "cargo --config=x.toml tree"),
            (&ws, "cargo -Zunstable-options tree"),
            (&ws, "cargo metadata --manifest-path=/x/Cargo.toml"),
            (&ws, "go list -toolexec x ./..."),
            (&ws, "go list -toolexec=x ./..."),
            (&ws, "go env -w GOFLAGS=x"),
            (&ws, "go env -u GOPROXY"),
            (&ws, "pip --python ./x list"),
            (&ws, "pip --python=./x freeze"),
            (&ws, "pip --log=x.log list"),
            (&ws, "pip list --log x.log"),
        ] {
            assert!(
                !read(cwd, argv),
                "{argv} in {}: {:?}",
                cwd.display(),
                cats(cwd, argv)
            );
        }
    }
}
