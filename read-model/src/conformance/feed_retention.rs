//! The conformance case of the change feed's retention, on a manual clock:
//! what a batch supersedes and what a sweep finds past the period goes,
//! each published work's newest change stays, a day left empty leaves the
//! feed, and a cursor behind what went is refused.

use std::sync::Arc;
use std::time::Duration;

use super::{V1, active_v1, keyed};
use crate::change_feed::{ChangeFeedGone, ChangeQuery, ChangesRead, FeedPosition};
use crate::clock::Clock;
use crate::identifiers::Audience;
use crate::store::{Store, WriteBatch};

const RETENTION: Duration = Duration::from_secs(30 * 24 * 60 * 60);
const DAY: Duration = Duration::from_secs(24 * 60 * 60);

async fn write(store: &dyn Store, rows: &[(&str, Option<&str>)]) {
    let bulk_rows = rows.iter().map(|(key, body)| keyed(key, *body, 1)).collect();
    let batch = WriteBatch { bulk_rows, change_feed_retention: Some(RETENTION), ..WriteBatch::default() };
    store.apply_batch(V1, Arc::new(batch)).await.expect("write");
}

async fn read(store: &dyn Store, after: Option<FeedPosition>, latest_only: bool) -> ChangesRead {
    let after = after.map(|position| (V1, position));
    let query = ChangeQuery { audience: Audience::Production, after, until_sequence: None, limit: 100, latest_only };
    store.changes(&query).await.expect("read")
}

fn page(read: ChangesRead) -> crate::change_feed::ChangePage {
    match read {
        ChangesRead::Page(page) => page,
        ChangesRead::Gone(gone) => panic!("expected a page, the feed is gone: {gone:?}"),
    }
}

/// The works and bodies of a page, in order.
async fn described(store: &dyn Store, after: Option<FeedPosition>, latest_only: bool) -> Vec<(String, Option<String>)> {
    let items = page(read(store, after, latest_only).await).items;
    items
        .iter()
        .map(|item| {
            let body = item.body.as_ref().map(|body| String::from_utf8_lossy(body).into_owned());
            (item.lcc_id().to_owned(), body)
        })
        .collect()
}

fn entry(lcc_id: &str, body: Option<&str>) -> (String, Option<String>) {
    (lcc_id.to_owned(), body.map(str::to_owned))
}

/// Retention removes superseded changes and withdrawals once past the
/// period and keeps each published work's newest change.
pub async fn change_feed_retention_keeps_each_works_newest_change(store: &dyn Store, clock: &Clock) {
    active_v1(store).await;
    let start = page(read(store, None, false).await).next;
    write(store, &[("LCC-A", Some("a1")), ("LCC-B", Some("b1"))]).await;
    let after_a1 = page(read(store, None, false).await).items[0].position.clone();

    clock.advance(RETENTION + DAY);
    write(store, &[("LCC-A", Some("a2")), ("LCC-C", Some("c1"))]).await;
    let everything = [entry("LCC-B", Some("b1")), entry("LCC-A", Some("a2")), entry("LCC-C", Some("c1"))];
    assert_eq!(described(store, None, false).await, everything, "a1 is superseded and past retention");
    assert_eq!(described(store, None, true).await, everything, "b1 is B's newest change and stays");
    assert_eq!(read(store, Some(start), false).await, ChangesRead::Gone(ChangeFeedGone::Purged), "a1 went after it");
    assert_eq!(described(store, Some(after_a1), false).await.len(), 3, "nothing after a1 went");

    // The withdrawal, alone on a day of its own.
    clock.advance(DAY);
    write(store, &[("LCC-B", None)]).await;
    let before_sweep = page(read(store, None, false).await);
    let before_withdrawal = before_sweep.items[before_sweep.items.len() - 2].position.clone();
    let withdrawal = before_sweep.items[before_sweep.items.len() - 1].position.clone();
    assert_eq!(
        described(store, None, true).await,
        [entry("LCC-A", Some("a2")), entry("LCC-C", Some("c1")), entry("LCC-B", None)],
        "the withdrawal supersedes b1, which is past retention"
    );

    clock.advance(RETENTION + DAY);
    write(store, &[("LCC-D", Some("d1"))]).await;
    assert_eq!(
        described(store, None, true).await,
        [entry("LCC-A", Some("a2")), entry("LCC-C", Some("c1")), entry("LCC-D", Some("d1"))],
        "the withdrawal itself goes once past retention; the newest changes of published works stay"
    );
    assert_eq!(described(store, None, false).await, [entry("LCC-D", Some("d1"))]);
    assert_eq!(
        read(store, Some(before_withdrawal), false).await,
        ChangesRead::Gone(ChangeFeedGone::Purged),
        "a client that had not seen the withdrawal must start again"
    );
    assert_eq!(described(store, Some(before_sweep.next.clone()), false).await, [entry("LCC-D", Some("d1"))]);
    let bounds = store.change_feed_bounds(Audience::Production).await.expect("bounds");
    assert_eq!(bounds.newest.as_ref().map(|position| position.lcc_id.as_str()), Some("LCC-D"));
    assert_eq!(bounds.horizon, withdrawal.sequence, "the withdrawal was the newest change removed");
}
