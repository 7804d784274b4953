//! The store conformance suite: one set of behaviours every backend must show.
//!
//! Each case takes a fresh, migrated store with no model version. A backend's
//! test file expands [`store_conformance_tests!`](crate::store_conformance_tests)
//! with a factory that returns such a store reading a given clock (the
//! system's, or a manual one for a case that moves time on).

mod catalog;
mod change_feed;
mod feed_retention;
mod notifications;
mod webhooks;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

pub use self::catalog::{api_keys_are_issued_listed_looked_up_and_revoked, model_versions_switch_readers_atomically};
pub use self::change_feed::{bulk_rows_walk_by_key, change_feed_records_row_changes_in_commit_order};
pub use self::feed_retention::change_feed_retention_keeps_each_works_newest_change;
pub use self::notifications::notifications_are_read_in_commit_order_until_retention_removes_them;
pub use self::webhooks::webhooks_have_one_deliverer_which_alone_saves_their_state;

use crate::documents::DocumentKind;
use crate::identifiers::Audience;
use crate::read_set::{ReadInput, ReadSet};
use crate::store::{
    AggregateKey, Checkpoint, DocumentWrite, IdentifierKind, IdentifierWrite, KeyedWrite, ModelVersion,
    PartyReferenceWrite, PartyReferrer, ProvenanceRow, Store, StoreError, StoredAggregate, WriteBatch, WriteVersion,
};

/// A store under test, with whatever must live as long as it (a temporary
/// directory, say) and what must run after the case (dropping a keyspace, say).
pub struct StoreUnderTest {
    pub store: Arc<dyn Store>,
    pub guard: Box<dyn std::any::Any + Send>,
    pub cleanup: Option<Pin<Box<dyn Future<Output = ()> + Send>>>,
}

impl std::fmt::Debug for StoreUnderTest {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.debug_struct("StoreUnderTest").field("store", &self.store).finish_non_exhaustive()
    }
}

/// Settings for the CQL cluster `SCYLLA_NODES` names (`host:port`,
/// comma-separated), with a keyspace of its own named after `purpose`, the
/// process and the moment, so tests may share a cluster. Without
/// `SCYLLA_NODES` it panics: a backend that was not tested must not pass.
pub fn cluster_settings(purpose: &str) -> crate::ScyllaSettings {
    static KEYSPACES: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let nodes = std::env::var("SCYLLA_NODES")
        .ok()
        .filter(|nodes| !nodes.trim().is_empty())
        .expect("SCYLLA_NODES names the CQL cluster the tests run on (scripts/test.sh starts one)");
    let mut settings = crate::ScyllaSettings::new(nodes.split(',').map(|node| node.trim().to_owned()).collect());
    let since_epoch = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    let number = KEYSPACES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    settings.keyspace = format!("{purpose}_{}_{}_{number}", std::process::id(), since_epoch.as_millis() % 1_000_000);
    settings
}

const V1: ModelVersion = ModelVersion(1);
const V2: ModelVersion = ModelVersion(2);

async fn active_v1(store: &dyn Store) {
    store.create_model_version(V1).await.expect("create v1");
    store.activate_model_version(V1).await.expect("activate v1");
}

fn body(text: &str) -> Vec<u8> {
    text.as_bytes().to_vec()
}

fn document(kind: DocumentKind, key: &str, text: Option<&str>, version: u64) -> DocumentWrite {
    DocumentWrite { kind, key: key.into(), body: text.map(body), version: WriteVersion(version) }
}

fn keyed(key: &str, text: Option<&str>, version: u64) -> KeyedWrite {
    KeyedWrite { key: key.into(), body: text.map(body), version: WriteVersion(version) }
}

fn identifier(kind: IdentifierKind, code: &str, lcc_id: &str, present: bool) -> IdentifierWrite {
    IdentifierWrite {
        kind,
        code: code.into(),
        lcc_id: lcc_id.into(),
        present,
        version: WriteVersion(u64::from(!present) + 1),
    }
}

