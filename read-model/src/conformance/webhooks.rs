//! Webhook subscriptions: what the operator sets, and the lease that lets
//! exactly one replica deliver each and save its state.

use crate::store::Store;
use crate::webhooks::{ATTEMPTS_KEPT, WebhookAttempt, WebhookRecord, WebhookSubscription};

fn subscription(id: &str, created_at_ms: i64) -> WebhookSubscription {
    WebhookSubscription {
        id: id.into(),
        key_id: "live_partner".into(),
        endpoint: format!("https://hooks.example.org/{id}"),
        created_at_ms,
        enabled: true,
        resumed_at_ms: created_at_ms,
    }
}

pub async fn webhooks_have_one_deliverer_which_alone_saves_their_state(store: &dyn Store) {
    assert_eq!(store.webhooks().await.expect("list"), [], "a fresh store has no webhooks");
    let first = subscription("wh_first", 2_000);
    let second = subscription("wh_second", 1_000);
    store.insert_webhook(&first).await.expect("insert");
    store.insert_webhook(&second).await.expect("insert");
    assert!(store.insert_webhook(&first).await.is_err(), "an id is stored once");
    let record = |subscription: &WebhookSubscription, state: &str| WebhookRecord {
        subscription: subscription.clone(),
        state: state.into(),
    };
    assert_eq!(store.webhooks().await.expect("list"), [record(&second, ""), record(&first, "")], "oldest first");

    // One of two replicas takes a free lease; the other cannot until it expires.
    assert!(store.claim_webhook("wh_first", "replica-a", 10_000, 40_000).await.expect("claim"));
    assert!(!store.claim_webhook("wh_first", "replica-b", 10_001, 40_001).await.expect("claim"), "held");
    assert!(store.claim_webhook("wh_first", "replica-a", 20_000, 50_000).await.expect("renew"), "renewed");
    assert!(!store.claim_webhook("wh_first", "replica-b", 45_000, 75_000).await.expect("claim"), "renewed to 50 s");
    assert!(store.save_webhook_state("wh_first", "replica-a", "{\"cursor\":1}").await.expect("save"));
    assert!(!store.save_webhook_state("wh_first", "replica-b", "{\"cursor\":9}").await.expect("save"), "not its lease");
    assert_eq!(store.webhook("wh_first").await.expect("read"), Some(record(&first, "{\"cursor\":1}")));

    // An expired lease passes to the other replica, which alone saves from then on.
    assert!(store.claim_webhook("wh_first", "replica-b", 50_001, 80_000).await.expect("take over"));
    assert!(!store.save_webhook_state("wh_first", "replica-a", "{\"cursor\":2}").await.expect("save"), "lost it");
    assert!(store.save_webhook_state("wh_first", "replica-b", "{\"cursor\":3}").await.expect("save"));
    // A released lease is free at once.
    store.release_webhook("wh_first", "replica-a").await.expect("a release by a non-holder changes nothing");
    assert!(!store.claim_webhook("wh_first", "replica-a", 60_000, 90_000).await.expect("claim"), "still b's");
    store.release_webhook("wh_first", "replica-b").await.expect("release");
    assert!(store.claim_webhook("wh_first", "replica-a", 60_000, 90_000).await.expect("claim"), "released");
    assert_eq!(
        store.webhook("wh_first").await.expect("read").map(|record| record.state),
        Some("{\"cursor\":3}".into())
    );

    // The operator pauses and resumes; the delivery state stays.
    assert!(store.set_webhook_enabled("wh_first", false, 2_000).await.expect("pause"));
    assert!(store.set_webhook_enabled("wh_first", true, 70_000).await.expect("resume"));
    assert!(!store.set_webhook_enabled("wh_none", true, 70_000).await.expect("no such webhook"));
    let resumed = WebhookSubscription { resumed_at_ms: 70_000, ..first.clone() };
    assert_eq!(store.webhook("wh_first").await.expect("read"), Some(record(&resumed, "{\"cursor\":3}")));

    // Attempts: newest first, the newest few kept.
    for at_ms in 0..i64::from(ATTEMPTS_KEPT) + 5 {
        let attempt = WebhookAttempt { at_ms: 100_000 + at_ms, record: format!("{{\"attempt\":{at_ms}}}") };
        store.record_webhook_attempt("wh_first", &attempt).await.expect("record");
    }
    let attempts = store.webhook_attempts("wh_first", 3).await.expect("attempts");
    let times: Vec<i64> = attempts.iter().map(|attempt| attempt.at_ms).collect();
    let newest = 100_000 + i64::from(ATTEMPTS_KEPT) + 4;
    assert_eq!(times, [newest, newest - 1, newest - 2]);
    assert_eq!(attempts[0].record, format!("{{\"attempt\":{}}}", ATTEMPTS_KEPT + 4));
    let kept = store.webhook_attempts("wh_first", 100).await.expect("attempts").len();
    assert!(kept >= ATTEMPTS_KEPT as usize, "{kept} attempts kept");
    assert_eq!(store.webhook_attempts("wh_second", 10).await.expect("attempts"), []);

    // Removal takes the subscription, its state and its attempts.
    assert!(store.remove_webhook("wh_first").await.expect("remove"));
    assert!(!store.remove_webhook("wh_first").await.expect("remove again"));
    assert_eq!(store.webhooks().await.expect("list"), [record(&second, "")]);
    assert_eq!(store.webhook("wh_first").await.expect("read"), None);
    assert_eq!(store.webhook_attempts("wh_first", 10).await.expect("attempts"), []);
}
