//! Production keys: issued by the operator, shown once, and kept only as
//! SHA-256 hashes in the configured store ([`read_model::ApiKeys`]), so every
//! replica on that store knows the same keys.
//!
//! The API holds the active keys in memory and a task reloads them every
//! [`REFRESH_INTERVAL`], so a revoked key is refused within a second. A key
//! that memory does not know is looked up in the store before the request
//! is refused, so a key issued a moment ago is accepted on its first
//! request. This module must not decide scopes or quotas: it says who is
//! calling.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, PoisonError, RwLock, Weak};
use std::time::Duration;

use read_model::hex::lower_hex;
use read_model::{ApiKeyRecord, ApiKeys, StoreError};

use super::memo::KeyMemo;
use super::notification_filter::NotificationFilter;
use super::{KeyKind, Principal, Scopes, random_bytes, sha256_hex};
use crate::rate_limit::Client;

/// How often the keys in memory are reloaded: revocations take effect within
/// it, with room to spare under load for the promised second.
pub const REFRESH_INTERVAL: Duration = Duration::from_millis(250);

/// A stored production key (never the key itself).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredKey {
    pub key_id: String,
    pub partner: String,
    pub scopes: Scopes,
    pub rate_limit: u32,
    pub created_at_ms: i64,
    pub revoked: bool,
    pub notification_filter: Option<NotificationFilter>,
}

/// Why a key operation failed.
#[derive(Debug, thiserror::Error)]
pub enum KeyStoreError {
    #[error("the key store is unavailable: {0}")]
    Store(#[from] StoreError),
    #[error("cannot generate a key: {0}")]
    Randomness(#[from] std::io::Error),
    #[error("the key store holds an invalid key {key_id}: {reason}")]
    Invalid { key_id: String, reason: String },
}

/// The production keys of one store, with the active ones in memory.
pub struct ProductionKeys {
    store: Arc<dyn ApiKeys>,
    /// The active keys by hash, as last loaded or looked up.
    active: RwLock<HashMap<String, Principal>>,
    /// Grows, under `active`'s write lock, each time a reload changes or
    /// removes a key: a connection's [`KeyMemo`] checked against an older
    /// generation is void.
    generation: AtomicU64,
}

impl std::fmt::Debug for ProductionKeys {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.debug_struct("ProductionKeys").finish_non_exhaustive()
    }
}

impl ProductionKeys {
    /// The keys of `store`, kept fresh by a task on the current runtime that
    /// ends when the returned value is dropped.
    pub fn start(store: Arc<dyn ApiKeys>) -> Arc<ProductionKeys> {
        let keys = Arc::new(ProductionKeys { store, active: RwLock::default(), generation: AtomicU64::new(0) });
        tokio::spawn(keep_refreshed(Arc::downgrade(&keys)));
        keys
    }

    /// Issues a key and returns it with its record. The key itself is not stored.
    pub async fn issue(
        &self,
        partner: &str,
        scopes: Scopes,
        rate_limit: u32,
    ) -> Result<(String, StoredKey), KeyStoreError> {
        self.issue_filtered(partner, scopes, rate_limit, None).await
    }

    /// [`ProductionKeys::issue`], with the notifications limited to `filter`.
    pub async fn issue_filtered(
        &self,
        partner: &str,
        scopes: Scopes,
        rate_limit: u32,
        filter: Option<&NotificationFilter>,
    ) -> Result<(String, StoredKey), KeyStoreError> {
        let key = format!("lcc_live_{}", lower_hex(&random_bytes::<24>()?));
        let key_hash = sha256_hex(&key);
        let record = ApiKeyRecord {
            key_id: format!("live_{}", &key_hash[..12]),
            key_hash,
            partner: partner.to_owned(),
            scopes: scopes.to_list(),
            rate_limit_per_minute: rate_limit,
            created_at_ms: read_model::calendar::Timestamp::now().0,
            revoked_at_ms: None,
            notification_filter: filter.map(ToString::to_string),
        };
        self.store.insert_api_key(&record).await?;
        Ok((key, stored_key(&record)?))
    }

    /// Every key record, oldest first.
    pub async fn list(&self) -> Result<Vec<StoredKey>, KeyStoreError> {
        self.store.api_keys().await?.iter().map(stored_key).collect()
    }

    /// Revokes a key by id; false when there is no such key.
    pub async fn revoke(&self, key_id: &str) -> Result<bool, KeyStoreError> {
        let revoked = self.store.revoke_api_key(key_id, read_model::calendar::Timestamp::now().0).await?;
        if revoked {
            self.refresh().await?;
        }
        Ok(revoked)
    }