fn reference(party_id: &str, referrer: PartyReferrer, present: bool) -> PartyReferenceWrite {
    PartyReferenceWrite { party_id: party_id.into(), referrer, present, version: WriteVersion(u64::from(!present) + 1) }
}

/// Reads before any activation fail with `NoActiveModelVersion`, not with an I/O error.
pub async fn reads_fail_cleanly_before_any_version_is_active(store: &dyn Store) {
    let result = store.document(DocumentKind::RightsProfile, "LCC-1").await;
    assert!(matches!(result, Err(StoreError::NoActiveModelVersion)), "{result:?}");
    assert_eq!(store.active_model_version().await.expect("catalog readable"), None);
}

/// Every document kind round-trips its bytes exactly, and a deletion removes it.
pub async fn documents_round_trip_and_delete(store: &dyn Store) {
    active_v1(store).await;
    let mut batch = WriteBatch::default();
    for kind in DocumentKind::ALL {
        batch.documents.push(document(kind, "LCC-1", Some(format!("{{\"kind\":\"{kind:?}\",\"é\":1}}").as_str()), 1));
    }
    store.apply_batch(V1, Arc::new(batch)).await.expect("write");
    for kind in DocumentKind::ALL {
        let read = store.document(kind, "LCC-1").await.expect("read");
        assert_eq!(read, Some(format!("{{\"kind\":\"{kind:?}\",\"é\":1}}").into_bytes()), "{kind:?}");
        assert_eq!(store.document(kind, "LCC-2").await.expect("read"), None);
    }
    let mut batch = WriteBatch::default();
    batch.documents.push(document(DocumentKind::Metadata, "LCC-1", Some("{\"v\":2}"), 2));
    batch.documents.push(document(DocumentKind::Evidence, "LCC-1", None, 2));
    store.apply_batch(V1, Arc::new(batch)).await.expect("write");
    assert_eq!(store.document(DocumentKind::Metadata, "LCC-1").await.expect("read"), Some(body("{\"v\":2}")));
    assert_eq!(store.document(DocumentKind::Evidence, "LCC-1").await.expect("read"), None);
    assert!(store.document(DocumentKind::RightsProfile, "LCC-1").await.expect("read").is_some());

    // A withdrawal deletes every document of the work, whatever its kind.
    let mut batch = WriteBatch::default();
    batch.documents.extend(DocumentKind::ALL.into_iter().map(|kind| document(kind, "LCC-1", None, 3)));
    store.apply_batch(V1, Arc::new(batch)).await.expect("write");
    for kind in DocumentKind::ALL {
        assert_eq!(store.document(kind, "LCC-1").await.expect("read"), None, "{kind:?} is deleted");
    }
}

/// Provenance comes back in (recordedAt, topic, version) order, entries of
/// later batches among those of earlier ones, and rewriting an entry does
/// not duplicate it.
pub async fn provenance_is_ordered_and_rewrites_do_not_duplicate(store: &dyn Store) {
    active_v1(store).await;
    let row = |recorded_at: i64, topic: &str, version: u64| ProvenanceRow {
        lcc_id: "LCC-1".into(),
        recorded_at,
        topic: topic.into(),
        aggregate_version: version,
        body: format!("{recorded_at}/{topic}/{version}").into_bytes(),
    };
    let batch = WriteBatch {
        provenance: vec![row(30, "works", 2), row(10, "works", 1), row(20, "rights", 1), row(20, "disputes", 1)],
        ..WriteBatch::default()
    };
    store.apply_batch(V1, Arc::new(batch.clone())).await.expect("write");
    store.apply_batch(V1, Arc::new(batch)).await.expect("rewrite");
    let later =
        WriteBatch { provenance: vec![row(25, "rights", 2), row(5, "certificates", 1)], ..WriteBatch::default() };
    store.apply_batch(V1, Arc::new(later)).await.expect("a later batch");
    let single = WriteBatch { provenance: vec![row(20, "rights", 1)], ..WriteBatch::default() };
    store.apply_batch(V1, Arc::new(single)).await.expect("one entry again");
    let entries: Vec<String> = store
        .provenance("LCC-1")
        .await
        .expect("read")
        .into_iter()
        .map(|entry| String::from_utf8(entry).expect("utf-8"))
        .collect();
    let expected = ["5/certificates/1", "10/works/1", "20/disputes/1", "20/rights/1", "25/rights/2", "30/works/2"];
    assert_eq!(entries, expected);
    assert!(store.provenance("LCC-2").await.expect("read").is_empty());
}

