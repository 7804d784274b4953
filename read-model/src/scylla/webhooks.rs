//! Webhook subscriptions on the cluster ([`Webhooks`]): the operator's rows
//! in one partition of the catalog keyspace, written with the catalog's
//! clock; each subscription's delivery row in a partition of its own,
//! written by lightweight transactions only (see `schemas/cql/catalog.cql`).

use async_trait::async_trait;
use scylla::value::Row;

use super::ScyllaStore;
use super::execution::{execute, select};
use super::statements::{CatalogStatement, WEBHOOKS_PARTITION};
use crate::store::StoreError;
use crate::webhooks::{WebhookAttempt, WebhookRecord, WebhookSubscription, Webhooks};

/// A subscription's row. A row whose key id is missing is what an update
/// racing a removal left behind, and is no subscription.
type SubscriptionRow = (String, Option<String>, Option<String>, Option<i64>, Option<bool>, Option<i64>);

fn subscription(
    (id, key_id, endpoint, created_at_ms, enabled, resumed_at_ms): SubscriptionRow,
) -> Option<WebhookSubscription> {
    Some(WebhookSubscription {
        id,
        key_id: key_id?,
        endpoint: endpoint?,
        created_at_ms: created_at_ms.unwrap_or(0),
        enabled: enabled.unwrap_or(false),
        resumed_at_ms: resumed_at_ms.unwrap_or(0),
    })
}

/// Whether a lightweight transaction applied: its first column.
fn applied(rows: &[Row]) -> Result<bool, StoreError> {
    rows.first()
        .and_then(|row| row.columns.first())
        .and_then(|column| column.as_ref()?.as_boolean())
        .ok_or_else(|| StoreError::Corrupt("a conditional write answered without [applied]".into()))
}

impl ScyllaStore {
    async fn subscriptions(&self) -> Result<Vec<WebhookSubscription>, StoreError> {
        let statement = self.catalog().await?.get(CatalogStatement::SelectWebhooks)?;
        let rows: Vec<SubscriptionRow> = select(&self.inner.session, statement, (WEBHOOKS_PARTITION,)).await?;
        let mut subscriptions: Vec<WebhookSubscription> = rows.into_iter().filter_map(subscription).collect();
        subscriptions.sort_by(|left, right| (left.created_at_ms, &left.id).cmp(&(right.created_at_ms, &right.id)));
        Ok(subscriptions)
    }

    async fn with_state(&self, subscription: WebhookSubscription) -> Result<WebhookRecord, StoreError> {
        let statement = self.catalog().await?.get(CatalogStatement::SelectWebhookDelivery)?;
        let rows: Vec<(Option<String>,)> = select(&self.inner.session, statement, (subscription.id.as_str(),)).await?;
        let state = rows.into_iter().next().and_then(|(state,)| state).unwrap_or_default();
        Ok(WebhookRecord { subscription, state })
    }

    async fn conditional(
        &self,
        statement: CatalogStatement,
        values: impl scylla::serialize::row::SerializeRow,
    ) -> Result<bool, StoreError> {
        let statement = self.catalog().await?.get(statement)?;
        applied(&select::<Row>(&self.inner.session, statement, values).await?)
    }
}

#[async_trait]
impl Webhooks for ScyllaStore {
    async fn insert_webhook(&self, subscription: &WebhookSubscription) -> Result<(), StoreError> {
        if self.subscriptions().await?.iter().any(|stored| stored.id == subscription.id) {
            return Err(StoreError::Corrupt(format!("webhook {} exists", subscription.id)));
        }
        // The delivery row first: a subscription is delivered once its row
        // is listed, and its deliverer needs the delivery row to take a lease.
        let id = subscription.id.as_str();
        if !self.conditional(CatalogStatement::InsertWebhookDelivery, (id,)).await? {
            return Err(StoreError::Corrupt(format!("webhook {id} has a delivery state")));
        }
        let statement = self.catalog().await?.get(CatalogStatement::InsertWebhook)?;
        let values = (
            WEBHOOKS_PARTITION,
            id,
            &subscription.key_id,
            &subscription.endpoint,
            subscription.created_at_ms,
            subscription.enabled,
            subscription.resumed_at_ms,
            self.catalog_stamp().await?,
        );
        execute(&self.inner.session, statement, values).await.map(drop)
    }

