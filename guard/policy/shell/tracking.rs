//! What the analyser tracks across commands of one text: the directories later commands
//! may run in (`cd`, `CDPATH`, the physical directory behind a symlink) and the static
//! values variables are given (candidates for finding secrets, never for allowing).

use super::normalize_path;
use super::walk::{Analyser, MAX_CANDIDATES, MAX_CWDS};
use super::Word;
use std::path::PathBuf;

impl Analyser<'_> {
    /// Records that `name` may hold `value` (bounded).
    pub fn bind(&mut self, name: &str, value: &str) {
        if self.vars.len() >= MAX_CANDIDATES && !self.vars.contains_key(name) {
            return;
        }
        let vals = self.vars.entry(name.to_string()).or_default();
        if vals.len() < MAX_CANDIDATES && !vals.iter().any(|v| v == value) {
            vals.push(value.to_string());
        }
    }

    /// Binds `name` to a word's value or candidates.
    pub(crate) fn bind_word(&mut self, name: &str, w: &Word) {
        match &w.value {
            Some(v) => self.bind(name, v),
            None => {
                for c in w.candidates.clone() {
                    self.bind(name, &c);
                }
            }
        }
    }

    /// A `cd` (or `pushd`) to `target` (`None`: not static). The old directories stay
    /// candidates: the `cd` may fail, or sit in a subshell.
    pub fn change_dir(&mut self, target: Option<&str>) {
        match target {
            Some(t) if t != "-" => {
                let mut next = Vec::new();
                // CDPATH entries the text set: `cd NAME` may land under any of them.
                let cdpath: Vec<String> = if t.starts_with(['/', '.', '~']) {
                    Vec::new()
                } else {
                    self.vars
                        .get("CDPATH")
                        .into_iter()
                        .flatten()
                        .flat_map(|v| v.split(':').map(str::to_string))
                        .filter(|d| !d.is_empty())
                        .collect()
                };
                for d in &cdpath {
                    next.push(normalize_path(
                        &format!("{d}/{t}"),
                        &self.ctx.home,
                        &self.ctx.cwd,
                    ));
                }
                for cwd in &self.cwds {
                    let p = normalize_path(t, &self.ctx.home, cwd);
                    // `cd -P` (and the kernel, for later relative paths) resolves
                    // symlinks before `..`: the physical directory is a candidate too.
                    let target = match t.strip_prefix('~') {
                        Some("") => self.ctx.home.clone(),
                        Some(r) if r.starts_with('/') => self.ctx.home.join(&r[1..]),
                        _ => PathBuf::from(t),
                    };
                    let physical = crate::policy::paths::resolve_lenient(&cwd.join(target));
                    for p in std::iter::once(p).chain(physical) {
                        if !self.cwds.contains(&p) && !next.contains(&p) {
                            next.push(p);
                        }
                    }
                }
                self.cwds.extend(next);
                if self.cwds.len() > MAX_CWDS {
                    self.cwd_unknown = true;
                }
            }
            _ => self.cwd_unknown = true,
        }
    }
}
