//! Sink: push notifications. Listens to the inbox's events (a request waits for a human, is
//! decided, expires) and tells people where they are: a signed webhook, an ntfy topic, a
//! Telegram chat. It only tells: a notification carries the redacted, shortened command and
//! a link to the card, and acting still needs a signed-in session on the web prompt. It never
//! decides, and a slow or dead channel never delays a decision: each channel has a bounded
//! queue, and a full one drops the notice (counted) instead of waiting.

mod channel;
mod client;
pub mod config;
mod health;
pub mod level;
pub mod notice;
mod ntfy;
mod telegram;
pub mod webhook;

pub use client::SendError;
pub use config::{ChannelSpec, Kind, NotifyConfigError, NotifySection, NotifySettings};
pub use health::{read_state, state_lines, Health, NoMetrics, NotifyMetrics, HEALTH_FILE};

use crate::inbox::{Inbox, InboxEvent};
use channel::{Api, Channel, Item};
use notice::{Notice, Outcome};
use std::sync::Arc;
use tokio::sync::{broadcast, mpsc};

/// A channel ready to start: its checked spec and the secret its file held.
pub struct Ready {
    pub spec: ChannelSpec,
    pub secret: Option<String>,
}

/// Starts one task per channel and the one that feeds them from the inbox, reporting into
/// `health`. `web` is the origin the card links use (the config's `public_url` wins).
pub fn start(
    settings: &NotifySettings,
    channels: Vec<Ready>,
    inbox: &Inbox,
    web: &str,
    health: &Arc<Health>,
    metrics: Arc<dyn NotifyMetrics>,
) -> Result<(), SendError> {
    if channels.is_empty() {
        return Ok(());
    }
    let client = client::HttpClient::new()?;
    let mut queues = Vec::new();
    for Ready { spec, secret } in channels {
        let secret = secret.unwrap_or_default();
        let api = match spec.kind {
            Kind::Webhook => Api::Webhook(webhook::Webhook {
                url: spec.url.clone(),
                key: secret,
            }),
            Kind::Ntfy => Api::Ntfy(ntfy::Ntfy {
                url: spec.url.clone(),
                topic: spec.target.clone(),
                token: (!secret.is_empty()).then_some(secret),
            }),
            Kind::Telegram => Api::Telegram(telegram::Telegram::new(
                spec.url.clone(),
                spec.target.clone(),
                secret,
            )),
        };
        let slot = health.add(&spec.name, spec.kind.as_str());
        let (tx, rx) = mpsc::channel(settings.queue);
        queues.push((tx, slot, spec.name.clone()));
        let ch = Channel {
            spec,
            api,
            batch: settings.batch,
            client: client.clone(),
            health: health.clone(),
            slot,
            metrics: metrics.clone(),
            told: Default::default(),
            last_sent: None,
        };
        tokio::spawn(ch.run(rx));
    }
    let web = settings
        .public_url
        .clone()
        .unwrap_or_else(|| web.trim_end_matches('/').to_owned());
    let mut sub = inbox.subscribe();
    let h = health.clone();
    tokio::spawn(async move {
        loop {
            let item = match sub.recv().await {
                Ok(InboxEvent::Added(e)) => Item::New(Notice::of(&e, &web)),
                Ok(InboxEvent::Resolved(r)) | Ok(InboxEvent::Expired(r)) => {
                    Item::Done(Outcome::of(&r))
                }
                // Events this feeder fell behind on are lost to every channel: counted.
                Err(broadcast::error::RecvError::Lagged(_)) => {
                    for (_, slot, name) in &queues {
                        h.dropped(*slot);
                        metrics.dropped(name);
                    }
                    continue;
                }
                Err(broadcast::error::RecvError::Closed) => return,
            };
            for (tx, slot, name) in &queues {
                if tx.try_send(item.clone()).is_err() {
                    h.dropped(*slot);
                    metrics.dropped(name);
                }
            }
        }
    });
    Ok(())
}
