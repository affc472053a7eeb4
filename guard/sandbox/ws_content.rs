//! Secrets a workspace file holds by its content or a telling name, for the workspace scan
//! (`ws_secrets`): files the `autonomous-read` profile then denies. The name list of the
//! policy core (`policy::paths::is_secret_file_name`) decides what the analysis gates; the
//! scan adds what only the jail can act on: names that are secrets only in a workspace
//! (`.aws/credentials`, `kubeconfig*`, `*.key`) and contents (a PEM private key, `ghp_…`).
//! The analysis stays name-based: content needs a read it may not do (the core is pure), and
//! a run that reads such a file fails on the jail's denial.
//!
//! Content rules are the `nosecrets-rules` set (~50 rules: private-key headers, cloud key
//! ids, prefixed tokens, connection URIs with passwords, keyword assignments), with its
//! keywords, captures, validation, allow-lists and path filters, plus a few of our own
//! (`LOCAL_RULES`). One aho-corasick pass over the file finds the rules whose keywords occur;
//! only those run their regex, so most files cost one pass. Bounds: only the first `HEAD`
//! bytes are read (a secret past 1 MiB is not seen: such files are data and logs), and a
//! file with a NUL byte in its first 8 KiB is binary and not matched.

use aho_corasick::{AhoCorasick, AhoCorasickBuilder};
use regex::bytes::Regex;
use std::sync::OnceLock;

/// Bytes of a file the rules see.
pub const HEAD: usize = 1 << 20;
/// Bytes looked at for a NUL (binary files are not matched).
const BINARY_PROBE: usize = 8 << 10;

/// Rules of our own, in the same format: encrypted and PKCS#8 private keys, the AWS
/// credentials file's line, kubeconfig credentials, a password in a Rails-style database
/// file, and high-entropy values assigned to secret-sounding keys in config files (entropy
/// thresholds in `ENTROPY`).
const LOCAL_RULES: &str = r##"
[[rule]]
id = "sanctum-private-key-any"
name = "Private key (any PEM label)"
severity = "critical"
pattern = '''(-----BEGIN [A-Z0-9 ]{0,30}PRIVATE KEY(?: BLOCK)?-----)'''
keywords = ["private key"]
[rule.paths]
exclude = ["*.pub", "*.crt", "*.cer"]

[[rule]]
id = "sanctum-aws-credentials-line"
name = "AWS secret access key line"
severity = "critical"
pattern = '''(?im)^\s*aws_secret_access_key\s*=\s*([A-Za-z0-9/+=]{40})\s*$'''
keywords = ["aws_secret_access_key"]

[[rule]]
id = "sanctum-kubeconfig-credential"
name = "Kubeconfig client key or token"
severity = "critical"
pattern = '''(?m)^\s*(?:client-key-data|id-token|refresh-token)\s*:\s*['"]?([A-Za-z0-9+/=._-]{20,})'''
keywords = ["client-key-data", "id-token", "refresh-token"]

[[rule]]
id = "sanctum-yaml-password"
name = "Password in a database or secrets YAML file"
severity = "high"
pattern = '''(?m)^\s*password\s*:\s*['"]?([^\s'"#<{$%][^\s'"#]{3,})'''
keywords = ["password"]
[rule.paths]
include = ["database.yml", "database.yaml", "*secrets*.yml", "*secrets*.yaml", "*credentials*.yml", "*credentials*.yaml"]
[rule.allow]
patterns = ["^(?i:changeme|password|example|placeholder|xxx+)$"]

[[rule]]
id = "sanctum-config-entropy"
name = "High-entropy value of a secret-sounding key in a config file"
severity = "medium"
pattern = '''(?i)(?:token|secret|passw(?:or)?d|api[_-]?key|access[_-]?key|private[_-]?key|auth[_-]?key|credentials?)[\w.-]{0,20}['"]?\s*[=:]\s*['"]?([A-Za-z0-9+/_.=-]{20,})'''
keywords = ["token", "secret", "passw", "api_key", "api-key", "apikey", "access_key", "access-key", "private_key", "private-key", "auth_key", "auth-key", "credential"]
[rule.paths]
include = ["*.yml", "*.yaml", "*.toml", "*.ini", "*.cfg", "*.conf", "*.properties", "*.json", "*.tfvars", "*.xml", "*.sh", "*.env*"]

