//! Sensitive paths: the built-in list (DESIGN §2: credentials, shell histories, `/etc/shadow`,
//! `/etc/sudoers`, `/proc/*/environ`, `/proc/*/mem`) plus the policy's extras, compiled into one
//! globset. This module owns path expansion and normalisation for the policy core, and the
//! symlink-aware question "does this path reach a sensitive file?".

mod clean;
mod expand;
mod glob;
mod list;
mod proc;
mod resolve;
mod url;

pub use list::{is_secret_file_name, sensitive_paths, SensitiveEntry, BUILTIN, SECRET_FILE_NAMES};

pub use clean::{lexical_clean, lexical_clean_cow};
pub use resolve::resolve_lenient;
pub use url::{file_url_path, FileUrl};

use clean::clean_owned;

use super::file::PolicyError;
use super::fs_memo;
use glob::{glob_hits_rule, has_glob_chars, rule_literal, GlobWord};
use globset::{GlobBuilder, GlobSet, GlobSetBuilder};
use std::path::{Component, Path, PathBuf};

/// Where relative paths and `~` resolve for one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathContext {
    pub home: PathBuf,
    pub cwd: PathBuf,
}

/// `~` / `~/x` / `$HOME/x` / `${HOME}/x` expansion, relative → cwd-joined, lexical
/// `.`/`..`/`//` normalisation. `~+` is the cwd. `~-` (the previous directory, unknown here)
/// is taken as home, so `cd ~; cd /tmp; cat ~-/.ssh/id_rsa` is still caught. `~root` is
/// `/root`; another `~name` is `/home/name` (the guard cannot read the agent's passwd
/// database, and a guess beats a literal `~name` directory).
pub fn normalize(raw: &str, ctx: &PathContext) -> PathBuf {
    clean_owned(absolute(raw, ctx))
}

/// Expansion and cwd-joining of [`normalize`], without folding `..`: the kernel resolves a
/// symlink before the `..` that follows it, so the filesystem checks need the path as written.
pub fn absolute(raw: &str, ctx: &PathContext) -> PathBuf {
    let p = absolute_as_written(raw, ctx);
    // `/proc/self/cwd/..`, `/dev/fd/..`: the agent's process, rewritten before `..` folds.
    if proc::may_be_proc(&p) {
        if let Some(v) = proc::agent_view(&p, &ctx.cwd) {
            return v;
        }
    }
    p
}

fn absolute_as_written(raw: &str, ctx: &PathContext) -> PathBuf {
    // Only `~…` and `$HOME…` expand: anything else is taken as written, or joined to the
    // cwd (one allocation, not an expansion's copy and then a join).
    if !raw.starts_with(['~', '$']) {
        return if raw.starts_with('/') {
            PathBuf::from(raw)
        } else {
            // `ctx.cwd.join(raw)`, sized once (`join` copies the cwd, then grows it).
            let mut p = PathBuf::with_capacity(ctx.cwd.as_os_str().len() + 1 + raw.len());
            p.push(&ctx.cwd);
            p.push(raw);
            p
        };
    }
    let expanded = match raw.strip_prefix("~+") {
        Some(rest) if rest.is_empty() || rest.starts_with('/') => {
            ctx.cwd.join(rest.trim_start_matches('/'))
        }
        _ => expand_home(raw, &ctx.home),
    };
    if expanded.is_absolute() {
        expanded
    } else {
        ctx.cwd.join(expanded)
    }
}

fn expand_home(raw: &str, home: &Path) -> PathBuf {
    for prefix in ["$HOME", "${HOME}", "~-", "~"] {
        if let Some(rest) = raw.strip_prefix(prefix) {
            if rest.is_empty() {
                return home.to_path_buf();
            }
            if let Some(rest) = rest.strip_prefix('/') {
                return home.join(rest);
            }
        }
    }
    if let Some(user_path) = raw.strip_prefix('~') {
        let (user, rest) = user_path.split_once('/').unwrap_or((user_path, ""));
        if !user.is_empty() && !user.contains(['$', '*', '?', '[']) {
            let base = if user == "root" {
                PathBuf::from("/root")
            } else {
                PathBuf::from("/home").join(user)
            };
            return base.join(rest);
        }
    }
    PathBuf::from(raw)
}

