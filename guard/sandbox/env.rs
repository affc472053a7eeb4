//! The environment of a confined process: an allow-list, minus anything that looks secret.

use std::collections::BTreeMap;

/// Name fragments that mark a variable as secret; such a variable never passes, even if
/// the allow-list names it.
const SECRET_MARKERS: [&str; 9] = [
    "KEY",
    "TOKEN",
    "SECRET",
    "PASSWORD",
    "PASSWD",
    "CREDENTIAL",
    "PRIVATE",
    "COOKIE",
    "SESSION",
];

/// True if `name` looks like it holds a secret. `GIT_CONFIG_KEY_<n>` names a config key
/// (its value is in `GIT_CONFIG_VALUE_<n>`): the guard's own protective git settings use it,
/// and git refuses to start when a counted key is missing.
pub fn is_secret(name: &str) -> bool {
    if name
        .strip_prefix("GIT_CONFIG_KEY_")
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
    {
        return false;
    }
    let up = name.to_ascii_uppercase();
    SECRET_MARKERS.iter().any(|m| up.contains(m))
}

fn allowed(name: &str, allow: &[String]) -> bool {
    allow.iter().any(|pat| match pat.strip_suffix('*') {
        Some(prefix) => name.starts_with(prefix),
        None => name == pat,
    })
}

/// The environment for the child: allowed variables of `inherited`, overridden by allowed
/// `overrides`, never a secret-looking name, plus `extra` (set by the guard, e.g. TMPDIR).
pub fn build_env<I>(
    inherited: I,
    overrides: &BTreeMap<String, String>,
    allow: &[String],
    extra: &[(String, String)],
) -> BTreeMap<String, String>
where
    I: IntoIterator<Item = (String, String)>,
{
    let mut out = BTreeMap::new();
    let pass = |k: &str| allowed(k, allow) && !is_secret(k) && !k.contains('=') && !k.is_empty();
    for (k, v) in inherited {
        if pass(&k) {
            out.insert(k, v);
        }
    }
    for (k, v) in overrides {
        if pass(k) {
            out.insert(k.clone(), v.clone());
        }
    }
    for (k, v) in extra {
        out.insert(k.clone(), v.clone());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_never_pass_even_when_allowed() {
        let allow = vec![
            "PATH".to_string(),
            "LC_*".into(),
            "GITHUB_TOKEN".into(),
            "AWS_*".into(),
        ];
        let inherited = vec![
            ("PATH".to_string(), "/bin".to_string()),
            ("LC_ALL".into(), "C".into()),
            ("GITHUB_TOKEN".into(), "x".into()),
            ("AWS_SECRET_ACCESS_KEY".into(), "x".into()),
            ("AWS_REGION".into(), "eu".into()),
            ("OPENAI_API_KEY".into(), "x".into()),
            ("HOSTNAME".into(), "h".into()),
        ];
        let overrides = BTreeMap::from([
            ("PATH".to_string(), "/usr/bin".to_string()),
            ("DB_PASSWORD".into(), "x".into()),
            ("LD_PRELOAD".into(), "/tmp/x.so".into()),
        ]);
        let env = build_env(
            inherited,
            &overrides,
            &allow,
            &[("TMPDIR".into(), "/t".into())],
        );
        let keys: Vec<&str> = env.keys().map(String::as_str).collect();
        assert_eq!(keys, vec!["AWS_REGION", "LC_ALL", "PATH", "TMPDIR"]);
        assert_eq!(env["PATH"], "/usr/bin");
    }

    #[test]
    fn git_config_key_names_are_not_secrets() {
        assert!(!is_secret("GIT_CONFIG_KEY_0"));
        assert!(!is_secret("GIT_CONFIG_KEY_12"));
        for s in [
            "GIT_CONFIG_KEY_",
            "GIT_CONFIG_KEY_X",
            "GIT_CONFIG_KEYS",
            "SSH_KEY_0",
        ] {
            assert!(is_secret(s), "{s}");
        }
    }
}
