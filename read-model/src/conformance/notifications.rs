//! The conformance case of the notification feed, on a manual clock:
//! notifications are read back in commit order per audience, a page's
//! cursor continues after it, and retention removes what is past the
//! period and refuses a cursor behind it with the feed's end to resume from.

use std::sync::Arc;
use std::time::Duration;

use super::{V1, active_v1};
use crate::change_feed::{ChangeFeedGone, FeedPosition};
use crate::clock::Clock;
use crate::identifiers::Audience;
use crate::notifications::{NotificationPage, NotificationQuery, NotificationWrite, NotificationsRead};
use crate::store::{Store, WriteBatch};

const RETENTION: Duration = Duration::from_secs(30 * 24 * 60 * 60);
/// Longer than any backend's settling time.
const SETTLED: Duration = Duration::from_secs(60);

async fn write(store: &dyn Store, notifications: &[(&str, u64)]) {
    let notifications = notifications
        .iter()
        .map(|(id, version)| NotificationWrite {
            id: (*id).to_owned(),
            version: *version,
            body: format!("{{\"id\":\"{id}\",\"version\":{version}}}").into_bytes(),
        })
        .collect();
    let batch = WriteBatch { notifications, change_feed_retention: Some(RETENTION), ..WriteBatch::default() };
    store.apply_batch(V1, Arc::new(batch)).await.expect("write");
}

async fn read(store: &dyn Store, audience: Audience, after: Option<FeedPosition>, limit: u32) -> NotificationsRead {
    let query = NotificationQuery { audience, after: after.map(|position| (V1, position)), limit };
    store.notifications(&query).await.expect("read")
}

async fn page(store: &dyn Store, audience: Audience, after: Option<FeedPosition>, limit: u32) -> NotificationPage {
    match read(store, audience, after, limit).await {
        NotificationsRead::Page(page) => page,
        gone => panic!("expected a page: {gone:?}"),
    }
}

fn bodies(page: &NotificationPage) -> Vec<String> {
    page.items.iter().map(|item| String::from_utf8_lossy(&item.body).into_owned()).collect()
}

/// Notifications in commit order, audiences apart, and retention.
pub async fn notifications_are_read_in_commit_order_until_retention_removes_them(store: &dyn Store, clock: &Clock) {
    active_v1(store).await;
    assert!(page(store, Audience::Production, None, 10).await.items.is_empty());
    write(store, &[("LCC-A", 1), ("SANDBOX-LCC-B", 1), ("LIC-C", 2)]).await;
    clock.advance(Duration::from_millis(5));
    write(store, &[("LCC-A", 3)]).await;
    clock.advance(SETTLED);

    let all = page(store, Audience::Production, None, 10).await;
    assert_eq!(
        bodies(&all),
        [r#"{"id":"LCC-A","version":1}"#, r#"{"id":"LIC-C","version":2}"#, r#"{"id":"LCC-A","version":3}"#]
    );
    assert_eq!(all.items[0].position.lcc_id, "LCC-A");
    assert!(all.items.windows(2).all(|pair| pair[0].position < pair[1].position), "in commit order");
    let sandbox = page(store, Audience::Sandbox, None, 10).await;
    assert_eq!(bodies(&sandbox), [r#"{"id":"SANDBOX-LCC-B","version":1}"#]);

    let first = page(store, Audience::Production, None, 1).await;
    assert_eq!(first.items.len(), 1);
    let rest = page(store, Audience::Production, Some(first.next.clone()), 10).await;
    assert_eq!(bodies(&rest)[..], bodies(&all)[1..], "a cursor continues after its page");
    let caught_up = page(store, Audience::Production, Some(rest.next.clone()), 10).await;
    assert!(caught_up.items.is_empty());

    clock.advance(RETENTION + Duration::from_secs(2 * 24 * 60 * 60));
    write(store, &[("LCC-D", 1)]).await;
    clock.advance(SETTLED);
    let kept = page(store, Audience::Production, None, 10).await;
    assert_eq!(bodies(&kept), [r#"{"id":"LCC-D","version":1}"#], "what is past retention is gone");
    assert!(page(store, Audience::Sandbox, None, 10).await.items.is_empty());
    match read(store, Audience::Production, Some(first.next), 10).await {
        NotificationsRead::Gone { gone: ChangeFeedGone::Purged, model_version, resume_from } => {
            assert_eq!(model_version, V1);
            let resumed = page(store, Audience::Production, Some(resume_from), 10).await;
            assert!(resumed.items.is_empty(), "the feed's end is after its newest notification: {resumed:?}");
        }
        other => panic!("a cursor behind retention is gone: {other:?}"),
    }
    let from_kept = page(store, Audience::Production, Some(kept.next), 10).await;
    assert!(from_kept.items.is_empty());
}
