//! Webhook deliveries from the real deliverer over a real store to a
//! receiver on a local port, with the calendar driven by the test: the
//! retry schedule is walked by moving the clock, never by sleeping.
//!
//! The receiver here checks every delivery's `v1a` signature with the keys
//! served at `/keys` (with ed25519-dalek); `tests/webhooks/receiver.py`, an
//! independent receiver, does the same end to end.

mod support;

use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use ed25519_dalek::{Signature, Verifier, VerifyingKey};
use query_api::keys::Scope;
use query_api::webhooks::addresses::{PinnedNames, Resolution};
use query_api::webhooks::deliverer::run;
use query_api::webhooks::schedule::RETRY_DELAYS;
use query_api::webhooks::sending::SenderSettings;
use query_api::webhooks::settings::DeliverySettings;
use read_model::clock::Clock;
use read_model::webhooks::WebhookSubscription;
use read_model::{Webhooks, base64url};
use serde_json::Value;
use support::Service;

/// What the receiver answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Up,
    /// Answers with this status and stores nothing.
    Down(u16),
}

#[derive(Debug, Clone)]
struct Received {
    id: String,
    timestamp: i64,
    body: Value,
    /// Whether the receiver stored it (answered 2xx).
    stored: bool,
}

#[derive(Debug, Clone)]
struct Receiver {
    mode: Arc<Mutex<Mode>>,
    received: Arc<Mutex<Vec<Received>>>,
    keys: Arc<Vec<VerifyingKey>>,
}

impl Receiver {
    fn set(&self, mode: Mode) {
        *self.mode.lock().unwrap_or_else(PoisonError::into_inner) = mode;
    }

