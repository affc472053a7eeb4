//! Environment variables as code. Many programs read code, programs or config files from
//! their environment (`LD_PRELOAD`, `BASH_ENV`, `GIT_CONFIG_*`, `LESSOPEN`, `PAGER`,
//! `RIPGREP_CONFIG_PATH`, `PYTHONSTARTUP`, ...), and new ones appear with every release, so
//! the policy decides by allow-list: only the names below are inert; any other assignment
//! (a prefix `X=1 cmd`, `export`, `env X=1`, `declare -x`, or a key of the request's own
//! environment) is gated, and the names that pick which code runs must be replaced by the
//! runner's own value, never taken from a request. One list for the shell analysis, for
//! `decide()`'s check of the request's env keys, and for the exec plan.

/// Names a program only formats its output by. `LC_*` covers every locale category.
const INERT: &[&str] = &[
    "LANG",
    "LANGUAGE",
    "TZ",
    "TERM",
    "COLUMNS",
    "LINES",
    "NO_COLOR",
    "FORCE_COLOR",
    "CLICOLOR",
    "CLICOLOR_FORCE",
];

/// What a request (or a command's assignment) may do with one environment name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EnvClass {
    /// Harmless: only formats output.
    Inert,
    /// Unknown to the policy: a human must see it.
    Gates,
    /// Picks the program, a shell's start-up code, a loader or a tool's config: the runner
    /// sets it from the deployment and never from the request.
    MustReplace,
}

/// Is `name` on the inert allow-list?
pub fn is_inert_name(name: &str) -> bool {
    INERT.contains(&name)
        || name
            .strip_prefix("LC_")
            .is_some_and(|r| !r.is_empty() && r.bytes().all(|b| b.is_ascii_uppercase()))
}

/// Names whose value is code or chooses code, matched exactly.
const REPLACED_EXACT: &[&str] = &[
    "PATH",
    "HOME",
    "SHELL",
    "ENV",
    "BASH_ENV",
    "CDPATH",
    "IFS",
    "PS4",
    "PROMPT_COMMAND",
    "PAGER",
    "MANPAGER",
    "EDITOR",
    "VISUAL",
    "BROWSER",
    "TMPDIR",
    "LOCPATH",
    "TERMINFO",
    "TERMINFO_DIRS",
    "LESSOPEN",
    "LESSCLOSE",
    "RIPGREP_CONFIG_PATH",
    "XDG_CONFIG_HOME",
    "XDG_CONFIG_DIRS",
    "XDG_DATA_HOME",
    "ZDOTDIR",
    "INPUTRC",
    "SSH_ASKPASS",
    "SUDO_ASKPASS",
    "CURL_HOME",
    "WGETRC",
    "GCONV_PATH",
    "HOSTALIASES",
];

/// Name prefixes whose variables load code or configuration.
const REPLACED_PREFIX: &[&str] = &[
    "LD_",
    "GIT_",
    "BASH_FUNC_",
    "PYTHON",
    "NODE_",
    "NPM_CONFIG_",
    "PERL",
    "RUBY",
    "JAVA_",
    "DYLD_",
    "LESS",
    "GCONV",
    "MALLOC_",
    "GLIBC_",
];

/// Name suffixes of tools' "extra options" variables (`JAVA_TOOL_OPTIONS`, `NODE_OPTIONS`,
/// `GREP_OPTIONS`, `*_CONFIG` files, ...).
const REPLACED_SUFFIX: &[&str] = &["_OPTIONS", "_OPTS", "_CONFIG", "_CONFIG_PATH", "_PROXY"];

/// The class of one environment name.
pub fn classify(name: &str) -> EnvClass {
    if is_inert_name(name) {
        return EnvClass::Inert;
    }
    let upper = name.to_ascii_uppercase();
    if REPLACED_EXACT.contains(&upper.as_str())
        || REPLACED_PREFIX.iter().any(|p| upper.starts_with(p))
        || REPLACED_SUFFIX.iter().any(|s| upper.ends_with(s))
    {
        return EnvClass::MustReplace;
    }
    EnvClass::Gates
}

/// Is an assignment `name=value` inert? The name must be on the allow-list and the value a
/// plain word: a locale or terminal name with a `/` is a path to a file the program loads.
pub fn is_inert_assignment(name: &str, value: &str) -> bool {
    is_inert_name(name)
        && value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_.@+-:,".contains(&b))
}

/// The keys of a request's environment that are not inert, in order, each with its class.
pub fn non_inert_keys(keys: &[String]) -> Vec<(&str, EnvClass)> {
    keys.iter()
        .map(|k| (k.as_str(), classify(k)))
        .filter(|(_, c)| *c != EnvClass::Inert)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes() {
        for n in [
            "LANG",
            "LC_ALL",
            "LC_MESSAGES",
            "TZ",
            "TERM",
            "NO_COLOR",
            "COLUMNS",
        ] {
            assert_eq!(classify(n), EnvClass::Inert, "{n}");
        }
        for n in [
            "PATH",
            "HOME",
            "LD_PRELOAD",
            "GIT_CONFIG_COUNT",
            "GIT_PROXY_COMMAND",
            "PAGER",
            "BASH_ENV",
            "PYTHONSTARTUP",
            "NODE_OPTIONS",
            "JAVA_TOOL_OPTIONS",
            "LESSOPEN",
            "RIPGREP_CONFIG_PATH",
            "GREP_OPTIONS",
            "https_proxy",
            "BASH_FUNC_ls%%",
            "LOCPATH",
            "PERL5OPT",
        ] {
            assert_eq!(classify(n), EnvClass::MustReplace, "{n}");
        }
        for n in ["FOO", "DEBUG", "lang", "LC_all", "LC_", "AWS_PROFILE"] {
            assert_eq!(classify(n), EnvClass::Gates, "{n}");
        }
        assert!(is_inert_assignment("LANG", "C.UTF-8"));
        assert!(!is_inert_assignment("LANG", "../../tmp/x"));
        assert!(!is_inert_assignment("TZ", ":/etc/shadow"));
        assert!(!is_inert_assignment("X", "1"));
    }
}
