//! One channel's delivery loop: notices arrive on its bounded queue; those its minimum
//! category and quiet hours admit leave at once when the channel sent nothing for a batching
//! window (the first of a burst reaches the phone without delay), else wait until a window
//! has passed since the last message and leave together as one message;
//! outcomes edit (Telegram) or post (webhook) what was sent. Attempts back off exponentially
//! and are bounded; the result is the channel's health. Nothing here is on a decision's path.

use super::client::{HttpClient, SendError};
use super::config::ChannelSpec;
use super::health::{Health, NotifyMetrics};
use super::level::local_minute;
use super::notice::{Notice, Outcome};
use super::ntfy::Ntfy;
use super::telegram::Telegram;
use super::webhook::Webhook;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::time::Instant;

/// The first retry's wait; each next one doubles, up to [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_millis(200);
const MAX_BACKOFF: Duration = Duration::from_secs(10);
/// Requests remembered as told (a webhook posts outcomes only for those).
const MAX_TOLD: usize = 1024;

/// What a channel's queue carries.
#[derive(Debug, Clone)]
pub enum Item {
    New(Notice),
    Done(Outcome),
}

/// The API-specific part of a channel.
pub enum Api {
    Webhook(Webhook),
    Ntfy(Ntfy),
    Telegram(Telegram),
}

/// One running channel.
pub struct Channel {
    pub spec: ChannelSpec,
    pub api: Api,
    pub batch: Duration,
    pub client: HttpClient,
    pub health: Arc<Health>,
    pub slot: usize,
    pub metrics: Arc<dyn NotifyMetrics>,
    /// The requests this channel sent, newest last: an outcome goes only where its request
    /// went (a filtered one stays untold).
    pub told: std::collections::VecDeque<String>,
    /// When the last message for new requests left: the next waits until a window after it.
    pub last_sent: Option<Instant>,
}

impl Channel {
    /// Whether `n` goes out now: at or above the minimum, and loud enough in quiet hours.
    fn admits(&self, n: &Notice, minute: u16) -> bool {
        if n.level < self.spec.min {
            return false;
        }
        match &self.spec.quiet {
            Some((hours, min)) if hours.contains(minute) => n.level >= *min,
            _ => true,
        }
    }

    pub async fn run(mut self, mut rx: mpsc::Receiver<Item>) {
        while let Some(item) = rx.recv().await {
            let first = match item {
                Item::Done(o) => {
                    self.outcome(&o).await;
                    continue;
                }
                Item::New(n) if self.admits(&n, local_minute()) => n,
                Item::New(_) => continue,
            };
            let mut batch = vec![first];
            let mut done = Vec::new();
            let until = self
                .last_sent
                .map_or_else(Instant::now, |t| (t + self.batch).max(Instant::now()));
            while Instant::now() < until {
                let next = match rx.try_recv() {
                    Ok(i) => Some(i),
                    Err(mpsc::error::TryRecvError::Empty) => {
                        match tokio::time::timeout_at(until, rx.recv()).await {
                            Ok(i) => i,
                            Err(_) => break,
                        }
                    }
                    Err(mpsc::error::TryRecvError::Disconnected) => None,
                };
                match next {
                    Some(Item::New(n)) if self.admits(&n, local_minute()) => batch.push(n),
                    Some(Item::New(_)) => {}
                    Some(Item::Done(o)) => done.push(o),
                    None => break,
                }
            }
            // A request decided within the window needs nobody's attention any more.
            batch.retain(|n| !done.iter().any(|o| o.id == n.id));
            if !batch.is_empty() {
                self.deliver(&batch).await;
                self.last_sent = Some(Instant::now());
            }
            for o in done {
                self.outcome(&o).await;
            }
        }
    }

    async fn deliver(&mut self, batch: &[Notice]) {
        let (url, body, headers, delivery) = match &self.api {
            Api::Webhook(w) => (w.url.clone(), Webhook::batch_body(batch), Vec::new(), true),
            Api::Ntfy(n) => (
                n.url.clone(),
                n.body(batch).to_string().into_bytes(),
                n.headers(),
                false,
            ),
            Api::Telegram(t) => (
                t.method_url("sendMessage"),
                t.send_body(batch).to_string().into_bytes(),
                Vec::new(),
                false,
            ),
        };
        for n in batch {
            if self.told.len() >= MAX_TOLD {
                self.told.pop_front();
            }
            self.told.push_back(n.id.clone());
        }
        let result = self.attempts(&url, headers, body, delivery).await;
        let result = match (result, &mut self.api) {
            (Ok(answer), Api::Telegram(t)) => t.sent(batch, &answer),
            (Ok(_), _) => Ok(()),
            (Err(e), _) => Err(e.to_string()),
        };
        self.record(result);
    }

    async fn outcome(&mut self, o: &Outcome) {
        let Some(at) = self.told.iter().position(|id| *id == o.id) else {
            return;
        };
        self.told.remove(at);
        let (url, body, delivery) = match &mut self.api {
            Api::Webhook(w) => (w.url.clone(), Webhook::outcome_body(o), true),
            Api::Telegram(t) => match t.edit_body(o) {
                Some(b) => (
                    t.method_url("editMessageText"),
                    b.to_string().into_bytes(),
                    false,
                ),
                None => return,
            },
            // A push already shown cannot be taken back; the card says the outcome.
            Api::Ntfy(_) => return,
        };
        let result = self.attempts(&url, Vec::new(), body, delivery).await;
        self.record(result.map(|_| ()).map_err(|e| e.to_string()));
    }

    fn record(&self, result: Result<(), String>) {
        if let Err(e) = &result {
            tracing::warn!(channel = %self.spec.name, kind = self.spec.kind.as_str(), error = %e, "notification not delivered");
        }
        self.metrics.sent(&self.spec.name, result.is_ok());
        self.health.delivered(self.slot, result);
    }

    /// Up to the channel's attempts, backing off between them; a webhook attempt is signed
    /// afresh (its timestamp is the attempt's) under one delivery id.
    async fn attempts(
        &self,
        url: &str,
        headers: Vec<(&'static str, String)>,
        body: Vec<u8>,
        signed: bool,
    ) -> Result<bytes::Bytes, SendError> {
        let delivery = uuid::Uuid::new_v4().to_string();
        let mut wait = FIRST_BACKOFF;
        let mut n = 1;
        loop {
            let mut h = headers.clone();
            if let (true, Api::Webhook(w)) = (signed, &self.api) {
                h.extend(w.headers(&delivery, &body));
            }
            let h: Vec<(&str, String)> = h.into_iter().collect();
            match self.client.post_json(url, &h, body.clone()).await {
                Ok(b) => return Ok(b),
                Err(e) if e.retryable() && n < self.spec.attempts => {
                    tokio::time::sleep(wait).await;
                    wait = (wait * 2).min(MAX_BACKOFF);
                    n += 1;
                }
                Err(e) => return Err(e),
            }
        }
    }
}