    /// The principal of a presented production key, if it is known and not
    /// revoked. With the memo of the connection it came on, a key that
    /// connection presented last is not hashed and looked up again.
    pub async fn authenticate(&self, key: &str, memo: Option<&KeyMemo>) -> Result<Option<Principal>, KeyStoreError> {
        // Read before the keys: a memo is then never newer than what it was checked against.
        let generation = self.generation();
        if let Some(principal) = memo.and_then(|memo| memo.recall(key.as_bytes(), generation)) {
            return Ok(Some(principal));
        }
        let key_hash = sha256_hex(key);
        let known = self.active.read().unwrap_or_else(PoisonError::into_inner).get(&key_hash).cloned();
        let principal = match known {
            Some(principal) => principal,
            None => {
                let Some(record) = self.store.api_key_by_hash(&key_hash).await? else { return Ok(None) };
                let Some(principal) = principal_of(&stored_key(&record)?) else { return Ok(None) };
                self.active.write().unwrap_or_else(PoisonError::into_inner).insert(key_hash, principal.clone());
                principal
            }
        };
        if let Some(memo) = memo {
            memo.remember(key.as_bytes(), generation, &principal);
        }
        Ok(Some(principal))
    }

    /// The generation of the active keys, which a memo is checked against:
    /// a reload that changes or removes a key starts the next one.
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// Reloads the active keys from the store.
    pub async fn refresh(&self) -> Result<(), KeyStoreError> {
        let mut active = HashMap::new();
        for record in self.store.api_keys().await? {
            if let Some(principal) = principal_of(&stored_key(&record)?) {
                active.insert(record.key_hash, principal);
            }
        }
        let mut current = self.active.write().unwrap_or_else(PoisonError::into_inner);
        // A key added since the last reload voids no memo; one changed or gone does.
        let voids_memos = current.iter().any(|(key_hash, principal)| active.get(key_hash) != Some(principal));
        *current = active;
        if voids_memos {
            self.generation.fetch_add(1, Ordering::Release);
        }
        Ok(())
    }
}

/// How often a reload that keeps failing says so again: the first failure is
/// logged at once, and then once per this interval, not on every tick.
const FAILURE_LOG_INTERVAL: Duration = Duration::from_secs(60);

/// Reloads the keys every [`REFRESH_INTERVAL`] while they are in use. A
/// store that cannot be read keeps the keys last loaded, and says so when
/// it starts failing, once a minute while it fails, and when it recovers.
async fn keep_refreshed(keys: Weak<ProductionKeys>) {
    let mut interval = tokio::time::interval(REFRESH_INTERVAL);
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut failures = ReloadFailures::default();
    loop {
        interval.tick().await;
        let Some(keys) = keys.upgrade() else { return };
        let now = tokio::time::Instant::now();
        match keys.refresh().await {
            Ok(()) => {
                if let Some(failed_for) = failures.succeeded(now) {
                    let failed_for_ms = failed_for.as_millis() as u64;
                    tracing::info!(failed_for_ms, "the production keys reload again");
                }
            }
            Err(error) if failures.failed(now) => {
                tracing::warn!(%error, "cannot reload the production keys; keeping the ones loaded");
            }
            Err(error) => tracing::debug!(%error, "cannot reload the production keys; keeping the ones loaded"),
        }
    }
}

/// A run of failed reloads: when it began, and when it was last logged.
#[derive(Debug, Default)]
struct ReloadFailures {
    run: Option<(tokio::time::Instant, tokio::time::Instant)>,
}

impl ReloadFailures {
    /// Notes a failure at `now`; whether to log it as a warning.
    fn failed(&mut self, now: tokio::time::Instant) -> bool {
        match &mut self.run {
            Some((_, logged)) if now.duration_since(*logged) < FAILURE_LOG_INTERVAL => false,
            Some((_, logged)) => {
                *logged = now;
                true
            }
            None => {
                self.run = Some((now, now));
                true
            }
        }
    }

    /// Notes a success at `now`; how long the reloads had failed, if they had.
    fn succeeded(&mut self, now: tokio::time::Instant) -> Option<Duration> {
        self.run.take().map(|(since, _)| now.duration_since(since))
    }
}

fn stored_key(record: &ApiKeyRecord) -> Result<StoredKey, KeyStoreError> {
    let invalid = |reason: String| KeyStoreError::Invalid { key_id: record.key_id.clone(), reason };
    Ok(StoredKey {
        key_id: record.key_id.clone(),
        partner: record.partner.clone(),
        scopes: Scopes::parse_list(&record.scopes).map_err(invalid)?,
        rate_limit: record.rate_limit_per_minute,
        created_at_ms: record.created_at_ms,
        revoked: record.revoked_at_ms.is_some(),
        notification_filter: record
            .notification_filter
            .as_deref()
            .map(NotificationFilter::parse)
            .transpose()
            .map_err(invalid)?,
    })
}

fn principal_of(key: &StoredKey) -> Option<Principal> {
    (!key.revoked).then(|| Principal {
        kind: KeyKind::Production,
        key_id: key.key_id.as_str().into(),
        rate_client: Client::named(&key.key_id),
        scopes: key.scopes,
        rate_limit: key.rate_limit,
        notification_filter: key.notification_filter.clone().map(Arc::new),
    })
}

#[cfg(test)]
mod tests {
    use read_model::SqliteStore;

