//! Precedence and parsing of the deployment config.
use super::*;
use std::collections::HashMap;

fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
    let m: HashMap<String, String> = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    move |k| m.get(k).cloned()
}

#[test]
fn laptop_default() {
    let c =
        Config::load_with(&Overrides::default(), &env_of(&[("HOME", "/home/u")])).expect("default");
    assert_eq!(
        c.state_dir,
        PathBuf::from("/home/u/.local/state/sanctum-guard")
    );
    assert_eq!(c.openclaw_state_dir, PathBuf::from("/home/u/.openclaw"));
    assert_eq!(c.socket.allowed_uids, vec![nix::unistd::geteuid().as_raw()]);
    assert_eq!(c.deadlines.request_deadline(0), 13_500);
    assert_eq!(c.deadlines.exec_deadline(0, Some(5_000)), 8_500);
    assert_eq!(c.deadlines.exec_deadline(0, None), 18_500);
    assert_eq!(c.policy, None);
}

#[test]
fn precedence_flag_env_file() {
    let t = tempfile::tempdir().expect("tmp");
    let f = t.path().join("c.toml");
    std::fs::write(
        &f,
        "state_dir = \"/from/file\"\nopenclaw_state_dir = \"/oc/file\"\n[socket]\nallowed_uids = [7]\nrate_per_sec = 9\n",
    )
    .expect("write");
    let env = env_of(&[
        ("HOME", "/h"),
        ("XDG_STATE_HOME", "/xdg"),
        ("OPENCLAW_STATE_DIR", "/oc/env"),
        ("SANCTUM_SOCKET_RATE_PER_SEC", "11"),
    ]);
    let mut o = Overrides {
        config: Some(f.clone()),
        ..Default::default()
    };
    let c = Config::load_with(&o, &env).expect("file");
    assert_eq!(c.state_dir, PathBuf::from("/from/file"));
    // The config file's key beats OpenClaw's own env var; the flag beats both.
    assert_eq!(c.openclaw_state_dir, PathBuf::from("/oc/file"));
    assert_eq!(c.socket.allowed_uids, vec![7]);
    assert_eq!(c.socket.rate_per_sec, 11);
    o.state_dir = Some("/flag".into());
    o.openclaw_state = Some("/oc/flag".into());
    let c = Config::load_with(&o, &env).expect("flags");
    assert_eq!(c.state_dir, PathBuf::from("/flag"));
    assert_eq!(c.openclaw_state_dir, PathBuf::from("/oc/flag"));
    let c = Config::load_with(&Overrides::default(), &env).expect("env");
    assert_eq!(c.state_dir, PathBuf::from("/xdg/sanctum-guard"));
    assert_eq!(c.openclaw_state_dir, PathBuf::from("/oc/env"));
}

#[test]
fn bad_input_is_an_error() {
    let t = tempfile::tempdir().expect("tmp");
    let f = t.path().join("c.toml");
    std::fs::write(&f, "[socket]\nbogus = 1\n").expect("write");
    let o = Overrides {
        config: Some(f),
        ..Default::default()
    };
    assert!(matches!(
        Config::load_with(&o, &env_of(&[("HOME", "/h")])),
        Err(ConfigError::Parse { .. })
    ));
    let e = Config::load_with(
        &Overrides::default(),
        &env_of(&[("HOME", "/h"), ("SANCTUM_SOCKET_ALLOWED_UIDS", "x")]),
    );
    assert!(matches!(e, Err(ConfigError::Env { .. })));
}