/// Index entries are added, removed, and kept apart by audience.
pub async fn identifier_index_separates_audiences(store: &dyn Store) {
    active_v1(store).await;
    let mut batch = WriteBatch::default();
    for lcc_id in ["LCC-2", "LCC-1", "SANDBOX-LCC-1"] {
        batch.identifiers.push(identifier(IdentifierKind::Iswc, "T0345246801", lcc_id, true));
    }
    batch.identifiers.push(identifier(IdentifierKind::Isrc, "USS1Z9900001", "LCC-1", true));
    store.apply_batch(V1, Arc::new(batch)).await.expect("write");
    let production = store.works_by_identifier(IdentifierKind::Iswc, "T0345246801", Audience::Production).await;
    assert_eq!(production.expect("read"), ["LCC-1", "LCC-2"]);
    let sandbox = store.works_by_identifier(IdentifierKind::Iswc, "T0345246801", Audience::Sandbox).await;
    assert_eq!(sandbox.expect("read"), ["SANDBOX-LCC-1"]);
    let by_isrc = store.works_by_identifier(IdentifierKind::Isrc, "T0345246801", Audience::Production).await;
    assert!(by_isrc.expect("read").is_empty(), "kinds must not mix");

    let mut batch = WriteBatch::default();
    batch.identifiers.push(identifier(IdentifierKind::Iswc, "T0345246801", "LCC-2", false));
    store.apply_batch(V1, Arc::new(batch)).await.expect("write");
    let production = store.works_by_identifier(IdentifierKind::Iswc, "T0345246801", Audience::Production).await;
    assert_eq!(production.expect("read"), ["LCC-1"]);
}

/// Index entries that batches defer count among the party referrers at
/// once, and are all in place, each entry's last change winning, once a
/// batch that does not defer its own is written.
pub async fn deferred_index_entries_count_at_once_and_are_in_place_after_a_batch_that_does_not_defer(
    store: &dyn Store,
) {
    active_v1(store).await;
    let work = |id: &str| PartyReferrer::Work(id.into());
    let deferring = |party_references, identifiers| WriteBatch {
        party_references,
        identifiers,
        defer_index_entries: true,
        ..WriteBatch::default()
    };
    let first = deferring(
        vec![reference("PTY-1", work("LCC-1"), true), reference("PTY-1", work("LCC-2"), true)],
        vec![identifier(IdentifierKind::Iswc, "T0345246801", "LCC-1", true)],
    );
    store.apply_batch(V1, Arc::new(first)).await.expect("write");
    let second = deferring(vec![reference("PTY-1", work("LCC-2"), false)], Vec::new());
    store.apply_batch(V1, Arc::new(second)).await.expect("write");
    let expected = [("PTY-1".to_owned(), work("LCC-1"))];
    assert_eq!(store.party_referrers(V1, &["PTY-1".into()]).await.expect("read"), expected, "counted at once");

    let own = WriteBatch {
        identifiers: vec![identifier(IdentifierKind::Isrc, "USS1Z9900001", "LCC-2", true)],
        ..WriteBatch::default()
    };
    store.apply_batch(V1, Arc::new(own)).await.expect("write");
    let found = store.works_by_identifier(IdentifierKind::Iswc, "T0345246801", Audience::Production).await;
    assert_eq!(found.expect("read"), ["LCC-1"]);
    let found = store.works_by_identifier(IdentifierKind::Isrc, "USS1Z9900001", Audience::Production).await;
    assert_eq!(found.expect("read"), ["LCC-2"]);
    assert_eq!(store.party_referrers(V1, &["PTY-1".into()]).await.expect("read"), expected, "written");
}

