//! `GET /webhooks`: the webhook subscriptions of the caller's key, where
//! their deliveries stand, and their recent attempts. Read-only: the
//! operator sets subscriptions up (`query-api webhooks`), by agreement with
//! the partner, as production keys are.

use std::sync::Arc;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use read_model::calendar::Timestamp;
use serde::Serialize;
use utoipa::ToSchema;

use super::json_of;
use crate::access::Credentials;
use crate::app::{App, BASE_PATH};
use crate::keys::{KeyKind, Scope};
use crate::webhooks::state::{AttemptRecord, DeliveryState};
use crate::webhooks::{WebhookStatus, status_of};

/// Attempts shown per subscription.
const ATTEMPTS_SHOWN: u32 = 10;

/// The caller's subscriptions.
#[derive(Debug, Serialize, ToSchema)]
pub struct WebhookList {
    pub webhooks: Vec<WebhookView>,
}

/// One subscription.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WebhookView {
    pub id: String,
    pub endpoint: String,
    pub status: WebhookStatus,
    /// Why it is paused, when the deliverer paused it.
    pub paused_reason: Option<String>,
    #[schema(value_type = String, format = DateTime)]
    pub created_at: Timestamp,
    /// The cursor deliveries continue after (the `next` of the last one acknowledged).
    pub cursor: Option<String>,
    /// Notifications acknowledged so far.
    pub delivered: u64,
    #[schema(value_type = Option<String>, format = DateTime)]
    pub last_success_at: Option<Timestamp>,
    /// Failed attempts of the message being delivered.
    pub failures: u32,
    /// When the next attempt is due, while retrying.
    #[schema(value_type = Option<String>, format = DateTime)]
    pub next_attempt_at: Option<Timestamp>,
    pub last_error: Option<String>,
    /// The newest attempts, newest first.
    pub attempts: Vec<AttemptView>,
}

/// One delivery attempt.
#[derive(Debug, Serialize, ToSchema)]
pub struct AttemptView {
    #[schema(value_type = String, format = DateTime)]
    pub at: Timestamp,
    #[serde(flatten)]
    pub record: AttemptRecord,
}

/// `GET /webhooks`.
#[utoipa::path(
    get,
    context_path = BASE_PATH,
    path = "/webhooks",
    operation_id = "listWebhooks",
    tag = "Notifications",
    summary = "The caller's webhook subscriptions and their recent attempts",
    description = "Not in the specification. The webhook subscriptions the operator set up for the calling production key: each posts the key's notifications (with its filter) to an HTTPS endpoint, in order, at least once, signed as Standard Webhooks asks (`v1a`, Ed25519, with a key of `/keys`); see the `webhooks` section of this document for what is posted. `status` is `challenging` (the endpoint has not answered the challenge yet), `active`, `retrying` (on the schedule: 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 14 h, 20 h, 24 h) or `paused` (by the operator, or after a `410` answer or a spent schedule; the operator resumes it from where it stopped). A sandbox key has no subscriptions.",
    responses(
        (status = 200, description = "The key's subscriptions.", body = WebhookList),
    ),
    security(("apiKey" = ["notifications:read"])),
)]
pub async fn webhooks(State(app): State<Arc<App>>, credentials: Credentials) -> Response {
    app.answer_authorized(&credentials, Scope::NotificationsRead, None, async |granted| {
        let mut webhooks = Vec::new();
        if granted.principal.kind == KeyKind::Production {
            for record in app.webhooks.webhooks().await? {
                let subscription = record.subscription;
                if *subscription.key_id != *granted.principal.key_id {
                    continue;
                }
                let state = DeliveryState::parse(&subscription.id, &record.state);
                let attempts = app.webhooks.webhook_attempts(&subscription.id, ATTEMPTS_SHOWN).await?;
                let status = status_of(&subscription, &state);
                let retrying = status == WebhookStatus::Retrying;
                webhooks.push(WebhookView {
                    status,
                    paused_reason: state.paused.map(|pause| pause.reason),
                    created_at: Timestamp(subscription.created_at_ms),
                    cursor: state.cursor,
                    delivered: state.delivered,
                    last_success_at: state.last_success_at_ms.map(Timestamp),
                    failures: state.failures,
                    next_attempt_at: retrying.then_some(Timestamp(state.next_attempt_at_ms)),
                    last_error: state.last_error,
                    attempts: attempts
                        .into_iter()
                        .filter_map(|attempt| {
                            let record = serde_json::from_str(&attempt.record).ok()?;
                            Some(AttemptView { at: Timestamp(attempt.at_ms), record })
                        })
                        .collect(),
                    id: subscription.id,
                    endpoint: subscription.endpoint,
                });
            }
        }
        json_of(StatusCode::OK, &WebhookList { webhooks })
    })
    .await
}
