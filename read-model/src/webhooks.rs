//! The port for webhook subscriptions: what the operator's `query-api
//! webhooks` commands write, and what the API replicas that deliver them
//! read and keep, in the configured store so that every replica sees the
//! same subscriptions and exactly one delivers each.
//!
//! A subscription has two writers that never write the same field: the
//! operator (its endpoint, whether it is enabled, when it was last resumed)
//! and the deliverer that holds its lease (its delivery state). The lease is
//! taken and renewed by conditional writes, and the delivery state is saved
//! only by the lease's holder, so a replica that lost the lease cannot move
//! the subscription's position. The delivery state and the attempts are
//! text this crate does not interpret: the query API owns their format.
//! Subscriptions belong to no model version: a rebuild keeps them.

use async_trait::async_trait;

use crate::records::StoreError;

/// A subscription as the operator set it up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebhookSubscription {
    /// A stable, non-secret id (`wh_…`).
    pub id: String,
    /// The production key whose notifications (and filter) it delivers.
    pub key_id: String,
    /// The HTTPS address deliveries are posted to.
    pub endpoint: String,
    pub created_at_ms: i64,
    /// False while the operator has paused it.
    pub enabled: bool,
    /// When the operator last resumed it: a pause by the deliverer before
    /// this instant is lifted.
    pub resumed_at_ms: i64,
}

/// A subscription with its delivery state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebhookRecord {
    pub subscription: WebhookSubscription,
    /// What its deliverer last saved; empty before the first save.
    pub state: String,
}

/// One recorded delivery attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebhookAttempt {
    pub at_ms: i64,
    /// What the deliverer recorded of it.
    pub record: String,
}

/// Webhook subscriptions in a store.
#[async_trait]
pub trait Webhooks: Send + Sync {
    /// Stores a new subscription with an empty delivery state and no lease.
    /// An id already stored is refused with [`StoreError::Corrupt`].
    async fn insert_webhook(&self, subscription: &WebhookSubscription) -> Result<(), StoreError>;

    /// Every subscription with its delivery state, oldest first.
    async fn webhooks(&self) -> Result<Vec<WebhookRecord>, StoreError>;

    /// One subscription with its delivery state.
    async fn webhook(&self, id: &str) -> Result<Option<WebhookRecord>, StoreError>;

    /// Sets what the operator controls; false when there is no such subscription.
    async fn set_webhook_enabled(&self, id: &str, enabled: bool, resumed_at_ms: i64) -> Result<bool, StoreError>;

    /// Removes a subscription, its state and its attempts; false when there was none.
    async fn remove_webhook(&self, id: &str) -> Result<bool, StoreError>;

    /// Takes the subscription's lease for `owner` until `until_ms`, when it
    /// is free (never taken, released, or expired before `now_ms`) or
    /// already `owner`'s. True when `owner` holds it now.
    async fn claim_webhook(&self, id: &str, owner: &str, now_ms: i64, until_ms: i64) -> Result<bool, StoreError>;

    /// Gives the lease up, when `owner` holds it, so another replica takes
    /// the subscription at once.
    async fn release_webhook(&self, id: &str, owner: &str) -> Result<(), StoreError>;

    /// Saves the delivery state, only when `owner` holds the lease. False
    /// when it does not: the caller has lost the subscription and stops.
    async fn save_webhook_state(&self, id: &str, owner: &str, state: &str) -> Result<bool, StoreError>;

    /// Records an attempt; the store keeps the newest few of each subscription.
    async fn record_webhook_attempt(&self, id: &str, attempt: &WebhookAttempt) -> Result<(), StoreError>;

    /// The newest attempts of a subscription, newest first, at most `limit`.
    async fn webhook_attempts(&self, id: &str, limit: u32) -> Result<Vec<WebhookAttempt>, StoreError>;
}

/// How many attempts a store keeps per subscription.
pub const ATTEMPTS_KEPT: u32 = 20;