/// Bulk pages partition the export in one stable order, with exact totals, per audience.
pub async fn bulk_pages_partition_a_stable_order(store: &dyn Store) {
    active_v1(store).await;
    let ids: Vec<String> = (0..2_500).map(|index| format!("LCC-{index:06}")).collect();
    let mut batch = WriteBatch::default();
    for id in &ids {
        batch.bulk_rows.push(keyed(id, Some(format!("{{\"lccId\":\"{id}\"}}").as_str()), 1));
    }
    batch.bulk_rows.push(keyed("SANDBOX-LCC-1", Some("{\"lccId\":\"SANDBOX-LCC-1\"}"), 1));
    store.apply_batch(V1, Arc::new(batch.clone())).await.expect("write");
    store.apply_batch(V1, Arc::new(batch)).await.expect("rewrite must not double count");
    store.settle(V1).await.expect("settle");

    let mut seen = Vec::new();
    for page in 0..26 {
        let result = store.bulk_page(Audience::Production, page * 100, 100).await.expect("page");
        assert_eq!(result.total, 2_500);
        assert_eq!(result.rows.len(), if page < 25 { 100 } else { 0 }, "page {page}");
        seen.extend(result.rows);
    }
    let mut unique = seen.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), 2_500, "pages overlap or miss rows");
    let again = store.bulk_page(Audience::Production, 1_234, 300).await.expect("page");
    assert_eq!(again.rows, seen[1_234..1_534], "the order must be stable whatever the page size");

    let sandbox = store.bulk_page(Audience::Sandbox, 0, 100).await.expect("page");
    assert_eq!((sandbox.total, sandbox.rows), (1, vec![body("{\"lccId\":\"SANDBOX-LCC-1\"}")]));

    let mut batch = WriteBatch::default();
    batch.bulk_rows.push(keyed(&ids[7], None, 2));
    batch.bulk_rows.push(keyed("LCC-never-there", None, 2));
    store.apply_batch(V1, Arc::new(batch)).await.expect("remove");
    store.settle(V1).await.expect("settle");
    let after = store.bulk_page(Audience::Production, 0, 5_000).await.expect("page");
    assert_eq!(after.total, 2_499);
    assert_eq!(after.rows.len(), 2_499);
    assert!(!after.rows.contains(&format!("{{\"lccId\":\"{}\"}}", ids[7]).into_bytes()));
}

/// Fixtures list in id order; aggregates, party references and checkpoints read back what was written.
pub async fn projector_state_round_trips(store: &dyn Store) {
    active_v1(store).await;
    let key = |topic: &str, id: &str| AggregateKey { topic: topic.into(), id: id.into() };
    let batch = WriteBatch {
        fixtures: vec![keyed("SANDBOX-LCC-2", Some("b"), 1), keyed("SANDBOX-LCC-1", Some("a"), 1)],
        aggregates: vec![(key("works", "LCC-1"), StoredAggregate { version: 3, state: body("s3") })],
        party_references: vec![
            reference("PTY-1", PartyReferrer::Work("LCC-1".into()), true),
            reference("PTY-1", PartyReferrer::License("LIC-1".into()), true),
            reference("PTY-2", PartyReferrer::Work("LCC-1".into()), true),
        ],
        checkpoints: vec![Checkpoint {
            source: "file:x".into(),
            stream: "a.avro".into(),
            partition: 0,
            next_offset: 10,
        }],
        ..WriteBatch::default()
    };
    store.apply_batch(V1, Arc::new(batch)).await.expect("write");

    assert_eq!(store.sandbox_fixtures().await.expect("read"), [body("a"), body("b")]);
    let states = store.aggregates(V1, &[key("works", "LCC-1"), key("rights", "LCC-1")]).await.expect("read");
    assert_eq!(states, [Some(StoredAggregate { version: 3, state: body("s3") }), None], "in the order asked");
    let mut referrers = store.party_referrers(V1, &["PTY-1".into()]).await.expect("read");
    referrers.sort();
    assert_eq!(
        referrers,
        [
            ("PTY-1".into(), PartyReferrer::Work("LCC-1".into())),
            ("PTY-1".into(), PartyReferrer::License("LIC-1".into()))
        ]
    );

    let batch = WriteBatch {
        fixtures: vec![keyed("SANDBOX-LCC-2", None, 2)],
        aggregates: vec![(key("works", "LCC-1"), StoredAggregate { version: 4, state: body("s4") })],
        party_references: vec![reference("PTY-1", PartyReferrer::Work("LCC-1".into()), false)],
        checkpoints: vec![Checkpoint {
            source: "file:x".into(),
            stream: "a.avro".into(),
            partition: 0,
            next_offset: 25,
        }],
        ..WriteBatch::default()
    };
    store.apply_batch(V1, Arc::new(batch)).await.expect("write");
    assert_eq!(store.sandbox_fixtures().await.expect("read"), [body("a")]);
    let states = store.aggregates(V1, &[key("rights", "LCC-1"), key("works", "LCC-1")]).await.expect("read");
    assert_eq!(states, [None, Some(StoredAggregate { version: 4, state: body("s4") })], "in the order asked");
    assert_eq!(
        store.party_referrers(V1, &["PTY-1".into()]).await.expect("read"),
        [("PTY-1".into(), PartyReferrer::License("LIC-1".into()))]
    );
    let checkpoints = store.checkpoints(V1, "file:x").await.expect("read");
    assert_eq!(
        checkpoints,
        [Checkpoint { source: "file:x".into(), stream: "a.avro".into(), partition: 0, next_offset: 25 }]
    );
    assert!(store.checkpoints(V1, "file:y").await.expect("read").is_empty());
}

