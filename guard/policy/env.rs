//! Environment variable names as the policy sees them. A short allow-list of names change
//! nothing about what runs (locale, terminal, time zone); a few are the deployment's to set
//! (PATH, HOME, …: the exec plan replaces them with the profile's values); a set of families
//! are known to load or run code (LD_*, GIT_*, BASH_ENV, *_OPTIONS, PAGER, …) and never pass;
//! every other name is data a person must see before it is used.

/// What a variable name does to a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EnvName {
    /// Changes nothing about what runs or what it reads: passes, does not gate.
    Inert,
    /// The deployment's to set: the request's value is ignored and the profile's used.
    Replaced,
    /// Loads or runs code, or changes which program runs: dropped from every run, gates.
    Loads,
    /// Not understood: gates (a person sees the name), passes once approved.
    Other,
}

/// Names that change nothing about what runs.
const INERT: &[&str] = &[
    "LANG",
    "LANGUAGE",
    "TZ",
    "TERM",
    "COLORTERM",
    "COLUMNS",
    "LINES",
    "NO_COLOR",
    "FORCE_COLOR",
    "CLICOLOR",
    "CLICOLOR_FORCE",
];

/// Names the deployment sets for every run.
const REPLACED: &[&str] = &[
    "PATH", "HOME", "SHELL", "USER", "LOGNAME", "PWD", "OLDPWD", "TMPDIR", "HOSTNAME",
];

/// Exact names known to load or run code, or to redirect what a program reads as code.
const LOADS: &[&str] = &[
    "BASH_ENV",
    "ENV",
    "PS4",
    "PROMPT_COMMAND",
    "IFS",
    "CDPATH",
    "GLOBIGNORE",
    "SHELLOPTS",
    "BASHOPTS",
    "EXECIGNORE",
    "PAGER",
    "EDITOR",
    "VISUAL",
    "BROWSER",
    "LESSOPEN",
    "LESSCLOSE",
    "MANPAGER",
    "LOCPATH",
    "GCONV_PATH",
    "NLSPATH",
    "GLIBC_TUNABLES",
    "HOSTALIASES",
    "RESOLV_HOST_CONF",
    "TERMINFO",
    "TERMINFO_DIRS",
    "TERMCAP",
    "INPUTRC",
    "JAVA_TOOL_OPTIONS",
    "_JAVA_OPTIONS",
    "CLASSPATH",
    "RIPGREP_CONFIG_PATH",
    "SSH_ASKPASS",
    "SUDO_ASKPASS",
    "OPENSSL_CONF",
    "OPENSSL_ENGINES",
    "CURL_HOME",
    "WGETRC",
    "MAKEFLAGS",
    "MFLAGS",
    "XDG_CONFIG_HOME",
    "XDG_CONFIG_DIRS",
    "XDG_DATA_HOME",
    "XDG_DATA_DIRS",
];

/// Prefixes of families that load or run code (linkers, git, interpreters and their tools).
const LOADS_PREFIX: &[&str] = &[
    "LD_",
    "BASH_FUNC_",
    "GIT_",
    "DYLD_",
    "MALLOC_",
    "PYTHON",
    "PIP_",
    "NODE_",
    "NPM_CONFIG_",
    "YARN_",
    "PERL",
    "RUBY",
    "GEM_",
    "BUNDLE_",
    "LUA_",
    "TCL",
    "CARGO_",
    "RUSTC",
    "RUSTFLAGS",
    "RUSTDOC",
    "GOFLAGS",
    "CGO_",
    "DOCKER_",
    "KUBECONFIG",
    "LESS",
    "SYSTEMD_",
];

/// Suffixes of families that configure a program with flags, files or commands.
const LOADS_SUFFIX: &[&str] = &[
    "_OPTIONS",
    "_OPTS",
    "_FLAGS",
    "PAGER",
    "EDITOR",
    "_CONFIG",
    "_CONFIG_PATH",
    "RC",
    "_PROXY",
    "_COMMAND",
    "_CMD",
    "_HOOK",
    "_PLUGINS",
    "_PATH",
];

/// How `name` is judged. Case matters as it does to programs; the code families are matched
/// upper-cased so `npm_config_*` and `http_proxy` fall in them too.
pub fn classify(name: &str) -> EnvName {
    if INERT.contains(&name) || name.starts_with("LC_") {
        return EnvName::Inert;
    }
    if REPLACED.contains(&name) {
        return EnvName::Replaced;
    }
    let up = name.to_ascii_uppercase();
    if LOADS.contains(&up.as_str())
        || LOADS_PREFIX.iter().any(|p| up.starts_with(p))
        || LOADS_SUFFIX.iter().any(|s| up.ends_with(s))
    {
        return EnvName::Loads;
    }
    EnvName::Other
}

