//! What a webhook delivery posts: the subscription's next notifications,
//! or the challenge its endpoint answers before the first delivery. The
//! OpenAPI document describes both in its `webhooks` section.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::routes::notifications::NotificationItem;

/// A delivery of notifications, in commit order.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct NotificationDelivery {
    /// `notifications`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The subscription's id (`wh_…`).
    pub subscription: String,
    /// The cursor the first notification follows: the `next` of the
    /// delivery before. A receiver whose last `next` differs has missed
    /// something, and reads it from `GET /notifications?since=` its last `next`.
    pub previous: Option<String>,
    /// Up to the subscription's batch size of notifications, each with its cursor.
    pub notifications: Vec<NotificationItem>,
    /// Where the next delivery continues: the last notification's cursor.
    pub next: String,
    /// Present when notifications after `previous` are no longer retained
    /// or a rebuild replaced the feed: revalidate the answers you hold with
    /// `If-None-Match`; deliveries continue from `next`.
    pub gap: Option<DeliveryGap>,
}

/// Why a delivery could not continue from where the last one ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeliveryGap {
    pub reason: String,
}

/// The challenge posted before the first delivery: the endpoint proves it
/// asked for deliveries by answering 2xx with `{"challenge": …}` echoing it.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WebhookChallenge {
    /// `webhook.challenge`.
    #[serde(rename = "type")]
    pub kind: String,
    pub subscription: String,
    /// A random value to send back.
    pub challenge: String,
}

/// The answer a challenge expects.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct ChallengeAnswer {
    pub challenge: String,
}