/// One sensitive rule, as written and as expanded.
#[derive(Debug, Clone)]
struct SensitiveRule {
    /// As written (`~/.ssh/`): what a match reports.
    label: String,
    /// Expanded absolute glob components (`["home", "u", ".ssh"]`), home glob-escaped.
    components: Vec<String>,
    /// A directory rule covers everything under it.
    dir: bool,
    /// `components` as literal names; `None` where a component is a real glob.
    literals: Vec<Option<String>>,
    /// The glob of each component that is not literal (`openclaw.json*`), so a name that
    /// glob cannot match (`workspace`) is not taken for it; `None` also where the glob is
    /// not modelled (then any name may match).
    globs: Vec<Option<glob::ShellGlob>>,
}

/// The compiled sensitive-path set: built-ins plus policy extras.
#[derive(Debug, Clone)]
pub struct SensitivePaths {
    rules: Vec<SensitiveRule>,
    set: GlobSet,
    /// Glob index in `set` → rule index.
    owner: Vec<usize>,
    home: PathBuf,
}

impl SensitivePaths {
    /// Compiles the built-in list plus `extra` (same syntax: `~/`, `$HOME/`, absolute paths,
    /// globs; trailing `/` = directory rule) with `~` = `home`.
    /// When the home is itself a symlink (`/home/node` → `/data/node`), the `~` rules are
    /// compiled for its real path too, since resolved paths come out under the real one.
    pub fn new(home: &Path, extra: &[String]) -> Result<Self, PolicyError> {
        let home = lexical_clean(home);
        let mut homes = vec![globset::escape(&home.to_string_lossy())];
        if let Some(real) = resolve_lenient(&home).filter(|r| *r != home) {
            homes.push(globset::escape(&real.to_string_lossy()));
        }
        let mut rules = Vec::new();
        let mut builder = GlobSetBuilder::new();
        let mut owner = Vec::new();
        let all = BUILTIN
            .iter()
            .map(|s| s.to_string())
            .chain(extra.iter().cloned());
        let per_home = all.flat_map(|label| {
            let home_relative = is_home_relative(&label);
            homes
                .iter()
                .take(if home_relative { homes.len() } else { 1 })
                .map(move |h| (label.clone(), h.clone()))
        });
        for (label, escaped_home) in per_home {
            let (rule, globs) = rule_globs(&label, &escaped_home)?;
            for glob in globs {
                builder.add(glob);
                owner.push(rules.len());
            }
            rules.push(rule);
        }
        let set = builder
            .build()
            .map_err(|e| PolicyError::pattern("sensitive paths", e.to_string()))?;
        Ok(SensitivePaths {
            rules,
            set,
            owner,
            home,
        })
    }

    /// The home `~` expands to.
    pub fn home(&self) -> &Path {
        &self.home
    }

    /// Lexical match, then the path with every symlink resolved (missing tails and dangling
    /// links tolerated), so a symlink to `~/.ssh` is caught. Returns the rule hit, as written.
    /// Pass the path before `..` folding (see [`absolute`]) when you have it; [`Self::check`]
    /// does both from raw text.
    pub fn matches(&self, path: &Path) -> Option<String> {
        let lexical = lexical_clean_cow(path);
        if let Some(hit) = self.match_rules(&lexical) {
            return Some(hit);
        }
        let resolved = if path.is_absolute() {
            resolve_lenient(path).filter(|r| r.as_os_str() != lexical.as_os_str())
        } else {
            None
        };
        // A rule reached through a symlink names the rule; a secret by name comes after.
        if let Some(hit) = resolved.as_deref().and_then(|r| self.match_rules(r)) {
            return Some(hit);
        }
        secret_name(&lexical).or_else(|| resolved.as_deref().and_then(secret_name))
    }

    /// [`Self::matches`] for a path as the agent wrote it (expanded against `ctx`).
    pub fn check(&self, raw: &str, ctx: &PathContext) -> Option<String> {
        self.matches(&absolute(raw, ctx))
    }

    fn match_rules(&self, path: &Path) -> Option<String> {
        if let Some(i) = self.set.matches(path).into_iter().min() {
            return Some(self.rules[self.owner[i]].label.clone());
        }
        // `/proc/<pid>/root/x` is `/x` seen through that process's root. (Only a path that
        // spells `proc` somewhere can be one: most paths skip the component walk.)
        let bytes = path.as_os_str().as_encoded_bytes();
        if !bytes.windows(4).any(|w| w == b"proc") {
            return None;
        }
        let mut comps = path.components();
        if let (Some(Component::RootDir), Some(proc_), Some(_), Some(root)) =
            (comps.next(), comps.next(), comps.next(), comps.next())
        {
            if proc_.as_os_str() == "proc" && root.as_os_str() == "root" {
                let rest = Path::new("/").join(comps.as_path());
                return self.match_rules(&rest);
            }
        }
        None
    }

