//! Wires the push channels of `[notify]`: reads each channel's secret file (refused when
//! others may read it, like every token file) and starts the notifier beside the inbox,
//! with card links on the web prompt's origin.

use crate::notify::{Health, NotifySettings, Ready};
use std::sync::Arc;

/// Why the channels could not start.
#[derive(Debug, thiserror::Error)]
pub enum NotifyStartError {
    #[error("[notify] channel {0:?}: {1}")]
    Secret(String, super::secret_file::SecretFileError),
    #[error("[notify]: the card links need the web prompt or [notify] public_url")]
    NoLinkOrigin,
    #[error("[notify]: {0}")]
    Client(#[from] crate::notify::SendError),
}

/// Starts the channels (none configured: nothing runs); `web` is the prompt's base URL.
pub fn start(
    settings: &NotifySettings,
    inbox: &crate::inbox::Inbox,
    web: Option<&str>,
    health: &Arc<Health>,
) -> Result<(), NotifyStartError> {
    if settings.channels.is_empty() {
        return Ok(());
    }
    let origin = settings
        .public_url
        .as_deref()
        .or(web)
        .ok_or(NotifyStartError::NoLinkOrigin)?;
    let mut ready = Vec::new();
    for spec in &settings.channels {
        let secret = match &spec.secret_file {
            Some(f) => Some(
                super::secret_file::read_secret(f)
                    .map_err(|e| NotifyStartError::Secret(spec.name.clone(), e))?,
            ),
            None => None,
        };
        eprintln!(
            "sanctum-guard: notify          {} ({}), priority {} and up",
            spec.name,
            spec.kind.as_str(),
            spec.min.0
        );
        ready.push(Ready {
            spec: spec.clone(),
            secret,
        });
    }
    crate::notify::start(
        settings,
        ready,
        inbox,
        origin,
        health,
        Arc::new(crate::web::metrics::NotifyCounts),
    )?;
    Ok(())
}
