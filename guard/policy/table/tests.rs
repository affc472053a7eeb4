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
            url: "https://x".into()
        }),
        vec![Category::HttpRead]
    );
    assert_eq!(
        cats(&Action::Http {
            method: "POST".into(),
            url: "https://x".into()
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
            url: Some("https://x".into())
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