    /// For a shell word containing glob characters (`~/.ss*/id_*`): could it expand to a
    /// sensitive path? Conservative: a glob in a rule, `**`, or an unknown bracket counts as
    /// a possible match, and `*` is assumed to match dot files (`shopt -s dotglob`).
    pub fn glob_may_match(&self, glob: &str, ctx: &PathContext) -> Option<String> {
        self.glob_word(glob, ctx, false)
    }

    /// Brace alternatives, then for each: the rules (conservatively), a dotenv name in the
    /// last component, and the paths it expands to on the decision's filesystem.
    fn glob_word(&self, glob: &str, ctx: &PathContext, contain: bool) -> Option<String> {
        let Some(alternatives) = expand::braces(glob) else {
            return Some(format!("{glob} (too many brace alternatives to check)"));
        };
        for alt in &alternatives {
            let hit = if !has_glob_chars(alt) {
                if contain {
                    self.contains_sensitive(&absolute(alt, ctx))
                } else {
                    self.check(alt, ctx)
                }
            } else {
                self.glob_against_rules(alt, ctx, contain)
                    .or_else(|| dotenv_glob(alt))
                    .or_else(|| self.glob_on_disk(alt, ctx, contain))
            };
            if hit.is_some() {
                return hit;
            }
        }
        None
    }

    /// The paths the glob matches on disk, each checked (symlinks resolved).
    fn glob_on_disk(&self, glob: &str, ctx: &PathContext, contain: bool) -> Option<String> {
        let abs = absolute(glob, ctx);
        let paths = expand::glob_paths(&abs)?;
        paths.iter().find_map(|p| {
            if contain {
                self.contains_sensitive(p)
            } else {
                self.matches(p)
            }
        })
    }

    /// Could the shell glob expand to a directory that contains (or is) a sensitive path
    /// (`rm -rf /home/*`)? Conservative like [`Self::glob_may_match`].
    pub fn glob_may_contain(&self, glob: &str, ctx: &PathContext) -> Option<String> {
        self.glob_word(glob, ctx, true)
    }

    fn glob_against_rules(&self, glob: &str, ctx: &PathContext, contain: bool) -> Option<String> {
        let path = normalize(glob, ctx);
        let mut variants = vec![path_components(&path)];
        // The literal prefix may be a symlink: also try it resolved.
        let comps = variants[0].clone();
        let literal = comps.iter().take_while(|c| !has_glob_chars(c)).count();
        let prefix: PathBuf = std::iter::once("/".to_string())
            .chain(comps[..literal].iter().cloned())
            .collect();
        if let Some(resolved) = resolve_lenient(&prefix) {
            let mut v = path_components(&resolved);
            v.extend(comps[literal..].iter().cloned());
            if v != comps {
                variants.push(v);
            }
        }
        for gs in &variants {
            let word = GlobWord::new(gs);
            for rule in &self.rules {
                if glob_hits_rule(&word, rule, contain) {
                    return Some(rule.label.clone());
                }
            }
        }
        None
    }

    /// Is `path` a directory that contains a sensitive path (`~` for `rm -rf ~`, `grep -r x
    /// ~`), or itself sensitive? An existing non-directory contains nothing. Symlink-aware.
    pub fn contains_sensitive(&self, path: &Path) -> Option<String> {
        if let Some(hit) = self.matches(path) {
            return Some(hit);
        }
        let mut candidates = vec![lexical_clean(path)];
        if path.is_absolute() {
            if let Some(resolved) = resolve_lenient(path) {
                candidates.push(resolved);
            }
        }
        for p in candidates {
            if fs_memo::metadata(&p).is_some_and(|m| !m.is_dir()) {
                continue;
            }
            let ps = path_components(&p);
            for rule in &self.rules {
                if ps.len() <= rule.literals.len()
                    && ps.iter().zip(rule.literals.iter().zip(&rule.globs)).all(
                        |(p, (r, g))| match (r, g) {
                            (Some(r), _) => r == p,
                            (None, Some(g)) => g.matches(p),
                            (None, None) => true,
                        },
                    )
                {
                    return Some(rule.label.clone());
                }
            }
        }
        None
    }
}

