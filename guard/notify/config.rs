//! The `[notify]` section of the deployment config: the batching window, the queue bound and
//! the channels, each with its base URL, its secret's file, a minimum category and quiet
//! hours. Parsed and checked here; the wiring reads the secret files and builds the channels.

use super::level::{Level, QuietHours};
use crate::policy::verdict::Category;
use serde::Deserialize;
use std::path::PathBuf;
use std::time::Duration;

/// After a message, the requests of the next window wait and become one message per channel
/// (the first after a quiet window leaves at once).
pub const DEFAULT_BATCH_MS: u64 = 3000;
/// Notices waiting per channel beyond this are dropped (and counted), never waited for.
pub const DEFAULT_QUEUE: usize = 256;
/// Attempts per message (the first and its retries) when the channel does not say.
pub const DEFAULT_ATTEMPTS: u32 = 4;
/// Telegram's Bot API.
pub const TELEGRAM_API: &str = "https://api.telegram.org";

/// Why a `[notify]` section was refused.
#[derive(Debug, thiserror::Error)]
pub enum NotifyConfigError {
    #[error("[notify] channel {0:?}: url {1:?} must start with http:// or https://")]
    Url(String, String),
    #[error("[notify] channel {0:?}: {1}")]
    Missing(String, &'static str),
    #[error("[notify] channel {0:?}: quiet_hours {1:?}: expected HH:MM-HH:MM")]
    Quiet(String, String),
    #[error("[notify] two channels are named {0:?}")]
    Duplicate(String),
    #[error("[notify] channel {0:?}: attempts must be 1..=10")]
    Attempts(String),
    #[error("[notify] public_url {0:?} must start with http:// or https://")]
    PublicUrl(String),
}

/// `[notify]` as the file writes it.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NotifySection {
    batch_ms: Option<u64>,
    queue: Option<usize>,
    public_url: Option<String>,
    #[serde(default, rename = "channel")]
    channels: Vec<ChannelSection>,
}

/// One `[[notify.channel]]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct ChannelSection {
    kind: Kind,
    name: Option<String>,
    url: Option<String>,
    topic: Option<String>,
    chat_id: Option<String>,
    token_file: Option<PathBuf>,
    secret_file: Option<PathBuf>,
    min_category: Option<Category>,
    quiet_hours: Option<String>,
    quiet_min_category: Option<Category>,
    attempts: Option<u32>,
}

/// Which API a channel speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    Webhook,
    Ntfy,
    Telegram,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Webhook => "webhook",
            Kind::Ntfy => "ntfy",
            Kind::Telegram => "telegram",
        }
    }
}

/// The effective `[notify]`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NotifySettings {
    pub batch: Duration,
    pub queue: usize,
    /// The card links' origin when it is not the web prompt's base URL.
    pub public_url: Option<String>,
    pub channels: Vec<ChannelSpec>,
}

/// One checked channel; its secret is still a file name (the wiring reads it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChannelSpec {
    pub name: String,
    pub kind: Kind,
    /// Base URL without a trailing slash.
    pub url: String,
    /// ntfy's topic or Telegram's chat id.
    pub target: String,
    /// The bearer token (ntfy), the bot token (Telegram) or the HMAC key (webhook).
    pub secret_file: Option<PathBuf>,
    pub min: Level,
    pub quiet: Option<(QuietHours, Level)>,
    pub attempts: u32,
}

fn http_url(u: &str) -> bool {
    u.starts_with("http://") || u.starts_with("https://")
}

impl NotifySection {
    /// Checks the section; every channel needs what its API needs.
    pub fn settings(&self) -> Result<NotifySettings, NotifyConfigError> {
        if let Some(u) = &self.public_url {
            if !http_url(u) {
                return Err(NotifyConfigError::PublicUrl(u.clone()));
            }
        }
        let mut channels: Vec<ChannelSpec> = Vec::new();
        for c in &self.channels {
            let spec = c.spec()?;
            if channels.iter().any(|o| o.name == spec.name) {
                return Err(NotifyConfigError::Duplicate(spec.name));
            }
            channels.push(spec);
        }
        Ok(NotifySettings {
            batch: Duration::from_millis(self.batch_ms.unwrap_or(DEFAULT_BATCH_MS)),
            queue: self.queue.unwrap_or(DEFAULT_QUEUE).max(1),
            public_url: self
                .public_url
                .as_ref()
                .map(|u| u.trim_end_matches('/').to_owned()),
            channels,
        })
    }
}

