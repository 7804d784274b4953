//! A subscription's delivery state, as its deliverer saves it in the store
//! (JSON, which the store keeps without reading), and the record of each
//! attempt. Both are what `GET /webhooks` and `query-api webhooks list` show.

use serde::{Deserialize, Serialize};

use super::payload::DeliveryGap;

/// Where a subscription's deliveries stand.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeliveryState {
    /// The cursor deliveries continue after: the `next` of the last
    /// acknowledged delivery, or the feed's position when the subscription
    /// was added. `None` until the deliverer first set it.
    #[serde(default)]
    pub cursor: Option<String>,
    /// Whether the endpoint answered the challenge.
    #[serde(default)]
    pub verified: bool,
    /// The message being delivered, kept until acknowledged so that every
    /// attempt, by any replica after any restart, posts the same message
    /// with the same `webhook-id`.
    #[serde(default)]
    pub pending: Option<PendingMessage>,
    /// Failed attempts of the pending message (or of the challenge).
    #[serde(default)]
    pub failures: u32,
    /// No attempt before this instant (milliseconds since the epoch).
    #[serde(default)]
    pub next_attempt_at_ms: i64,
    /// Set when the deliverer paused the subscription.
    #[serde(default)]
    pub paused: Option<Pause>,
    /// Notifications acknowledged so far.
    #[serde(default)]
    pub delivered: u64,
    #[serde(default)]
    pub last_success_at_ms: Option<i64>,
    /// What the last failed attempt met.
    #[serde(default)]
    pub last_error: Option<String>,
}

/// A message posted and not yet acknowledged.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PendingMessage {
    /// Its `webhook-id`.
    pub message_id: String,
    /// How many notifications it holds: the first this many after `cursor`
    /// that the key admits.
    pub count: u32,
    /// The cursor it ends at.
    pub next: String,
    /// Set for a message that reports a gap instead of notifications.
    #[serde(default)]
    pub gap: Option<DeliveryGap>,
}

/// A pause by the deliverer, lifted when the operator resumes after it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Pause {
    pub at_ms: i64,
    pub reason: String,
}

impl DeliveryState {
    /// The state a store holds (empty before the first save). A state that
    /// does not parse is logged and started over: delivery resumes from
    /// the subscription's start, so nothing is lost, though some may repeat.
    pub fn parse(id: &str, text: &str) -> DeliveryState {
        if text.is_empty() {
            return DeliveryState::default();
        }
        serde_json::from_str(text).unwrap_or_else(|error| {
            tracing::error!(webhook = id, %error, "a stored delivery state does not parse; starting it over");
            DeliveryState::default()
        })
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }
}

/// One attempt as recorded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AttemptRecord {
    /// `challenge` or `notifications`.
    pub kind: String,
    /// The `webhook-id` posted.
    pub message_id: String,
    /// 1 for the first attempt of the message.
    pub attempt: u32,
    /// Notifications in the message.
    pub notifications: u32,
    /// The endpoint's status code, when it answered.
    pub status: Option<u16>,
    /// What went wrong, when something did.
    pub error: Option<String>,
    pub duration_ms: u64,
}