    use super::*;
    use crate::keys::Scope;

    #[test]
    fn a_store_that_stays_unreadable_is_reported_once_a_minute_and_its_recovery_once() {
        let start = tokio::time::Instant::now();
        let at = |milliseconds: u64| start + Duration::from_millis(milliseconds);
        let mut failures = ReloadFailures::default();
        assert_eq!(failures.succeeded(at(0)), None, "nothing to report while reloads succeed");
        assert!(failures.failed(at(250)), "the first failure is a warning");
        let quiet = (2..240).map(|tick| failures.failed(at(250 * tick))).filter(|warned| *warned).count();
        assert_eq!(quiet, 0, "not the next ticks of the same minute");
        assert!(failures.failed(at(250 + 60_000)), "a minute on, it says so again");
        assert_eq!(failures.succeeded(at(70_250)), Some(Duration::from_secs(70)), "the recovery says how long");
        assert_eq!(failures.succeeded(at(70_500)), None, "once");
        assert!(failures.failed(at(70_750)), "a new run of failures is a warning at once");
    }

    #[tokio::test]
    async fn issued_keys_authenticate_until_revoked_and_only_hashes_are_stored() {
        let directory = tempfile::tempdir().expect("tempdir");
        let store = Arc::new(SqliteStore::open(directory.path()).expect("open"));
        let keys = ProductionKeys::start(store);
        let scopes: Scopes = [Scope::RightsRead].into_iter().collect();
        let (key, record) = keys.issue("Acme Music", scopes, 120).await.expect("issue");
        assert!(key.starts_with("lcc_live_"));
        let principal = keys.authenticate(&key, None).await.expect("read").expect("known key");
        assert_eq!((principal.scopes, principal.rate_limit, principal.kind), (scopes, 120, KeyKind::Production));
        assert_eq!(keys.authenticate("lcc_live_unknown", None).await.expect("read"), None);

        let file = std::fs::read(directory.path().join("api-keys.sqlite")).expect("file");
        assert!(!file.windows(key.len()).any(|window| window == key.as_bytes()), "the key itself is never stored");

        assert!(keys.revoke(&record.key_id).await.expect("revoke"));
        assert_eq!(keys.authenticate(&key, None).await.expect("read"), None);
        assert!(!keys.revoke("live_nope").await.expect("revoke"));
        assert!(keys.list().await.expect("list")[0].revoked);
    }

    #[tokio::test]
    async fn a_key_issued_or_revoked_by_another_process_is_seen_within_the_refresh_interval() {
        let directory = tempfile::tempdir().expect("tempdir");
        let serving = ProductionKeys::start(Arc::new(SqliteStore::open(directory.path()).expect("open")));
        let operator = ProductionKeys::start(Arc::new(SqliteStore::open(directory.path()).expect("open")));
        let (key, record) = operator.issue("Acme Music", Scopes::all(), 60).await.expect("issue");
        let (other_key, _) = operator.issue("Other Music", Scopes::all(), 60).await.expect("issue");
        // The serving side answers over one connection, whose memo remembers the key.
        let memo = KeyMemo::default();
        assert!(
            serving.authenticate(&key, Some(&memo)).await.expect("read").is_some(),
            "accepted on its first request"
        );
        assert!(memo.recall(key.as_bytes(), serving.generation.load(Ordering::Acquire)).is_some(), "remembered");
        assert!(serving.authenticate(&other_key, Some(&memo)).await.expect("read").is_some(), "another key on it");
        assert!(serving.authenticate(&key, Some(&memo)).await.expect("read").is_some(), "and the first again");
        assert!(operator.revoke(&record.key_id).await.expect("revoke"));
        let deadline = tokio::time::Instant::now() + Duration::from_secs(1);
        while serving.authenticate(&key, Some(&memo)).await.expect("read").is_some() {
            assert!(tokio::time::Instant::now() < deadline, "a revoked key is refused within a second");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert!(serving.authenticate(&other_key, Some(&memo)).await.expect("read").is_some(), "the other stays valid");
    }
}
