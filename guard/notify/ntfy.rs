//! ntfy's HTTP publish API, JSON form: a POST to the server's root with the topic, a title,
//! the message, a priority (1..=5, from the category), the card as the click target and a
//! `view` action. An access token, when the topic needs one, goes as `Authorization: Bearer`.

use super::notice::Notice;
use serde_json::{json, Value};

pub struct Ntfy {
    pub url: String,
    pub topic: String,
    pub token: Option<String>,
}

impl Ntfy {
    /// One message for `batch`: the loudest request sets the priority; one view action per
    /// request (ntfy shows at most three).
    pub fn body(&self, batch: &[Notice]) -> Value {
        let priority = batch.iter().map(|n| n.level.0).max().unwrap_or(3);
        let (title, message) = match batch {
            [one] => (
                format!("Approval needed: {}", one.category_name()),
                one.summary.clone(),
            ),
            _ => (
                format!("{} approvals needed", batch.len()),
                batch
                    .iter()
                    .map(Notice::line)
                    .collect::<Vec<_>>()
                    .join("\n"),
            ),
        };
        let actions: Vec<Value> = batch
            .iter()
            .take(3)
            .enumerate()
            .map(|(i, n)| {
                let label = if batch.len() == 1 {
                    "Open card".to_owned()
                } else {
                    format!("Open {}", i + 1)
                };
                json!({"action": "view", "label": label, "url": n.link, "clear": true})
            })
            .collect();
        let click = batch.first().map(|n| n.link.clone());
        json!({"topic": self.topic, "title": title, "message": message, "priority": priority,
               "tags": ["lock"], "click": click, "actions": actions})
    }

    pub fn headers(&self) -> Vec<(&'static str, String)> {
        self.token
            .iter()
            .map(|t| ("authorization", format!("Bearer {t}")))
            .collect()
    }
}