    fn received(&self) -> Vec<Received> {
        self.received.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Waits until `condition` holds of what was received.
    async fn wait_for(&self, what: &str, condition: impl Fn(&[Received]) -> bool) -> Vec<Received> {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let received = self.received();
            if condition(&received) {
                return received;
            }
            assert!(
                Instant::now() < deadline,
                "timed out waiting for {what}; received {:#?}",
                received
                    .iter()
                    .map(|message| (
                        message.stored,
                        message.body["type"].clone(),
                        message.body["gap"].clone(),
                        message.body["notifications"].as_array().map(Vec::len)
                    ))
                    .collect::<Vec<_>>()
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

async fn receive(State(receiver): State<Receiver>, headers: HeaderMap, body: Bytes) -> Response {
    let header = |name: &str| headers.get(name).and_then(|value| value.to_str().ok()).unwrap_or_default().to_owned();
    let (id, timestamp, signature) = (header("webhook-id"), header("webhook-timestamp"), header("webhook-signature"));
    let signed = format!("{id}.{timestamp}.{}", String::from_utf8_lossy(&body));
    let encoded = signature.strip_prefix("v1a,").expect("a v1a signature");
    let bytes = base64url::decode(&encoded.trim_end_matches('=').replace('+', "-").replace('/', "_")).expect("base64");
    let signature = Signature::from_slice(&bytes).expect("64 bytes");
    assert!(
        receiver.keys.iter().any(|key| key.verify(signed.as_bytes(), &signature).is_ok()),
        "the signature of {id} verifies with a key of /keys"
    );
    let body: Value = serde_json::from_slice(&body).expect("JSON");
    let mode = *receiver.mode.lock().unwrap_or_else(PoisonError::into_inner);
    let stored = mode == Mode::Up;
    receiver.received.lock().unwrap_or_else(PoisonError::into_inner).push(Received {
        id,
        timestamp: timestamp.parse().expect("seconds"),
        body: body.clone(),
        stored,
    });
    match mode {
        Mode::Down(status) => StatusCode::from_u16(status).expect("status").into_response(),
        Mode::Up if body["type"] == "webhook.challenge" => {
            axum::Json(serde_json::json!({"challenge": body["challenge"]})).into_response()
        }
        Mode::Up => StatusCode::NO_CONTENT.into_response(),
    }
}

/// A receiver on a local port, answering as `mode` says.
async fn start_receiver(service: &Service, mode: Mode) -> (Receiver, String) {
    let (_, key_set, _) = service.get("/keys", None).await;
    let keys = key_set["keys"]
        .as_array()
        .expect("keys")
        .iter()
        .map(|key| {
            let key: query_api::signing::key_set::PublicKey = serde_json::from_value(key.clone()).expect("a JWK");
            key.verifying_key().expect("Ed25519")
        })
        .collect();
    let receiver = Receiver { mode: Arc::new(Mutex::new(mode)), received: Arc::default(), keys: Arc::new(keys) };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("listen");
    let address = listener.local_addr().expect("address");
    let router = axum::Router::new().route("/hooks", axum::routing::post(receive)).with_state(receiver.clone());
    tokio::spawn(async move { axum::serve(listener, router).await });
    (receiver, format!("http://{address}/hooks"))
}

fn settings() -> DeliverySettings {
    DeliverySettings {
        poll: Duration::from_millis(20),
        lease: Duration::from_secs(30),
        batch: 40,
        sender: SenderSettings {
            timeout: Duration::from_secs(5),
            resolution: Resolution { pinned: PinnedNames::default(), refuse_private: false },
            https_only: false,
            roots: None,
        },
    }
}

/// Subscribes a new production key, as if added just before the oldest
/// notification was recorded, and returns the subscription's id and the key.
async fn subscribe(service: &Service, id: &str, endpoint: &str) -> (String, String) {
    let key = service.issue_key(&[Scope::NotificationsRead], 100_000).await;
    let key_id = service.app.production_keys.list().await.expect("keys").last().expect("a key").key_id.clone();
    let oldest = service.every_notification(&key, 1000).await[0]["recordedAt"].as_str().expect("recordedAt").to_owned();
    let created_at_ms = read_model::calendar::Timestamp::parse(&oldest).expect("an instant").0;
    let subscription = WebhookSubscription {
        id: id.into(),
        key_id,
        endpoint: endpoint.into(),
        created_at_ms,
        enabled: true,
        resumed_at_ms: created_at_ms,
    };
    service.store.insert_webhook(&subscription).await.expect("subscribe");
    (id.to_owned(), key)
}

/// Waits until the subscription's saved state counts `failures` failed attempts.
async fn failures_saved(service: &Service, id: &str, failures: usize) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let record = service.store.webhook(id).await.expect("read").expect("the subscription");
        let state = query_api::webhooks::state::DeliveryState::parse(id, &record.state);
        if state.failures as usize == failures {
            return;
        }
        assert!(Instant::now() < deadline, "failure {failures} not saved: {}", record.state);
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// What the receiver stored, in order, each message once: checks that each
/// stored message continues from the one before, and that a message posted
/// again carries the id and body it had.
fn stored_in_order(received: &[Received], subscription: &str) -> Vec<Value> {
    let mut seen: HashSet<String> = HashSet::new();
    let mut previous: Option<String> = None;
    let mut notifications = Vec::new();
    let mut bodies: std::collections::HashMap<String, Value> = std::collections::HashMap::new();
    for message in received.iter().filter(|message| message.body["type"] == "notifications") {
        assert_eq!(message.body["subscription"], subscription);
        if let Some(earlier) = bodies.insert(message.id.clone(), message.body.clone()) {
            assert_eq!(earlier, message.body, "a message posted again is the same message");
        }
        if !message.stored || !seen.insert(message.id.clone()) {
            continue;
        }
        let from = message.body["previous"].as_str().map(str::to_owned);
        if previous.is_some() {
            assert_eq!(from, previous, "each message continues from the one before");
        }
        previous = message.body["next"].as_str().map(str::to_owned);
        notifications.extend(message.body["notifications"].as_array().expect("notifications").iter().cloned());
    }
    notifications
}

#[tokio::test]
async fn a_receiver_down_for_a_day_gets_every_notification_in_order_once_back() {
    let service = Service::start().await;
    let clock = Clock::manual();
    let app = service.with_clock(clock.clone());
    let (receiver, endpoint) = start_receiver(&service, Mode::Down(503)).await;
    let (subscription, key) = subscribe(&service, "wh_down_a_day", &endpoint).await;
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let deliverer = tokio::spawn(run(Arc::clone(&app), settings(), async move {
        let _ = stopped.await;
    }));

    // The challenge fails on the schedule while the receiver is down: the
    // first attempt at once, then after 5 s, 5 min, 30 min, 2 h, 5 h, 10 h.
    let down_for = Duration::from_secs(86_400);
    let mut elapsed = Duration::ZERO;
    let mut attempts = 0;
    for delay in RETRY_DELAYS {
        attempts += 1;
        receiver.wait_for(&format!("attempt {attempts}"), |received| received.len() == attempts).await;
        // The receiver has the request before the deliverer has its answer:
        // the clock moves on only once the failure is saved with its next time.
        failures_saved(&service, &subscription, attempts).await;
        if elapsed + delay > down_for {
            // The receiver comes back within this wait.
            clock.advance(down_for - elapsed);
            receiver.set(Mode::Up);
            clock.advance(elapsed + delay - down_for);
            break;
        }
        clock.advance(delay - Duration::from_millis(1));
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert_eq!(receiver.received().len(), attempts, "no attempt before its time");
        clock.advance(Duration::from_millis(1));
        elapsed += delay;
    }
    assert_eq!(attempts, 7, "seven attempts in the day the receiver was down");

    let expected = service.every_notification(&key, 1000).await;
    assert!(expected.len() > 300, "the feed holds {} notifications", expected.len());
    let received = receiver
        .wait_for("every notification", |received| stored_in_order(received, &subscription).len() >= expected.len())
        .await;
    let delivered = stored_in_order(&received, &subscription);
    assert_eq!(delivered, expected, "every notification, in order, as the pull feed serves it");
    let challenge = &received[0];
    assert_eq!(challenge.body["type"], "webhook.challenge");
    assert!(
        received[..7].iter().all(|message| message.id == challenge.id || message.body["type"] == "webhook.challenge")
    );
    let messages = received.iter().filter(|message| message.body["type"] == "notifications").count();
    assert_eq!(messages, expected.len().div_ceil(40), "one attempt per message of up to 40, none repeated");
    let now = clock.unix_ms() / 1_000;
    assert!(received.iter().all(|message| message.timestamp <= now), "stamped with the deliverer's clock");

    // Once stopped, the deliverer has recorded and saved the last acknowledgement.
    let _ = stop.send(());
    deliverer.await.expect("the deliverer stops");
    let metrics = app.metrics.render();
    assert!(metrics.contains("lcc_webhook_attempts_total{kind=\"challenge\",outcome=\"failed\"} 7"), "{metrics}");
    let delivered_total = format!("lcc_webhook_notifications_delivered_total {}", expected.len());
    assert!(metrics.contains(&delivered_total), "{metrics}");

    // What the partner reads of it.
    let (status, listed, _) = service.get("/webhooks", Some(&key)).await;
    assert_eq!(status, StatusCode::OK, "{listed}");
    let view = &listed["webhooks"][0];
    assert_eq!(view["id"], subscription.as_str());
    assert_eq!(view["status"], "active");
    assert_eq!(view["delivered"], expected.len());
    assert_eq!(view["cursor"], expected.last().expect("one")["cursor"]);
    assert_eq!(view["attempts"][0]["status"], 204);
    assert!(view["attempts"].as_array().expect("attempts").len() <= 10);
    let (_, others, _) = service.get("/webhooks", Some(&service.full_key)).await;
    assert_eq!(others["webhooks"], serde_json::json!([]), "another key sees none of it");
}

#[tokio::test]
async fn a_410_pauses_until_the_operator_resumes_and_nothing_is_lost() {
    let service = Service::start().await;
    let clock = Clock::manual();
    let app = service.with_clock(clock.clone());
    let (receiver, endpoint) = start_receiver(&service, Mode::Up).await;
    let (subscription, key) = subscribe(&service, "wh_gone", &endpoint).await;
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let deliverer = tokio::spawn(run(Arc::clone(&app), settings(), async move {
        let _ = stopped.await;
    }));
    receiver.wait_for("two messages stored", |received| stored_in_order(received, &subscription).len() >= 80).await;
    receiver.set(Mode::Down(410));
    let gone = receiver.wait_for("a 410", |received| received.iter().any(|message| !message.stored)).await.len();
    let deadline = Instant::now() + Duration::from_secs(30);
    let listed = loop {
        let (_, listed, _) = service.get("/webhooks", Some(&key)).await;
        if listed["webhooks"][0]["status"] == "paused" {
            break listed;
        }
        assert!(Instant::now() < deadline, "not paused: {listed}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    assert_eq!(listed["webhooks"][0]["pausedReason"], "the endpoint answered 410 Gone");
    // A day later still nothing: the deliverer looks every 20 ms, so ten
    // looks pass in this wait, and none may post.
    clock.advance(Duration::from_secs(86_400));
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(receiver.received().len(), gone, "a paused subscription is not retried");

    receiver.set(Mode::Up);
    assert!(service.store.set_webhook_enabled(&subscription, true, clock.unix_ms()).await.expect("resume"));
    let expected = service.every_notification(&key, 1000).await;
    let received = receiver
        .wait_for("every notification", |received| stored_in_order(received, &subscription).len() >= expected.len())
        .await;
    assert_eq!(stored_in_order(&received, &subscription), expected);
    let refused = received.iter().find(|message| !message.stored).expect("the refused message");
    let again = received.iter().filter(|message| message.id == refused.id).count();
    assert_eq!(again, 2, "the refused message is posted again, with its id, once resumed");

    let _ = stop.send(());
    deliverer.await.expect("the deliverer stops");
}

#[tokio::test]
async fn of_two_replicas_one_delivers_each_subscription_and_a_stopped_one_is_taken_over() {
    let service = Service::start().await;
    let clock = Clock::manual();
    let (receiver, endpoint) = start_receiver(&service, Mode::Up).await;
    let mut subscriptions = Vec::new();
    for index in 0..3 {
        subscriptions.push(subscribe(&service, &format!("wh_replicas_{index}"), &endpoint).await);
    }
    let replica = |clock: &Clock| {
        let app = service.with_clock(clock.clone());
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        (
            stop,
            tokio::spawn(run(app, settings(), async move {
                let _ = stopped.await;
            })),
        )
    };
    let (stop_first, first) = replica(&clock);
    let (stop_second, second) = replica(&clock);
    let expected = service.every_notification(&subscriptions[0].1, 1000).await;
    for (subscription, _) in &subscriptions {
        let received = receiver
            .wait_for(subscription, |received| {
                let mine: Vec<Received> = received
                    .iter()
                    .filter(|message| message.body["subscription"] == subscription.as_str())
                    .cloned()
                    .collect();
                stored_in_order(&mine, subscription).len() >= expected.len()
            })
            .await;
        let mine: Vec<Received> =
            received.into_iter().filter(|message| message.body["subscription"] == subscription.as_str()).collect();
        assert_eq!(stored_in_order(&mine, subscription), expected);
        let ids: Vec<&String> = mine.iter().map(|message| &message.id).collect();
        let distinct: HashSet<&&String> = ids.iter().collect();
        assert_eq!(ids.len(), distinct.len(), "no message of {subscription} was posted twice: one replica delivers it");
    }
    // A replica that stops gives its leases up; the other takes them and
    // delivers what comes next. The feed is replayed into a new model
    // version, which every subscription is told about.
    let _ = stop_first.send(());
    first.await.expect("the first replica stops");
    let before = receiver.received().len();
    service.rebuild_into(read_model::ModelVersion(2)).await;
    for (subscription, _) in &subscriptions {
        receiver
            .wait_for("a gap", |received| {
                received[before..].iter().any(|message| {
                    message.body["subscription"] == subscription.as_str() && message.body["gap"].is_object()
                })
            })
            .await;
    }
    let _ = stop_second.send(());
    second.await.expect("the second replica stops");
}