impl ChannelSection {
    fn spec(&self) -> Result<ChannelSpec, NotifyConfigError> {
        let name = self
            .name
            .clone()
            .unwrap_or_else(|| self.kind.as_str().to_owned());
        let missing = |what| NotifyConfigError::Missing(name.clone(), what);
        let url = match (self.kind, &self.url) {
            (_, Some(u)) => u.clone(),
            (Kind::Telegram, None) => TELEGRAM_API.to_owned(),
            (_, None) => return Err(missing("needs a url")),
        };
        if !http_url(&url) {
            return Err(NotifyConfigError::Url(name, url));
        }
        let target = match self.kind {
            Kind::Ntfy => self.topic.clone().ok_or(missing("needs a topic"))?,
            Kind::Telegram => self.chat_id.clone().ok_or(missing("needs a chat_id"))?,
            Kind::Webhook => String::new(),
        };
        let secret_file = match self.kind {
            Kind::Webhook => Some(
                self.secret_file
                    .clone()
                    .ok_or(missing("needs a secret_file (the HMAC key)"))?,
            ),
            Kind::Telegram => Some(
                self.token_file
                    .clone()
                    .ok_or(missing("needs a token_file (the bot token)"))?,
            ),
            Kind::Ntfy => self.token_file.clone(),
        };
        let quiet = match &self.quiet_hours {
            None => None,
            Some(q) => {
                let hours = QuietHours::parse(q)
                    .ok_or_else(|| NotifyConfigError::Quiet(name.clone(), q.clone()))?;
                // During quiet hours only what would wake someone goes out.
                let min = self
                    .quiet_min_category
                    .map(Level::of)
                    .unwrap_or(Level::URGENT);
                Some((hours, min))
            }
        };
        let attempts = self.attempts.unwrap_or(DEFAULT_ATTEMPTS);
        if !(1..=10).contains(&attempts) {
            return Err(NotifyConfigError::Attempts(name));
        }
        Ok(ChannelSpec {
            url: url.trim_end_matches('/').to_owned(),
            name,
            kind: self.kind,
            target,
            secret_file,
            min: self.min_category.map(Level::of).unwrap_or(Level::LOWEST),
            quiet,
            attempts,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn section(text: &str) -> Result<NotifySettings, NotifyConfigError> {
        #[derive(Deserialize)]
        struct F {
            notify: NotifySection,
        }
        toml::from_str::<F>(text).unwrap().notify.settings()
    }

    #[test]
    fn each_channel_needs_what_its_api_needs() {
        let bad = [
            ("[[notify.channel]]\nkind = \"ntfy\"\ntopic = \"t\"", "needs a url"),
            ("[[notify.channel]]\nkind = \"ntfy\"\nurl = \"http://n\"", "needs a topic"),
            ("[[notify.channel]]\nkind = \"ntfy\"\nurl = \"ftp://n\"\ntopic = \"t\"", "must start with http"),
            ("[[notify.channel]]\nkind = \"telegram\"\ntoken_file = \"/t\"", "needs a chat_id"),
            ("[[notify.channel]]\nkind = \"telegram\"\nchat_id = \"1\"", "needs a token_file"),
            ("[[notify.channel]]\nkind = \"webhook\"\nurl = \"http://h\"", "needs a secret_file"),
            (
                "[[notify.channel]]\nkind = \"webhook\"\nurl = \"http://h\"\nsecret_file = \"/k\"\nquiet_hours = \"22-07\"",
                "expected HH:MM-HH:MM",
            ),
            (
                "[[notify.channel]]\nkind = \"webhook\"\nurl = \"http://h\"\nsecret_file = \"/k\"\nattempts = 0",
                "attempts must be",
            ),
            (
                "[[notify.channel]]\nkind = \"ntfy\"\nurl = \"http://n\"\ntopic = \"t\"\n[[notify.channel]]\nkind = \"ntfy\"\nurl = \"http://n\"\ntopic = \"u\"",
                "two channels are named",
            ),
            ("[notify]\npublic_url = \"guard.example\"", "public_url"),
        ];
        for (text, why) in bad {
            let e = section(&format!(
                "[notify]\n{}",
                text.trim_start_matches("[notify]\n")
            ))
            .expect_err(text)
            .to_string();
            assert!(e.contains(why), "{text}: {e}");
        }
    }

    #[test]
    fn defaults_and_a_full_channel() {
        let s = section("[notify]\n[[notify.channel]]\nkind = \"telegram\"\nchat_id = \"-1\"\ntoken_file = \"/t\"\nmin_category = \"run-code\"\nquiet_hours = \"22:00-07:00\"").unwrap();
        assert_eq!(s.batch, Duration::from_millis(DEFAULT_BATCH_MS));
        assert_eq!(s.queue, DEFAULT_QUEUE);
        let c = &s.channels[0];
        assert_eq!(
            (c.name.as_str(), c.url.as_str()),
            ("telegram", TELEGRAM_API)
        );
        assert_eq!(c.min, Level::of(Category::RunCode));
        assert_eq!(c.quiet.map(|q| q.1), Some(Level::URGENT));
        assert!(toml::from_str::<NotifySection>("[[channel]]\nkind = \"sms\"").is_err());
        assert!(toml::from_str::<NotifySection>("batch = 1").is_err());
    }
}
