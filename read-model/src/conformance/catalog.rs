//! The conformance cases of the catalog: model versions and production keys.

use std::sync::Arc;

use super::{V1, V2, active_v1, body, document};
use crate::api_keys::ApiKeyRecord;
use crate::documents::DocumentKind;
use crate::store::{ModelVersion, Store, StoreError, WriteBatch};

/// Versions are independent; activation switches readers; the active one cannot be dropped.
pub async fn model_versions_switch_readers_atomically(store: &dyn Store) {
    active_v1(store).await;
    store.create_model_version(V2).await.expect("create v2");
    store.create_model_version(V2).await.expect("creating twice is idempotent");
    let write = |text: &str| {
        let mut batch = WriteBatch::default();
        batch.documents.push(document(DocumentKind::RightsProfile, "LCC-1", Some(text), 1));
        batch
    };
    store.apply_batch(V1, Arc::new(write("v1"))).await.expect("write v1");
    store.apply_batch(V2, Arc::new(write("v2"))).await.expect("write v2");
    assert_eq!(store.document(DocumentKind::RightsProfile, "LCC-1").await.expect("read"), Some(body("v1")));
    store.activate_model_version(V2).await.expect("activate v2");
    assert_eq!(store.document(DocumentKind::RightsProfile, "LCC-1").await.expect("read"), Some(body("v2")));
    let versions = store.model_versions().await.expect("list");
    assert_eq!(versions.iter().map(|info| (info.version, info.active)).collect::<Vec<_>>(), [(V1, false), (V2, true)]);

    let refused = store.drop_model_version(V2).await;
    assert!(matches!(refused, Err(StoreError::ActiveModelVersion(V2))), "{refused:?}");
    store.drop_model_version(V1).await.expect("drop v1");
    assert_eq!(store.model_versions().await.expect("list").len(), 1);
    let unknown = store.apply_batch(V1, Arc::new(write("gone"))).await;
    assert!(matches!(unknown, Err(StoreError::UnknownModelVersion(V1))), "{unknown:?}");
    let unknown = store.activate_model_version(ModelVersion(9)).await;
    assert!(matches!(unknown, Err(StoreError::UnknownModelVersion(_))), "{unknown:?}");
    store.migrate().await.expect("migrating again is idempotent");
    assert_eq!(store.document(DocumentKind::RightsProfile, "LCC-1").await.expect("read"), Some(body("v2")));
    store.ping().await.expect("ping");
}

/// Production keys are issued (one with a notification filter), listed,
/// looked up by hash and revoked; a revocation keeps its first time, and
/// keys belong to no model version.
pub async fn api_keys_are_issued_listed_looked_up_and_revoked(store: &dyn Store) {
    assert_eq!(store.api_keys().await.expect("list"), [], "a fresh store has no keys");
    let key = |hash: &str, id: &str, created_at_ms| ApiKeyRecord {
        key_hash: hash.repeat(64 / hash.len()),
        key_id: id.to_owned(),
        partner: "Acme Music".to_owned(),
        scopes: "rights:read,bulk:read".to_owned(),
        rate_limit_per_minute: 600,
        created_at_ms,
        revoked_at_ms: None,
        notification_filter: None,
    };
    let first = key("ab", "live_first", 2_000);
    let second =
        ApiKeyRecord { notification_filter: Some("parties:00014107338".into()), ..key("cd", "live_second", 1_000) };
    store.insert_api_key(&first).await.expect("insert");
    store.insert_api_key(&second).await.expect("insert");
    assert_eq!(store.api_keys().await.expect("list"), [second.clone(), first.clone()], "oldest first");
    assert_eq!(store.api_key_by_hash(&first.key_hash).await.expect("lookup"), Some(first.clone()));
    assert_eq!(store.api_key_by_hash(&"ef".repeat(32)).await.expect("lookup"), None);

    assert!(store.revoke_api_key("live_first", 3_000).await.expect("revoke"));
    assert!(store.revoke_api_key("live_first", 4_000).await.expect("revoke again"));
    assert!(!store.revoke_api_key("live_unknown", 3_000).await.expect("revoke unknown"));
    let revoked = store.api_key_by_hash(&first.key_hash).await.expect("lookup").expect("still stored");
    assert_eq!(revoked.revoked_at_ms, Some(3_000), "the first revocation time is kept");
    assert_eq!(store.api_key_by_hash(&second.key_hash).await.expect("lookup"), Some(second.clone()));

    active_v1(store).await;
    store.create_model_version(V2).await.expect("create v2");
    store.activate_model_version(V2).await.expect("activate v2");
    store.drop_model_version(V1).await.expect("drop v1");
    assert_eq!(store.api_keys().await.expect("list").len(), 2, "a rebuild keeps the keys");
}
