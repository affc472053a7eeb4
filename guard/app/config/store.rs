//! `[store]`: where the inbox lives. No `url` (the default): the embedded SQLite database in
//! the state dir, one guard's own. A `postgres://` url (`SANCTUM_STORE_URL` > file): the
//! database a fleet of guards shares, each row marked with this guard's `guard_id`.

use super::layers::Env;
use super::ConfigError;
use serde::Deserialize;

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct StoreSection {
    url: Option<String>,
    guard_id: Option<String>,
}

/// The store after precedence.
#[derive(Clone, PartialEq, Eq)]
pub enum StoreSettings {
    /// `inbox.db` in the state dir.
    Embedded,
    /// A shared PostgreSQL database.
    Fleet {
        /// The connection URL (may hold a password: never printed).
        url: String,
        /// This guard's name on its rows: `[store] guard_id`, else the host name.
        guard_id: String,
    },
}

impl std::fmt::Debug for StoreSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StoreSettings::Embedded => f.write_str("Embedded"),
            StoreSettings::Fleet { guard_id, .. } => f
                .debug_struct("Fleet")
                .field("guard_id", guard_id)
                .finish_non_exhaustive(),
        }
    }
}

pub(super) fn settings(env: &Env, file: &StoreSection) -> Result<StoreSettings, ConfigError> {
    let Some(url) = env.text("SANCTUM_STORE_URL").or(file.url.clone()) else {
        return Ok(StoreSettings::Embedded);
    };
    let url = url.trim().to_owned();
    if !(url.starts_with("postgres://") || url.starts_with("postgresql://")) {
        return Err(ConfigError::Store(
            "url: expected postgres://… (leave it out for the embedded SQLite store)".into(),
        ));
    }
    let guard_id = env
        .text("SANCTUM_GUARD_ID")
        .or(file.guard_id.clone())
        .or_else(|| {
            std::fs::read_to_string("/proc/sys/kernel/hostname")
                .ok()
                .map(|h| h.trim().to_owned())
        })
        .unwrap_or_default();
    let ok = |c: char| c.is_ascii_alphanumeric() || "-_.".contains(c);
    if guard_id.is_empty() || guard_id.len() > 64 || !guard_id.chars().all(ok) {
        return Err(ConfigError::Store(format!(
            "guard_id {guard_id:?}: 1-64 of A-Z a-z 0-9 - _ ."
        )));
    }
    Ok(StoreSettings::Fleet { url, guard_id })
}