/// A secret by its file name ([`SECRET_FILE_NAMES`]): `.env` for dotenv files (the label
/// the rest of the policy knows), else the name.
fn secret_name(path: &Path) -> Option<String> {
    let name = path.file_name()?.to_string_lossy();
    if !is_secret_file_name(&name) {
        return None;
    }
    Some(if name == ".env" || name.starts_with(".env.") {
        ".env".to_string()
    } else {
        name.into_owned()
    })
}

/// Could the last component of a glob name a dotenv file? Only a pattern that starts with
/// `.` (or a bracket) can: the shell never lets `*` match a leading dot unless `dotglob`
/// is set, and setting it is not inert (`shopt` gates).
fn dotenv_glob(glob: &str) -> Option<String> {
    let last = glob.rsplit('/').next().unwrap_or(glob);
    if !(last.starts_with('.') || last.starts_with('[')) {
        return None;
    }
    let m = GlobBuilder::new(last)
        .literal_separator(true)
        .backslash_escape(true)
        .build()
        .ok()?
        .compile_matcher();
    [
        ".env",
        ".env.local",
        ".env.production",
        ".envrc",
        ".dev.vars",
        ".npmrc",
        ".pypirc",
        ".yarnrc.yml",
        ".netrc",
        ".git-credentials",
        ".pgpass",
        ".my.cnf",
    ]
    .iter()
    .any(|n| m.is_match(n))
    .then(|| ".env".to_string())
}

/// Checks one sensitive-path rule (as in `[sensitive].paths`) without building a set: the
/// loader validates each entry this way to point at the bad one.
pub fn validate_rule(label: &str, home: &Path) -> Result<(), PolicyError> {
    let home = globset::escape(&lexical_clean(home).to_string_lossy());
    rule_globs(label, &home).map(|_| ())
}

/// A rule and its globs: the path itself, and for a directory rule everything under it.
fn rule_globs(
    label: &str,
    escaped_home: &str,
) -> Result<(SensitiveRule, Vec<globset::Glob>), PolicyError> {
    let rule = compile_rule(label, escaped_home)?;
    let joined = format!("/{}", rule.components.join("/"));
    let mut sources = vec![joined.clone()];
    if rule.dir {
        sources.push(format!("{}/**", joined.trim_end_matches('/')));
    }
    let globs = sources
        .iter()
        .map(|g| {
            GlobBuilder::new(g)
                .literal_separator(true)
                .backslash_escape(true)
                .build()
                .map_err(|e| PolicyError::pattern(label, e.to_string()))
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok((rule, globs))
}

/// Does the rule start at the home (`~`, `~/x`, `$HOME/x`, `${HOME}/x`)?
fn is_home_relative(label: &str) -> bool {
    let t = label.trim();
    ["$HOME", "${HOME}", "~"].iter().any(|p| {
        t.strip_prefix(p)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
    })
}

/// Expands one rule (`~` → escaped home) into absolute, cleaned glob components.
fn compile_rule(label: &str, escaped_home: &str) -> Result<SensitiveRule, PolicyError> {
    let trimmed = label.trim();
    let dir = trimmed.ends_with('/');
    let mut expanded = None;
    for prefix in ["$HOME", "${HOME}", "~"] {
        if let Some(rest) = trimmed.strip_prefix(prefix) {
            if rest.is_empty() || rest.starts_with('/') {
                expanded = Some(format!("{escaped_home}{rest}"));
                break;
            }
        }
    }
    let expanded = expanded.unwrap_or_else(|| trimmed.to_string());
    if !expanded.starts_with('/') {
        return Err(PolicyError::pattern(
            label,
            "a sensitive path must be absolute or start with `~/` or `$HOME/`",
        ));
    }
    let mut components: Vec<String> = Vec::new();
    for part in expanded.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                components.pop();
            }
            other => components.push(other.to_string()),
        }
    }
    if components.is_empty() {
        return Err(PolicyError::pattern(
            label,
            "`/` cannot be a sensitive path",
        ));
    }
    Ok(SensitiveRule {
        label: trimmed.to_string(),
        literals: components.iter().map(|c| rule_literal(c)).collect(),
        globs: components
            .iter()
            .map(|c| match rule_literal(c) {
                Some(_) => None,
                None => glob::ShellGlob::parse(c),
            })
            .collect(),
        components,
        dir,
    })
}

fn path_components(path: &Path) -> Vec<String> {
    path.components()
        .filter_map(|c| match c {
            Component::Normal(n) => Some(n.to_string_lossy().into_owned()),
            _ => None,
        })
        .collect()
}
