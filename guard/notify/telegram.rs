//! Telegram's Bot API: `sendMessage` with an inline keyboard whose URL buttons open the cards,
//! then `editMessageText` when a request is decided or expires, so the chat shows the outcome
//! (the message ids are kept per request for that). The bot token is part of the URL path:
//! no error or log line ever carries the URL.

use super::notice::{Notice, Outcome};
use serde_json::{json, Value};
use std::collections::HashMap;

/// Inline buttons per message; the rest of a batch is reached from the inbox.
const MAX_BUTTONS: usize = 5;
/// Messages remembered for editing; the oldest is forgotten beyond this.
const MAX_MESSAGES: usize = 1024;

/// A message's requests, each with its outcome once known.
type Lines = Vec<(Notice, Option<Outcome>)>;

pub struct Telegram {
    pub url: String,
    pub chat_id: String,
    pub token: String,
    /// Request id → the message that shows it.
    by_request: HashMap<String, i64>,
    /// Message id → its lines (request id, line, outcome once known), oldest first.
    messages: Vec<(i64, Lines)>,
}

impl Telegram {
    pub fn new(url: String, chat_id: String, token: String) -> Telegram {
        Telegram {
            url,
            chat_id,
            token,
            by_request: HashMap::new(),
            messages: Vec::new(),
        }
    }

    pub fn method_url(&self, method: &str) -> String {
        format!("{}/bot{}/{method}", self.url, self.token)
    }

    fn text(lines: &[(Notice, Option<Outcome>)]) -> String {
        let head = if lines.len() == 1 {
            "Approval needed".to_owned()
        } else {
            format!("{} approvals needed", lines.len())
        };
        let mut t = head;
        for (n, o) in lines {
            t.push_str("\n\n");
            t.push_str(&n.line());
            if let Some(o) = o {
                t.push_str("\n→ ");
                t.push_str(&o.text);
            }
        }
        t
    }

    /// The inline keyboard: one URL button per request still pending.
    fn keyboard(lines: &[(Notice, Option<Outcome>)]) -> Value {
        let rows: Vec<Value> = lines
            .iter()
            .enumerate()
            .filter(|(_, (_, o))| o.is_none())
            .take(MAX_BUTTONS)
            .map(|(i, (n, _))| {
                let label = if lines.len() == 1 {
                    "Open card".to_owned()
                } else {
                    format!("Open {}", i + 1)
                };
                json!([{"text": label, "url": n.link}])
            })
            .collect();
        json!({"inline_keyboard": rows})
    }

    pub fn send_body(&self, batch: &[Notice]) -> Value {
        let lines: Vec<_> = batch.iter().map(|n| (n.clone(), None)).collect();
        json!({"chat_id": self.chat_id, "text": Self::text(&lines),
               "reply_markup": Self::keyboard(&lines), "link_preview_options": {"is_disabled": true}})
    }

    /// Remembers the message `sendMessage` answered with.
    pub fn sent(&mut self, batch: &[Notice], answer: &[u8]) -> Result<(), String> {
        let v: Value = serde_json::from_slice(answer)
            .map_err(|_| "sendMessage: an answer that is not JSON".to_owned())?;
        let id = v
            .pointer("/result/message_id")
            .and_then(Value::as_i64)
            .ok_or_else(|| "sendMessage: an answer without result.message_id".to_owned())?;
        for n in batch {
            self.by_request.insert(n.id.clone(), id);
        }
        self.messages
            .push((id, batch.iter().map(|n| (n.clone(), None)).collect()));
        if self.messages.len() > MAX_MESSAGES {
            let (_, lines) = self.messages.remove(0);
            for (n, _) in lines {
                self.by_request.remove(&n.id);
            }
        }
        Ok(())
    }

    /// The `editMessageText` body for `o`, when a message of ours shows its request.
    pub fn edit_body(&mut self, o: &Outcome) -> Option<Value> {
        let mid = self.by_request.remove(&o.id)?;
        let at = self.messages.iter().position(|(m, _)| *m == mid)?;
        let lines = &mut self.messages[at].1;
        for (n, out) in lines.iter_mut() {
            if n.id == o.id {
                *out = Some(o.clone());
            }
        }
        let body = json!({"chat_id": self.chat_id, "message_id": mid, "text": Self::text(lines),
                          "reply_markup": Self::keyboard(lines)});
        if lines.iter().all(|(_, out)| out.is_some()) {
            self.messages.remove(at);
        }
        Some(body)
    }
}
