//! The conformance cases of the change feed and of the keyed walk over bulk
//! rows that snapshots make.

use std::sync::Arc;

use super::{V1, V2, active_v1, body, keyed};
use crate::change_feed::{ChangeFeedGone, ChangeItem, ChangeKind, ChangeQuery, ChangesRead};
use crate::identifiers::Audience;
use crate::store::{BulkKey, Store, WriteBatch};

/// Every page of the feed of `audience` from the start, following `next`.
async fn whole_feed(store: &dyn Store, audience: Audience, latest_only: bool) -> Vec<ChangeItem> {
    let mut items = Vec::new();
    let mut after = None;
    loop {
        let query = ChangeQuery { audience, after: after.clone(), until_sequence: None, limit: 2, latest_only };
        let ChangesRead::Page(page) = store.changes(&query).await.expect("feed") else { panic!("gone from the start") };
        if page.items.is_empty() {
            return items;
        }
        items.extend(page.items);
        after = Some((page.model_version, page.next));
    }
}

fn kinds_of(items: &[ChangeItem]) -> Vec<(String, ChangeKind, Option<String>)> {
    items
        .iter()
        .map(|item| {
            let body = item.body.as_ref().map(|body| String::from_utf8_lossy(body).into_owned());
            (item.lcc_id().to_owned(), item.kind, body)
        })
        .collect()
}

/// The change feed records bulk-row changes in commit order with growing
/// versions, withdrawals as items of their own, per audience, and refuses
/// a cursor of another model version; the keyed walk over bulk rows sees
/// every row once.
pub async fn change_feed_records_row_changes_in_commit_order(store: &dyn Store) {
    active_v1(store).await;
    let empty = ChangeQuery {
        audience: Audience::Production,
        after: None,
        until_sequence: None,
        limit: 10,
        latest_only: false,
    };
    let ChangesRead::Page(start) = store.changes(&empty).await.expect("feed") else { panic!("gone") };
    assert!(start.items.is_empty());
    let mut first = WriteBatch::default();
    first.bulk_rows.push(keyed("LCC-A", Some("a1"), 1 << 32));
    first.bulk_rows.push(keyed("LCC-B", Some("b1"), 1 << 32));
    first.bulk_rows.push(keyed("SANDBOX-LCC-S", Some("s1"), 1 << 32));
    store.apply_batch(V1, Arc::new(first)).await.expect("write");
    let mut second = WriteBatch::default();
    second.bulk_rows.push(keyed("LCC-A", Some("a2"), 2 << 32));
    second.bulk_rows.push(keyed("LCC-B", None, 2 << 32));
    second.bulk_rows.push(keyed("LCC-C", Some("c1"), 1 << 32));
    store.apply_batch(V1, Arc::new(second)).await.expect("write");

    let production = whole_feed(store, Audience::Production, false).await;
    let text = |text: &str| Some(text.to_owned());
    assert_eq!(
        kinds_of(&production),
        [
            ("LCC-A".into(), ChangeKind::Upsert, text("a1")),
            ("LCC-B".into(), ChangeKind::Upsert, text("b1")),
            ("LCC-A".into(), ChangeKind::Upsert, text("a2")),
            ("LCC-B".into(), ChangeKind::Withdrawn, None),
            ("LCC-C".into(), ChangeKind::Upsert, text("c1")),
        ]
    );
    assert!(production.windows(2).all(|pair| pair[0].position < pair[1].position), "commit order");
    assert!(production[2].version > production[0].version && production[3].version > production[1].version);
    let sandbox = whole_feed(store, Audience::Sandbox, false).await;
    assert_eq!(kinds_of(&sandbox), [("SANDBOX-LCC-S".into(), ChangeKind::Upsert, text("s1"))]);
    let latest = whole_feed(store, Audience::Production, true).await;
    assert_eq!(
        kinds_of(&latest),
        [
            ("LCC-A".into(), ChangeKind::Upsert, text("a2")),
            ("LCC-B".into(), ChangeKind::Withdrawn, None),
            ("LCC-C".into(), ChangeKind::Upsert, text("c1")),
        ]
    );
    let (version, newest_of_a) = store.latest_change(Audience::Production, "LCC-A").await.expect("read").expect("A");
    assert_eq!((version, newest_of_a.body), (V1, Some(body("a2"))));
    assert_eq!(store.latest_change(Audience::Sandbox, "LCC-A").await.expect("read"), None, "another audience");
    let bounds = store.change_feed_bounds(Audience::Production).await.expect("bounds");
    assert_eq!(bounds.oldest.as_ref(), Some(&production[0].position));
    assert_eq!(bounds.newest.as_ref(), Some(&production[4].position));

    let after_second = Some((V1, production[1].position.clone()));
    let from_cursor = ChangeQuery { after: after_second, limit: 2, ..empty.clone() };
    let ChangesRead::Page(page) = store.changes(&from_cursor).await.expect("feed") else { panic!("gone") };
    assert_eq!(kinds_of(&page.items), kinds_of(&production[2..4]));
    assert_eq!(page.next, production[3].position);
    let until = ChangeQuery { until_sequence: Some(production[1].position.sequence), ..empty.clone() };
    let ChangesRead::Page(page) = store.changes(&until).await.expect("feed") else { panic!("gone") };
    assert!(page.items.iter().all(|item| item.position.sequence <= production[1].position.sequence));

    store.create_model_version(V2).await.expect("create v2");
    store.activate_model_version(V2).await.expect("activate v2");
    let old_cursor = ChangeQuery { after: Some((V1, production[4].position.clone())), ..empty };
    assert_eq!(
        store.changes(&old_cursor).await.expect("read"),
        ChangesRead::Gone(ChangeFeedGone::OtherModelVersion { active: V2 })
    );
}

/// A walk over the bulk rows by key sees every row once, in export order.
pub async fn bulk_rows_walk_by_key(store: &dyn Store) {
    active_v1(store).await;
    let ids: Vec<String> = (0..50).map(|index| format!("LCC-{index:04}")).collect();
    let mut batch = WriteBatch::default();
    for id in &ids {
        batch.bulk_rows.push(keyed(id, Some(id), 1));
    }
    batch.bulk_rows.push(keyed("SANDBOX-LCC-1", Some("sandbox"), 1));
    store.apply_batch(V1, Arc::new(batch)).await.expect("write");
    store.settle(V1).await.expect("settle");
    let mut walked = Vec::new();
    let mut after: Option<BulkKey> = None;
    loop {
        let rows = store.bulk_rows_after(Audience::Production, after.as_ref(), 7).await.expect("walk");
        let Some((last, _)) = rows.last() else { break };
        after = Some(last.clone());
        walked.extend(rows);
    }
    assert!(walked.windows(2).all(|pair| pair[0].0 < pair[1].0), "export order");
    let mut seen: Vec<String> = walked.iter().map(|(key, _)| key.lcc_id.clone()).collect();
    seen.sort();
    assert_eq!(seen, ids);
    assert!(walked.iter().all(|(key, body)| *body == key.lcc_id.as_bytes()));
    let exported = store.bulk_page(Audience::Production, 0, 100).await.expect("page").rows;
    assert_eq!(walked.into_iter().map(|(_, body)| body).collect::<Vec<_>>(), exported, "the export's order");
}
