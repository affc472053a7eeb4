//! The `allow-always` entry format: OpenClaw binds a persisted grant to the exact argv and
//! cwd with `argPattern = "sha256:cwd-argv:v1:" + hex(sha256(S))` (docs/openclaw-protocol.md §2.1).

use super::document::{AllowlistEntry, ApprovalsDocument, SOURCE_ALLOW_ALWAYS};
use std::collections::BTreeMap;

pub use crate::policy::allowlist::cwd_argv::{
    cwd_argv_pattern, posix_normalize, CWD_ARGV_PREFIX, LEGACY_ARGV_PREFIX,
};

/// One command segment a human granted `allow-always` for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grant<'a> {
    /// The executable's resolved real path (the entry's `pattern`).
    pub resolved_path: &'a str,
    /// The full argv (argv[0] is not hashed).
    pub argv: &'a [String],
    /// The working directory the command ran in.
    pub cwd: &'a str,
}

/// Appends `allow-always` entries for `agent_id` as OpenClaw's `applyAllowlistEntryUpdate`
/// does: `{id, pattern, argPattern: cwd_argv_pattern(..), source: "allow-always",
/// lastUsedAt: now_ms}`. An entry with the same pattern and argPattern is not duplicated (its
/// `source` and `lastUsedAt` are refreshed). Returns how many entries were added.
pub fn append_allow_always(
    doc: &mut ApprovalsDocument,
    agent_id: &str,
    grants: &[Grant<'_>],
    now_ms: u64,
) -> usize {
    let agent = doc.agents.entry(agent_id.to_string()).or_default();
    let list = agent.allowlist.get_or_insert_with(Vec::new);
    let mut added = 0;
    for grant in grants {
        let pattern = grant.resolved_path.trim();
        if pattern.is_empty() {
            continue;
        }
        let arg_pattern = cwd_argv_pattern(grant.cwd, grant.argv);
        let existing = list
            .iter_mut()
            .find(|e| e.pattern == pattern && e.arg_pattern.as_deref() == Some(&arg_pattern));
        match existing {
            Some(entry) if entry.source_allow_always() => {}
            Some(entry) => {
                entry.source = Some(SOURCE_ALLOW_ALWAYS.to_string());
                entry.last_used_at = Some(now_ms.into());
            }
            None => {
                list.push(AllowlistEntry {
                    id: uuid::Uuid::new_v4().to_string(),
                    pattern: pattern.to_string(),
                    arg_pattern: Some(arg_pattern),
                    source: Some(SOURCE_ALLOW_ALWAYS.to_string()),
                    last_used_at: Some(now_ms.into()),
                    last_used_command: None,
                    last_resolved_path: None,
                    extra: BTreeMap::new(),
                });
                added += 1;
            }
        }
    }
    added
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn append_adds_once_per_pattern_and_hash() {
        let mut doc = ApprovalsDocument::default();
        let argv: Vec<String> = ["git", "status"].map(String::from).to_vec();
        let grant = Grant {
            resolved_path: "/usr/bin/git",
            argv: &argv,
            cwd: "/w",
        };
        assert_eq!(
            append_allow_always(&mut doc, "main", std::slice::from_ref(&grant), 5),
            1
        );
        assert_eq!(append_allow_always(&mut doc, "main", &[grant], 6), 0);
        let list = doc.agents["main"].allowlist.as_ref().unwrap();
        assert_eq!(list.len(), 1);
        assert!(list[0].source_allow_always());
        assert_eq!(
            list[0].arg_pattern(),
            Some(cwd_argv_pattern("/w", &argv).as_str())
        );
        assert_eq!(list[0].last_used_at, Some(5u64.into()));
    }

    #[test]
    fn normalizes_like_node_path_posix() {
        for (input, want) in [
            ("/tmp/../tmp/", "/tmp/"),
            ("/a//b/./c", "/a/b/c"),
            ("/..", "/"),
            ("", "."),
            ("a/../..", ".."),
            ("/", "/"),
        ] {
            assert_eq!(posix_normalize(input), want, "{input}");
        }
    }

    #[test]
    fn pattern_depends_on_cwd_and_every_arg() {
        let argv: Vec<String> = ["/usr/bin/git", "status"].map(String::from).to_vec();
        let a = cwd_argv_pattern("/w", &argv);
        assert!(a.starts_with(CWD_ARGV_PREFIX) && a.len() == CWD_ARGV_PREFIX.len() + 64);
        assert_ne!(a, cwd_argv_pattern("/x", &argv));
        assert_ne!(a, cwd_argv_pattern("/w", &argv[..1]));
        assert_eq!(a, cwd_argv_pattern("/w/.", &argv));
    }
}