# In code an unquoted value is an expression (`settings.EMAIL_HOST_PASSWORD`), not a secret:
# only a quoted literal counts, and not one shaped like a file path or a dotted name.
[[rule]]
id = "sanctum-code-entropy"
name = "High-entropy string literal assigned to a secret-sounding name in code"
severity = "medium"
pattern = '''(?i)(?:token|secret|passw(?:or)?d|api[_-]?key|access[_-]?key|private[_-]?key|auth[_-]?key|credentials?)[\w.-]{0,20}['"]?\s*[=:]\s*['"]([A-Za-z0-9+/_.=-]{20,})['"]'''
keywords = ["token", "secret", "passw", "api_key", "api-key", "apikey", "access_key", "access-key", "private_key", "private-key", "auth_key", "auth-key", "credential"]
[rule.paths]
include = ["*.py", "*.rb", "*.js", "*.ts", "*.mjs", "*.cjs", "*.go", "*.java", "*.kt", "*.php", "*.rs", "*.cs", "*.swift", "*.scala", "*.pl"]
[rule.allow]
patterns = ['^[\w./-]*/[\w.-]*\.[a-z]{2,5}$', '^[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+$']
"##;

/// Rules whose captured value is one word: a value with a line break or a blank in it was
/// captured across code (`password = "…` on one line, its closing quote lines further on;
/// `"ALTER USER %(user)s IDENTIFIED BY "`). gitleaks' generic rules hold the same line.
const ONE_WORD: &[&str] = &[
    "password-assignment",
    "sanctum-config-entropy",
    "sanctum-code-entropy",
];

/// Paths a rule skips besides its own: the generic password rule's matches in test suites
/// and fixtures are the suites' own throwaway passwords (`password='something'`), not a
/// credential; prefixed tokens, keys and the entropy rules still apply there.
const EXTRA_EXCLUDES: &[(&str, &[&str])] = &[(
    "password-assignment",
    &[
        "tests/",
        "test/",
        "fixtures/",
        "test_*",
        "*_test.*",
        "*_tests.*",
        "tests.py",
    ],
)];

/// Minimum Shannon entropy (bits per character) of a capture, per rule id.
const ENTROPY: &[(&str, f64)] = &[
    ("sanctum-config-entropy", 4.0),
    ("sanctum-code-entropy", 4.0),
];

/// Words that mark a value as a placeholder, whatever the rule (test fixtures, templates).
const PLACEHOLDERS: &[&str] = &[
    "example",
    "placeholder",
    "dummy",
    "sample",
    "your_",
    "your-",
    "xxxxxxxx",
    "changeme",
    "redacted",
];

/// Names that are secrets inside a workspace: a file named so holds a credential by
/// convention (`parent` is its directory's name).
pub fn is_secret_name(parent: Option<&str>, name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    let ext = |e: &str| lower.len() > e.len() && lower.ends_with(e);
    matches!(
        (parent, name),
        (Some(".aws"), "credentials")
            | (Some(".kube"), "config")
            | (Some(".docker"), "config.json")
    ) || lower.starts_with("kubeconfig")
        || ext(".kubeconfig")
        || lower == ".htpasswd"
        || [".key", ".p12", ".pfx", ".jks", ".keystore"]
            .iter()
            .any(|e| ext(e))
}

/// Where a rule applies: file-name globs, or `dir/` for a path component.
#[derive(Default)]
struct Paths {
    include: Vec<Glob>,
    exclude: Vec<Glob>,
}

enum Glob {
    Name(globset::GlobMatcher),
    Dir(String),
}

impl Glob {
    fn new(p: &str) -> Result<Glob, String> {
        if let Some(d) = p.strip_suffix('/') {
            return Ok(Glob::Dir(d.to_string()));
        }
        let g = globset::GlobBuilder::new(p)
            .case_insensitive(true)
            .build()
            .map_err(|e| format!("rule path {p}: {e}"))?;
        Ok(Glob::Name(g.compile_matcher()))
    }

    fn matches(&self, rel: &str, name: &str) -> bool {
        match self {
            Glob::Name(m) => m.is_match(name),
            Glob::Dir(d) => rel.split('/').rev().skip(1).any(|c| c == d),
        }
    }
}