/// A batch rendered from inputs that have changed since they were read is
/// either refused whole (a backend that checks before writing) or written
/// with its stale documents reported (one that checks after); a batch whose
/// inputs stand is written with nothing reported.
pub async fn batches_rendered_from_changed_inputs_are_refused_or_reported(store: &dyn Store) {
    active_v1(store).await;
    let party = AggregateKey { topic: "parties".into(), id: "PTY-1".into() };
    let work = PartyReferrer::Work("LCC-1".into());
    let state = |version| WriteBatch {
        aggregates: vec![(party.clone(), StoredAggregate { version, state: body("party") })],
        ..WriteBatch::default()
    };
    store.apply_batch(V1, Arc::new(state(4))).await.expect("write the party");
    let rendered_from_party_at = |version, text: &str| WriteBatch {
        documents: vec![document(DocumentKind::RightsProfile, "LCC-1", Some(text), version)],
        read_set: ReadSet {
            documents: vec![work.clone()],
            inputs: vec![ReadInput { key: party.clone(), version, written: None, dependents: vec![0] }],
            ..ReadSet::default()
        },
        ..WriteBatch::default()
    };
    let written = store.apply_batch(V1, Arc::new(rendered_from_party_at(4, "fresh"))).await.expect("write");
    assert!(written.stale.is_empty(), "{written:?}");

    // Another projector renames the party and renders the work from it; a
    // render from version 4 is now stale. Refused (SQLite) or written and
    // reported (ScyllaDB), it never replaces the newer render: on ScyllaDB
    // its lower write version loses, where an equal one would have let the
    // larger body win.
    let renamed =
        WriteBatch { documents: vec![document(DocumentKind::RightsProfile, "LCC-1", Some("renamed"), 5)], ..state(5) };
    store.apply_batch(V1, Arc::new(renamed)).await.expect("rename the party");
    let checkpoint = Checkpoint { source: "file:stale".into(), stream: "a.avro".into(), partition: 0, next_offset: 3 };
    let stale = WriteBatch { checkpoints: vec![checkpoint], ..rendered_from_party_at(4, "stale") };
    match store.apply_batch(V1, Arc::new(stale)).await {
        Err(StoreError::WriteConflict(_)) => {}
        Ok(written) => assert_eq!(written.stale, [work]),
        Err(error) => panic!("{error}"),
    }
    let stored = store.document(DocumentKind::RightsProfile, "LCC-1").await.expect("read");
    assert_eq!(stored, Some(body("renamed")), "a stale render replaced a newer one");
    // Refused, or left to the batch that renders the stale documents again:
    // a crash before that batch reads the events again.
    assert!(store.checkpoints(V1, "file:stale").await.expect("read").is_empty(), "checkpoints past a stale render");

    // A party change that does not render a document naming the party.
    let references = WriteBatch {
        party_references: vec![reference("PTY-2", PartyReferrer::Work("LCC-9".into()), true)],
        ..WriteBatch::default()
    };
    store.apply_batch(V1, Arc::new(references)).await.expect("write the reference");
    let renamed = WriteBatch {
        aggregates: vec![(
            AggregateKey { topic: "parties".into(), id: "PTY-2".into() },
            StoredAggregate { version: 2, state: body("renamed") },
        )],
        read_set: ReadSet { changed_parties: vec!["PTY-2".into()], ..ReadSet::default() },
        ..WriteBatch::default()
    };
    match store.apply_batch(V1, Arc::new(renamed)).await {
        Err(StoreError::WriteConflict(_)) => {
            let states = store.aggregates(V1, &[AggregateKey { topic: "parties".into(), id: "PTY-2".into() }]).await;
            assert_eq!(states.expect("read"), [None], "a refused batch writes nothing");
        }
        Ok(written) => assert_eq!(written.stale, [PartyReferrer::Work("LCC-9".into())]),
        Err(error) => panic!("{error}"),
    }
}