    async fn webhooks(&self) -> Result<Vec<WebhookRecord>, StoreError> {
        let mut records = Vec::new();
        for subscription in self.subscriptions().await? {
            records.push(self.with_state(subscription).await?);
        }
        Ok(records)
    }

    async fn webhook(&self, id: &str) -> Result<Option<WebhookRecord>, StoreError> {
        match self.subscriptions().await?.into_iter().find(|subscription| subscription.id == id) {
            Some(subscription) => Ok(Some(self.with_state(subscription).await?)),
            None => Ok(None),
        }
    }

    async fn set_webhook_enabled(&self, id: &str, enabled: bool, resumed_at_ms: i64) -> Result<bool, StoreError> {
        if !self.subscriptions().await?.iter().any(|subscription| subscription.id == id) {
            return Ok(false);
        }
        let statement = self.catalog().await?.get(CatalogStatement::UpdateWebhook)?;
        let stamp = self.catalog_stamp().await?;
        execute(&self.inner.session, statement, (stamp, enabled, resumed_at_ms, WEBHOOKS_PARTITION, id)).await?;
        Ok(true)
    }

    async fn remove_webhook(&self, id: &str) -> Result<bool, StoreError> {
        if !self.subscriptions().await?.iter().any(|subscription| subscription.id == id) {
            return Ok(false);
        }
        // The subscription first: once it is not listed, no replica delivers it.
        let statement = self.catalog().await?.get(CatalogStatement::DeleteWebhook)?;
        let stamp = self.catalog_stamp().await?;
        execute(&self.inner.session, statement, (stamp, WEBHOOKS_PARTITION, id)).await?;
        self.conditional(CatalogStatement::DeleteWebhookDelivery, (id,)).await?;
        let statement = self.catalog().await?.get(CatalogStatement::DeleteWebhookAttempts)?;
        let stamp = self.catalog_stamp().await?;
        execute(&self.inner.session, statement, (stamp, id)).await?;
        Ok(true)
    }

    async fn claim_webhook(&self, id: &str, owner: &str, now_ms: i64, until_ms: i64) -> Result<bool, StoreError> {
        // One transaction cannot ask "mine or expired": renewing is tried
        // first, as a holder renews far more often than a lease changes hands.
        if self.conditional(CatalogStatement::KeepWebhookLease, (until_ms, id, owner)).await? {
            return Ok(true);
        }
        self.conditional(CatalogStatement::TakeWebhookLease, (owner, until_ms, id, now_ms)).await
    }

    async fn release_webhook(&self, id: &str, owner: &str) -> Result<(), StoreError> {
        self.conditional(CatalogStatement::KeepWebhookLease, (0_i64, id, owner)).await.map(drop)
    }

    async fn save_webhook_state(&self, id: &str, owner: &str, state: &str) -> Result<bool, StoreError> {
        self.conditional(CatalogStatement::SaveWebhookState, (state, id, owner)).await
    }

    async fn record_webhook_attempt(&self, id: &str, attempt: &WebhookAttempt) -> Result<(), StoreError> {
        let statement = self.catalog().await?.get(CatalogStatement::InsertWebhookAttempt)?;
        // Two attempts recorded in one millisecond are told apart by what they say.
        let attempt_id = format!("{:032x}", twox_hash::XxHash3_128::oneshot(attempt.record.as_bytes()));
        let stamp = attempt.at_ms.saturating_mul(1_000);
        execute(&self.inner.session, statement, (id, attempt.at_ms, attempt_id, &attempt.record, stamp)).await.map(drop)
    }

    async fn webhook_attempts(&self, id: &str, limit: u32) -> Result<Vec<WebhookAttempt>, StoreError> {
        let statement = self.catalog().await?.get(CatalogStatement::SelectWebhookAttempts)?;
        let limit = i32::try_from(limit).unwrap_or(i32::MAX);
        let rows: Vec<(i64, String)> = select(&self.inner.session, statement, (id, limit)).await?;
        Ok(rows.into_iter().map(|(at_ms, record)| WebhookAttempt { at_ms, record }).collect())
    }
}