struct Compiled {
    id: String,
    re: Regex,
    capture: usize,
    prefix: Vec<String>,
    charset: Option<Regex>,
    length: (usize, usize),
    allow: Vec<Regex>,
    allow_values: Vec<String>,
    paths: Paths,
    entropy: f64,
    one_word: bool,
}

/// The compiled rule set.
pub struct Rules {
    keywords: AhoCorasick,
    /// The rules each keyword (by pattern index) selects.
    by_keyword: Vec<Vec<usize>>,
    rules: Vec<Compiled>,
}

/// The rule set, compiled once; an error (a rule that does not compile) fails every scan.
pub fn rules() -> Result<&'static Rules, String> {
    static R: OnceLock<Result<Rules, String>> = OnceLock::new();
    R.get_or_init(compile).as_ref().map_err(Clone::clone)
}

fn compile() -> Result<Rules, String> {
    let mut all = nosecrets_rules::load_builtin_rules().map_err(|e| e.to_string())?;
    all.extend(nosecrets_rules::parse_rules(LOCAL_RULES, "local").map_err(|e| e.to_string())?);
    let (mut words, mut by_keyword, mut rules) = (Vec::new(), Vec::<Vec<usize>>::new(), Vec::new());
    for r in all {
        let bad = |e: &dyn std::fmt::Display| format!("secret rule {}: {e}", r.id);
        let re = Regex::new(&r.pattern).map_err(|e| bad(&e))?;
        let v = r.validate.unwrap_or_default();
        let charset = match v.charset {
            Some(c) => Some(Regex::new(&format!("^[{c}]+$")).map_err(|e| bad(&e))?),
            None => None,
        };
        let (min, max) = match v.length {
            Some(n) => (n, n),
            None => (
                v.min_length.unwrap_or(0),
                v.max_length.unwrap_or(usize::MAX),
            ),
        };
        let allow = r.allow.unwrap_or_default();
        let allow_re = allow
            .patterns
            .iter()
            .map(|p| Regex::new(&format!("(?i){p}")).map_err(|e| bad(&e)))
            .collect::<Result<Vec<_>, _>>()?;
        let mut p = r.paths.unwrap_or_default();
        for (_, extra) in EXTRA_EXCLUDES.iter().filter(|(id, _)| *id == r.id) {
            p.exclude.extend(extra.iter().map(|g| g.to_string()));
        }
        let globs = |v: &[String]| {
            v.iter()
                .map(|g| Glob::new(g))
                .collect::<Result<Vec<_>, _>>()
        };
        let idx = rules.len();
        for k in &r.keywords {
            words.push(k.to_ascii_lowercase());
            by_keyword.push(vec![idx]);
        }
        if r.keywords.is_empty() {
            return Err(bad(&"a rule without keywords would run on every file"));
        }
        rules.push(Compiled {
            id: r.id.clone(),
            re,
            capture: r.capture,
            prefix: v.prefix,
            charset,
            length: (min, max),
            allow: allow_re,
            allow_values: allow.values,
            paths: Paths {
                include: globs(&p.include)?,
                exclude: globs(&p.exclude)?,
            },
            entropy: ENTROPY
                .iter()
                .find(|(id, _)| *id == r.id)
                .map_or(0.0, |(_, e)| *e),
            one_word: ONE_WORD.contains(&r.id.as_str()),
        });
    }
    let keywords = AhoCorasickBuilder::new()
        .ascii_case_insensitive(true)
        .build(&words)
        .map_err(|e| e.to_string())?;
    Ok(Rules {
        keywords,
        by_keyword,
        rules,
    })
}

/// Shannon entropy of `s` in bits per byte.
fn entropy(s: &[u8]) -> f64 {
    let mut counts = [0u32; 256];
    for &b in s {
        counts[usize::from(b)] += 1;
    }
    let n = s.len() as f64;
    counts
        .iter()
        .filter(|&&c| c > 0)
        .map(|&c| {
            let p = f64::from(c) / n;
            -p * p.log2()
        })
        .sum()
}

impl Compiled {
    fn applies(&self, rel: &str, name: &str) -> bool {
        let inc = &self.paths.include;
        (inc.is_empty() || inc.iter().any(|g| g.matches(rel, name)))
            && !self.paths.exclude.iter().any(|g| g.matches(rel, name))
    }