/// Expands to one `#[tokio::test]` per conformance case, each with a fresh store
/// from `$factory` (an async fn returning `StoreUnderTest`) and with the
/// test attributes given before it.
#[macro_export]
macro_rules! store_conformance_tests {
    ($(#[$attribute:meta])* $factory:path) => {
        $crate::store_conformance_tests!(@cases $factory; [$(#[$attribute])*];
            reads_fail_cleanly_before_any_version_is_active,
            documents_round_trip_and_delete,
            provenance_is_ordered_and_rewrites_do_not_duplicate,
            identifier_index_separates_audiences,
            deferred_index_entries_count_at_once_and_are_in_place_after_a_batch_that_does_not_defer,
            bulk_pages_partition_a_stable_order,
            projector_state_round_trips,
            batches_rendered_from_changed_inputs_are_refused_or_reported,
            model_versions_switch_readers_atomically,
            api_keys_are_issued_listed_looked_up_and_revoked,
            change_feed_records_row_changes_in_commit_order,
            bulk_rows_walk_by_key,
            webhooks_have_one_deliverer_which_alone_saves_their_state
        );
        $crate::store_conformance_tests!(@clocked_case $factory; [$(#[$attribute])*];
            change_feed_retention_keeps_each_works_newest_change);
        $crate::store_conformance_tests!(@clocked_case $factory; [$(#[$attribute])*];
            notifications_are_read_in_commit_order_until_retention_removes_them);
    };
    (@cases $factory:path; $attributes:tt; $($case:ident),*) => {
        $($crate::store_conformance_tests!(@case $factory; $attributes; $case);)*
    };
    (@case $factory:path; [$(#[$attribute:meta])*]; $case:ident) => {
        #[tokio::test]
        $(#[$attribute])*
        async fn $case() {
            let under_test = $factory($crate::clock::Clock::system()).await;
            $crate::conformance::$case(&*under_test.store).await;
            if let Some(cleanup) = under_test.cleanup {
                cleanup.await;
            }
            drop(under_test.guard);
        }
    };
    // A case that moves time on: the store reads a manual clock the case advances.
    (@clocked_case $factory:path; [$(#[$attribute:meta])*]; $case:ident) => {
        #[tokio::test]
        $(#[$attribute])*
        async fn $case() {
            let clock = $crate::clock::Clock::manual();
            let under_test = $factory(clock.clone()).await;
            $crate::conformance::$case(&*under_test.store, &clock).await;
            if let Some(cleanup) = under_test.cleanup {
                cleanup.await;
            }
            drop(under_test.guard);
        }
    };
}