/// `[web] suggest_after` / `suggest_within_days`: when History offers a bounded grant; one
/// approval is no pattern, a window past 90 days suggests from stale habits.
#[test]
fn grant_suggestions_are_configured_in_the_web_section() {
    let t = tempfile::tempdir().expect("tmp");
    let f = t.path().join("c.toml");
    let day = 24 * 3600 * 1000;
    type Row = (&'static str, Option<(usize, u64)>);
    let rows: [Row; 8] = [
        ("", Some((5, 7 * day))),
        ("[web]\nsuggest_after = 3\n", Some((3, 7 * day))),
        ("[web]\nsuggest_after = 0\n", Some((0, 7 * day))),
        ("[web]\nsuggest_within_days = 30\n", Some((5, 30 * day))),
        ("[web]\nsuggest_after = 1\n", None),
        ("[web]\nsuggest_after = 1001\n", None),
        ("[web]\nsuggest_within_days = 0\n", None),
        ("[web]\nsuggest_within_days = 91\n", None),
    ];
    for (text, want) in rows {
        std::fs::write(&f, text).expect("write");
        let o = Overrides {
            config: Some(f.clone()),
            ..Default::default()
        };
        let got = Config::load_with(&o, &env_of(&[("HOME", "/h")]));
        match (got, want) {
            (Ok(c), Some((after, window))) => {
                assert_eq!(c.web.suggest.min_approvals, after, "{text}");
                assert_eq!(c.web.suggest.window_ms, window, "{text}");
            }
            (Err(ConfigError::Suggest { .. }), None) => {}
            (other, _) => panic!("{text:?}: {other:?}"),
        }
    }
}

/// `[web] public_url` (or the environment over it): absent is no link; an https or loopback
/// origin is kept, normalised; anything else stops the start, never published.
#[test]
fn public_url_is_checked_at_load() {
    let t = tempfile::tempdir().expect("tmp");
    let f = t.path().join("c.toml");
    let o = Overrides {
        config: Some(f.clone()),
        ..Default::default()
    };
    type Row = (
        &'static str,
        &'static [(&'static str, &'static str)],
        Option<Option<&'static str>>,
    );
    let rows: [Row; 6] = [
        ("", &[], Some(None)),
        (
            "[web]\npublic_url = \"https://G.example:8484/\"\n",
            &[],
            Some(Some("https://g.example:8484")),
        ),
        (
            "[web]\npublic_url = \"http://127.0.0.1:8484\"\n",
            &[],
            Some(Some("http://127.0.0.1:8484")),
        ),
        ("[web]\npublic_url = \"http://g.example:8484\"\n", &[], None),
        ("[web]\npublic_url = \"javascript:alert(1)\"\n", &[], None),
        (
            "[web]\npublic_url = \"https://g.example\"\n",
            &[("SANCTUM_WEB_PUBLIC_URL", "http://evil.example")],
            None,
        ),
    ];
    for (text, extra, want) in rows {
        std::fs::write(&f, text).expect("write");
        let mut env = vec![("HOME", "/h")];
        env.extend_from_slice(extra);
        match (Config::load_with(&o, &env_of(&env)), want) {
            (Ok(c), Some(url)) => assert_eq!(c.web.public_url.as_deref(), url, "{text}"),
            (Err(ConfigError::PublicUrl(_)), None) => {}
            (other, _) => panic!("{text:?}: {other:?}"),
        }
    }
}

/// `[store]`: embedded by default; a postgres url (file, or the environment over it) with
/// this guard's id; anything else is refused at load, never silently embedded.
#[test]
fn store_section() {
    let home = [("HOME", "/h")];
    let c = Config::load_with(&Overrides::default(), &env_of(&home)).expect("default");
    assert_eq!(c.store, StoreSettings::Embedded);
    let t = tempfile::tempdir().expect("tmp");
    let f = t.path().join("c.toml");
    let o = Overrides {
        config: Some(f.clone()),
        ..Overrides::default()
    };
    std::fs::write(
        &f,
        "[store]\nurl = \"postgres://g@db/s\"\nguard_id = \"agent-a\"\n",
    )
    .expect("write");
    let c = Config::load_with(&o, &env_of(&home)).expect("file");
    assert_eq!(
        c.store,
        StoreSettings::Fleet {
            url: "postgres://g@db/s".into(),
            guard_id: "agent-a".into()
        }
    );
    // The URL may hold a password: the settings never print it.
    let shown = format!(
        "{:?}",
        StoreSettings::Fleet {
            url: "postgres://g:hunter2@db/s".into(),
            guard_id: "a".into(),
        }
    );
    assert!(!shown.contains("hunter2"), "{shown}");
    let env = env_of(&[
        ("HOME", "/h"),
        ("SANCTUM_STORE_URL", "postgresql://e@db/s"),
        ("SANCTUM_GUARD_ID", "env-id"),
    ]);
    let c = Config::load_with(&o, &env).expect("env");
    assert_eq!(
        c.store,
        StoreSettings::Fleet {
            url: "postgresql://e@db/s".into(),
            guard_id: "env-id".into()
        }
    );
    for bad in [
        "[store]\nurl = \"mysql://db/s\"\n",
        "[store]\nurl = \"postgres://db/s\"\nguard_id = \"a b\"\n",
        "[store]\nurl = \"postgres://db/s\"\nguard_id = \"\"\n",
        "[store]\nurl = \"postgres://db/s\"\nbogus = 1\n",
    ] {
        std::fs::write(&f, bad).expect("write");
        assert!(Config::load_with(&o, &env_of(&home)).is_err(), "{bad}");
    }
}