    /// Whether a captured value is a secret by this rule's validation and allow-lists.
    fn accepts(&self, value: &[u8]) -> bool {
        let Ok(text) = std::str::from_utf8(value) else {
            return false;
        };
        let lower = text.to_ascii_lowercase();
        let (min, max) = self.length;
        (self.prefix.is_empty() || self.prefix.iter().any(|p| text.starts_with(p.as_str())))
            && (min..=max).contains(&text.len())
            && self.charset.as_ref().is_none_or(|c| c.is_match(value))
            && !self.allow.iter().any(|a| a.is_match(value))
            && !self.allow_values.iter().any(|v| v == text)
            && !PLACEHOLDERS.iter().any(|p| lower.contains(p))
            && (self.entropy == 0.0 || entropy(value) >= self.entropy)
            && !(self.one_word && value.iter().any(u8::is_ascii_whitespace))
    }
}

impl Rules {
    /// Whether `data` (a file's head; `rel` its path in the workspace, `name` its name)
    /// holds a secret by some rule.
    pub fn is_secret(&self, rel: &str, name: &str, data: &[u8]) -> bool {
        self.secret_rule(rel, name, data).is_some()
    }

    /// The id of the first rule that finds a secret in `data`, if one does (what tells a
    /// person why a file was kept from a run).
    pub fn secret_rule(&self, rel: &str, name: &str, data: &[u8]) -> Option<&str> {
        if memchr::memchr(0, &data[..data.len().min(BINARY_PROBE)]).is_some() {
            return None;
        }
        let mut tried = vec![false; self.rules.len()];
        for m in self.keywords.find_overlapping_iter(data) {
            for &i in &self.by_keyword[m.pattern().as_usize()] {
                if std::mem::replace(&mut tried[i], true) {
                    continue;
                }
                let r = &self.rules[i];
                if !r.applies(rel, name) {
                    continue;
                }
                let hit = r.re.captures_iter(data).any(|c| {
                    c.get(r.capture)
                        .or_else(|| c.get(0))
                        .is_some_and(|v| r.accepts(v.as_bytes()))
                });
                if hit {
                    return Some(&r.id);
                }
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What real source trees hold that the generic rules took for secrets (found by the
    /// usability test over agent traces in a Django checkout: 11 ordinary files denied), each
    /// beside the real secret of the same shape that must still be found.
    #[test]
    fn ordinary_source_is_no_secret_but_a_literal_key_is() {
        let r = rules().unwrap();
        let key40 = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzQ8h3kLm2P";
        let rows: &[(&str, String, bool)] = &[
            // A password literal whose closing quote is lines further on.
            (
                "cmd/changepassword.py",
                "msg = 'Password: '\n    def _get_pass(self):\n        p = getpass.getpass(prompt=prompt)\n        if not p:\n            raise CommandError('aborted')\n".into(),
                false,
            ),
            ("db/creation.py", "    'password': \"ALTER USER %(user)s IDENTIFIED BY \"\n".into(), false),
            ("mail/smtp.py", "        self.password = settings.EMAIL_HOST_PASSWORD if password is None else password\n".into(), false),
            ("admin/custom.py", "    password_change_template = 'custom_admin/password_change_form.html'\n".into(), false),
            ("conf/settings.py", "PASSWORD_HASHERS_DEFAULT = 'django.contrib.auth.hashers.PBKDF2PasswordHasher'\n".into(), false),
            ("tests/test_multidb.py", "User.objects.create_superuser(username='admin', password='something')\n".into(), false),
            ("tests/multiple_database/tests.py", "bob.password = 'fake_hash_value'\n".into(), false),
            ("locale/pl/django.po", "msgid \"Password:\"\nmsgstr \"Has\u{142}o:\"\n".into(), false),
            // The same shapes holding a real value.
            ("app/settings.py", format!("AWS_SECRET_ACCESS_KEY = \"{key40}\"\n"), true),
            ("app/client.js", format!("const apiKey = '{key40}';\n"), true),
            ("deploy/db.py", "DATABASES_PASSWORD = 'hunter2-Prod-77'\n".into(), true),
            ("config/app.yml", format!("api_key: {key40}\n"), true),
            ("tests/fixture.py", format!("TOKEN = '{}'\n", ghp()), true),
        ];
        for (rel, data, secret) in rows {
            let name = rel.rsplit('/').next().unwrap();
            assert_eq!(
                r.is_secret(rel, name, data.as_bytes()),
                *secret,
                "{rel}: {:?}",
                r.secret_rule(rel, name, data.as_bytes())
            );
        }
    }

    /// Fake values shaped like the real thing (built at run time so this file holds none).
    fn ghp() -> String {
        format!("ghp_{}", "Zq7Lm2Np4Rt6Vx8Bd1Fh3Jk5Mw9Sy0Cg2Et4Q")
    }

    #[test]
    fn red_team_contents_are_secrets() {
        let r = rules().unwrap();
        let key = format!(
            "-----BEGIN {}PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END PRIVATE KEY-----\n",
            "OPENSSH "
        );
        let aws = "AWS_SECRET_ACCESS_KEY = \"wJalrXUtnFEMI/K7MDENG/bPxRfiCYzQ8h3kLm2P\"\n";
        let creds = "[default]\naws_access_key_id = AKIAZ7QW3ERT5YUI2OPL\naws_secret_access_key = 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\n";
        let db = "production:\n  adapter: postgresql\n  password: Tr0ub4dor-9x\n";
        let kube = "users:\n- name: a\n  user:\n    client-key-data: LS0tLS1CRUdJTiBSU0EgUFJJVkFURSBLRVktLS0tLQo=\n";
        for (rel, data) in [
            ("deploy.key", key.as_str()),
            ("certs/server.pem", key.as_str()),
            ("settings.py", aws),
            ("creds.ini", creds),
            ("config/database.yml", db),
            ("ops/cluster.yaml", kube),
            ("notes.txt", &format!("token: {}\n", ghp())),
        ] {
            let name = rel.rsplit('/').next().unwrap();
            assert!(r.is_secret(rel, name, data.as_bytes()), "{rel}");
        }
    }

    #[test]
    fn ordinary_files_are_not() {
        let r = rules().unwrap();
        let lock = r#"{"packages":{"node_modules/@aws-sdk/credential-provider-env":{"version":"3.658.1","resolved":"https://registry.npmjs.org/@aws-sdk/credential-provider-env/-/credential-provider-env-3.658.1.tgz","integrity":"sha512-Go1Yj8PBCaTpLrwEuaHE8ryOHl9T8zQ3mVzb3o/xqGMJ/cFzJnMbnGIAmaJ2k4ywEY7wNsAj+pfZTXMsg7mAOw=="},"node_modules/secret-stream":{"integrity":"sha512-q2wXYh5/b7e7y0lN7CVtO8O2hJq3mA4lp0K3v9Q9C1L0Zq8kR4aE0qJ0mB8pRk1o8m8eB1rOqK6zF3m4rX1cXg=="}}}"#;
        let example = "API_KEY=your-api-key-here\nDATABASE_PASSWORD=changeme\nGITHUB_TOKEN=\n";
        let code =
            "fn main() { let token = std::env::var(\"GITHUB_TOKEN\"); println!(\"secret\"); }\n";
        let db = "production:\n  password: <%= ENV['DB_PASSWORD'] %>\n";
        let fixture = "const KEY = \"AKIAIOSFODNN7EXAMPLE\";\n";
        for (rel, data) in [
            ("package-lock.json", lock),
            (".env.example", example),
            ("src/main.rs", code),
            ("config/database.yml", db),
            ("tests/aws.js", fixture),
            (
                "README.md",
                "# Secrets\nSet `password: <yours>` in the config.\n",
            ),
        ] {
            let name = rel.rsplit('/').next().unwrap();
            assert!(!r.is_secret(rel, name, data.as_bytes()), "{rel}");
        }
        let binary = [b"\0\0".as_slice(), ghp().as_bytes()].concat();
        assert!(!r.is_secret("a.bin", "a.bin", &binary));
    }

    #[test]
    fn telling_names() {
        for (parent, name) in [
            (Some(".aws"), "credentials"),
            (None, "kubeconfig.yaml"),
            (None, "prod.kubeconfig"),
            (None, "deploy.key"),
            (None, "cert.p12"),
        ] {
            assert!(is_secret_name(parent, name), "{name}");
        }
        for (parent, name) in [
            (Some("docs"), "credentials"),
            (None, ".key"),
            (None, "server.pem"),
            (None, "database.yml"),
            (None, "keys.rs"),
        ] {
            assert!(!is_secret_name(parent, name), "{name}");
        }
    }
}