/// Whether `value` keeps the inert `name` inert: a locale or zone name, never a file path
/// (`TZ=:/path`, `TZ=../..`, `LANG=/path` make libc read that file). Zone names have one
/// inner slash (`Europe/Paris`).
pub fn inert_value(name: &str, value: &str) -> bool {
    let path_like = value.starts_with('/') || value.starts_with(':') || value.contains("..");
    let slash_ok = name == "TZ" || !value.contains('/');
    !path_like && slash_ok && !value.contains('\0')
}

/// Is `name` on the inert allow-list? (The shell analysis judges every assignment with it.)
pub fn is_inert_name(name: &str) -> bool {
    classify(name) == EnvName::Inert
}

/// Is the assignment `name=value` inert: an inert name with a value that is a name, not a
/// file (see [`inert_value`])?
pub fn is_inert_assignment(name: &str, value: &str) -> bool {
    (is_inert_name(name) && inert_value(name, value)) || is_known_pager(name, value)
}

/// `PAGER`, `GIT_PAGER` or `MANPAGER` set to a known pager found on the deployment's PATH
/// (`cat`, `less`, `more`), with only display flags: it pages, it runs nothing else. A
/// path, a `+command` or `-o FILE` for less, or any other program stays code.
pub fn is_known_pager(name: &str, value: &str) -> bool {
    if !matches!(name, "PAGER" | "GIT_PAGER" | "MANPAGER") {
        return false;
    }
    let mut words = value.split_ascii_whitespace();
    let Some(program) = words.next() else {
        return false;
    };
    matches!(program, "cat" | "less" | "more")
        && words.all(|w| {
            w.strip_prefix('-')
                .is_some_and(|f| !f.is_empty() && f.chars().all(|c| "FRSXKiMNr".contains(c)))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_pagers_only() {
        assert!(is_known_pager("PAGER", "cat"));
        assert!(is_known_pager("GIT_PAGER", "less -FRX"));
        assert!(!is_known_pager("GIT_PAGER", "less +!sh"));
        assert!(!is_known_pager("GIT_PAGER", "less -o x"));
        assert!(!is_known_pager("PAGER", "./less"));
        assert!(!is_known_pager("PAGER", "sh -c id"));
        assert!(!is_known_pager("EDITOR", "cat"));
    }

    #[test]
    fn names_are_judged_by_allow_list() {
        let cases: &[(&str, EnvName)] = &[
            ("LANG", EnvName::Inert),
            ("LC_ALL", EnvName::Inert),
            ("TZ", EnvName::Inert),
            ("PATH", EnvName::Replaced),
            ("HOME", EnvName::Replaced),
            ("LD_PRELOAD", EnvName::Loads),
            ("LD_LIBRARY_PATH", EnvName::Loads),
            ("GIT_CONFIG_COUNT", EnvName::Loads),
            ("GIT_PROXY_COMMAND", EnvName::Loads),
            ("BASH_ENV", EnvName::Loads),
            ("BASH_FUNC_ls%%", EnvName::Loads),
            ("NODE_OPTIONS", EnvName::Loads),
            ("npm_config_script_shell", EnvName::Loads),
            ("PYTHONSTARTUP", EnvName::Loads),
            ("LESSOPEN", EnvName::Loads),
            ("RIPGREP_CONFIG_PATH", EnvName::Loads),
            ("GIT_PAGER", EnvName::Loads),
            ("MANPAGER", EnvName::Loads),
            ("https_proxy", EnvName::Loads),
            ("PROMPT_COMMAND", EnvName::Loads),
            ("PERL5OPT", EnvName::Loads),
            ("FOO", EnvName::Other),
            ("lang", EnvName::Other),
            ("DEBUG", EnvName::Other),
        ];
        for (name, want) in cases {
            assert_eq!(classify(name), *want, "{name}");
        }
    }

    #[test]
    fn assignments_need_an_inert_name_and_value() {
        assert!(is_inert_assignment("LANG", "C.UTF-8"));
        assert!(is_inert_assignment("TZ", "UTC"));
        assert!(!is_inert_assignment("LANG", "../../tmp/x"));
        assert!(!is_inert_assignment("TZ", ":/etc/shadow"));
        assert!(!is_inert_assignment("FOO", "1"));
        assert!(!is_inert_assignment("PATH", "/usr/bin"));
    }

    #[test]
    fn inert_values_are_names_not_files() {
        assert!(inert_value("LANG", "en_US.UTF-8"));
        assert!(inert_value("TZ", "Europe/Paris"));
        assert!(!inert_value("LANG", "fr/../../x"));
        assert!(!inert_value("LC_ALL", "a/b"));
        assert!(!inert_value("TZ", "/etc/shadow"));
        assert!(!inert_value("TZ", ":/root/.ssh/id_rsa"));
        assert!(!inert_value("TZ", "Europe/../../etc/shadow"));
    }
}
